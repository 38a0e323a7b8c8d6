package pbjson

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrFallback is wrapped by every error of Decode: the input is outside the fast path
// (or not valid protobuf JSON at all); decode it with protojson, whose answer is the
// authoritative one.
var ErrFallback = errors.New("pbjson: outside the fast path, decode with protojson")

// maxDepth bounds the nesting of objects and arrays, known fields or skipped ones
// (protojson allows 10,000 levels of messages; anything deeper than this falls back).
const maxDepth = 100

// fallbackError says where and why Decode refused its input.
type fallbackError struct {
	pos int
	why string
}

func (e *fallbackError) Error() string {
	return fmt.Sprintf("%v: at byte %d: %s", ErrFallback, e.pos, e.why)
}

func (e *fallbackError) Unwrap() error { return ErrFallback }

// Decoder decodes the protobuf JSON of one message type (see the package doc). It is
// safe for concurrent use.
type Decoder struct {
	root    *msgTable
	ntables int
	pool    sync.Pool // of *state
	// eachElement allocates the elements of repeated message fields one by one instead
	// of one array per list (only for the benchmarks that compare the two layouts).
	eachElement bool
}

// NewDecoder compiles the field tables of the message type mt and of every message
// reachable from it. mt must be a generated Go message type (a pointer to a struct);
// fields of kinds the decoder does not cover are compiled as "fall back when present".
func NewDecoder(mt protoreflect.MessageType) (*Decoder, error) {
	goType := reflect.TypeOf(mt.Zero().Interface())
	if goType.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("pbjson: message %s: Go type %v is not a pointer to a generated struct", mt.Descriptor().FullName(), goType)
	}
	c := &compiler{tables: make(map[protoreflect.FullName]*msgTable)}
	root, err := c.compile(mt.Descriptor(), goType.Elem())
	if err != nil {
		return nil, fmt.Errorf("pbjson: %w", err)
	}
	d := &Decoder{root: root, ntables: len(c.list)}
	d.pool.New = func() any {
		return &state{scratch: make([]reflect.Value, d.ntables), arrays: make([]reflect.Value, d.ntables), busy: make([]bool, d.ntables)}
	}
	return d, nil
}

// Decode decodes data into a new message of the Decoder's type. An error (wrapping
// ErrFallback) means only that the input is outside the fast path: decode it with
// protojson.UnmarshalOptions{DiscardUnknown: true}, which gives the value or the error.
func (d *Decoder) Decode(data []byte) (proto.Message, error) {
	st := d.pool.Get().(*state)
	st.data, st.pos, st.depth, st.each = data, 0, 0, d.eachElement
	p := reflect.New(d.root.goType)
	st.ws()
	err := st.message(d.root, p.Elem())
	if err == nil {
		st.ws()
		if st.pos != len(data) {
			err = st.refuse("data after the top-level object")
		}
	}
	st.data = nil
	d.pool.Put(st)
	if err != nil {
		return nil, err
	}
	return p.Interface().(proto.Message), nil
}

// state is the scratch of one Decode call.
type state struct {
	data  []byte
	pos   int
	depth int
	each  bool // Decoder.eachElement
	// scratch[id] is an addressable []T of the message table id whose elements are
	// all zero between uses: the elements of a repeated field are decoded into it, then
	// copied to an exact-size array. busy[id] marks it in use (a message that repeats
	// itself further down decodes its inner lists element by element).
	scratch []reflect.Value
	busy    []bool
	// arrays[id] is an addressable []T header used to allocate the exact-size array.
	arrays []reflect.Value
	strs   []string // a stack for the elements of repeated strings
	buf    []byte   // unescaped strings
}

func (s *state) refuse(why string) error { return &fallbackError{pos: s.pos, why: why} }

// ws skips JSON whitespace.
func (s *state) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next returns the byte at the current position, or 0 at the end of the input.
func (s *state) next() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// literal consumes lit if the input continues with it. The caller's next structural
// check refuses a literal glued to more characters (nullx).
func (s *state) literal(lit string) bool {
	if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
		s.pos += len(lit)
		return true
	}
	return false
}

// enter counts one more level of nesting.
func (s *state) enter() error {
	s.depth++
	if s.depth > maxDepth {
		return s.refuse("nesting too deep")
	}
	return nil
}

// endOfItem consumes the separator after an object member or array element: it
// returns more if a ',' followed (and another item must come), or false after close.
func (s *state) endOfItem(close byte) (more bool, err error) {
	s.ws()
	switch s.next() {
	case ',':
		s.pos++
		s.ws()
		return true, nil
	case close:
		s.pos++
		return false, nil
	}
	return false, s.refuse("expected ',' or '" + string(close) + "'")
}

// open consumes c (an opening bracket) and the whitespace after it; empty reports that
// the matching close followed at once (and was consumed).
func (s *state) open(c, close byte, what string) (empty bool, err error) {
	if s.next() != c {
		return false, s.refuse("expected " + what)
	}
	s.pos++
	s.ws()
	if s.next() == close {
		s.pos++
		return true, nil
	}
	return false, nil
}

// message decodes an object into sv, an addressable value of t's Go struct.
func (s *state) message(t *msgTable, sv reflect.Value) error {
	if t.unsupported {
		return s.refuse(t.why)
	}
	if err := s.enter(); err != nil {
		return err
	}
	empty, err := s.open('{', '}', "an object")
	if err != nil || empty {
		s.depth--
		return err
	}
	var seen uint64
	for more := true; more; {
		name, err := s.name()
		if err != nil {
			return err
		}
		idx, known := t.byName[string(name)]
		switch {
		case known:
			bit := uint64(1) << idx
			if seen&bit != 0 {
				return s.refuse("duplicate field " + string(name))
			}
			seen |= bit
			err = s.field(&t.fields[idx], sv)
		case len(name) >= 2 && name[0] == '[' && name[len(name)-1] == ']':
			return s.refuse("extension field name " + string(name))
		default:
			err = s.skip()
		}
		if err != nil {
			return err
		}
		if more, err = s.endOfItem('}'); err != nil {
			return err
		}
	}
	s.depth--
	return nil
}

// name reads a member name and the ':' after it. The bytes returned are valid until the
// next string is read.
func (s *state) name() ([]byte, error) {
	if s.next() != '"' {
		return nil, s.refuse("expected a member name")
	}
	name, err := s.stringBytes()
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.next() != ':' {
		return nil, s.refuse("expected ':'")
	}
	s.pos++
	s.ws()
	return name, nil
}

// field decodes the value of field f into sv.
func (s *state) field(f *field, sv reflect.Value) error {
	if f.kind == kUnsupported {
		return s.refuse(f.why)
	}
	if f.msg != nil && f.msg.unsupported {
		return s.refuse(f.msg.why)
	}
	// protojson skips null for every field the tables cover (only google.protobuf.Value
	// and NullValue take it as a value, and those are unsupported).
	if s.literal("null") {
		return nil
	}
	fv := sv.Field(f.goIndex)
	switch f.kind {
	case kString:
		str, err := s.str()
		if err != nil {
			return err
		}
		fv.SetString(str)
	case kListString:
		return s.listString(fv)
	case kListMessage:
		return s.listMessage(f.msg, fv)
	case kMessage:
		if s.next() != '{' {
			return s.refuse("expected an object for " + string(f.fd.FullName()))
		}
		p := reflect.New(f.msg.goType)
		fv.Set(p)
		return s.message(f.msg, p.Elem())
	case kMapStringString:
		return s.mapStringString(fv)
	default:
		return s.scalar(f, fv)
	}
	return nil
}

// scalar decodes a bool, integer or enum field f into fv. An enum name the schema does
// not know leaves fv unset, as protojson does with DiscardUnknown.
func (s *state) scalar(f *field, fv reflect.Value) error {
	switch k := f.kind; k {
	case kBool:
		switch {
		case s.literal("true"):
			fv.SetBool(true)
		case s.literal("false"):
			fv.SetBool(false)
		default:
			return s.refuse("expected true or false for " + string(f.fd.FullName()))
		}
	case kInt32, kInt64:
		v, err := s.integer(k == kInt32, true)
		if err != nil {
			return err
		}
		fv.SetInt(v)
	case kUint32:
		v, err := s.integer(true, false)
		if err != nil {
			return err
		}
		fv.SetUint(uint64(v))
	case kEnum:
		if s.next() == '"' {
			name, err := s.stringBytes()
			if err != nil {
				return err
			}
			if n, ok := f.enum[string(name)]; ok {
				fv.SetInt(int64(n))
			}
			return nil
		}
		// A number, taken as is (open enum); quoted numbers are names for protojson.
		neg, mag, err := s.bareDigits()
		if err != nil {
			return err
		}
		v, ok := toInt(neg, mag, true, true)
		if !ok {
			return s.refuse("enum number out of the int32 range")
		}
		fv.SetInt(v)
	default:
		return s.refuse("unexpected field kind")
	}
	return nil
}

// integer reads an integer, bare or quoted, of the form -?(0|[1-9][0-9]*), in the range of
// a signed 32-bit or 64-bit field, or of an unsigned 32-bit one.
func (s *state) integer(bits32, signed bool) (int64, error) {
	var neg bool
	var mag uint64
	if s.next() == '"' {
		b, err := s.stringBytes()
		if err != nil {
			return 0, err
		}
		var n int
		var ok bool
		neg, mag, n, ok = parseDigits(b)
		if !ok || n != len(b) {
			return 0, s.refuse("quoted integer not of the form -?(0|[1-9][0-9]*)")
		}
	} else {
		var err error
		if neg, mag, err = s.bareDigits(); err != nil {
			return 0, err
		}
	}
	v, ok := toInt(neg, mag, bits32, signed)
	if !ok {
		return 0, s.refuse("integer out of the range of the field")
	}
	return v, nil
}

// bareDigits reads an unquoted integer of the form -?(0|[1-9][0-9]*); what follows is
// left to the caller's structural check (so 1.5 or 1e3 are refused there).
func (s *state) bareDigits() (neg bool, mag uint64, err error) {
	neg, mag, n, ok := parseDigits(s.data[s.pos:])
	if !ok {
		return false, 0, s.refuse("number not of the form -?(0|[1-9][0-9]*)")
	}
	s.pos += n
	return neg, mag, nil
}

// parseDigits parses -?(0|[1-9][0-9]*) at the start of b; n is its length. ok is false
// if b does not start with one or its magnitude overflows a uint64.
func parseDigits(b []byte) (neg bool, mag uint64, n int, ok bool) {
	if n < len(b) && b[n] == '-' {
		neg = true
		n++
	}
	switch {
	case n >= len(b):
		return false, 0, 0, false
	case b[n] == '0':
		n++
		if n < len(b) && b[n] >= '0' && b[n] <= '9' {
			return false, 0, 0, false // leading zero
		}
		return neg, 0, n, true
	case b[n] < '1' || b[n] > '9':
		return false, 0, 0, false
	}
	for ; n < len(b) && b[n] >= '0' && b[n] <= '9'; n++ {
		d := uint64(b[n] - '0')
		if mag > (math.MaxUint64-d)/10 {
			return false, 0, 0, false
		}
		mag = mag*10 + d
	}
	return neg, mag, n, true
}

// toInt checks a sign and magnitude against the range of a field. -0 is 0, also for
// unsigned fields (protojson takes it).
func toInt(neg bool, mag uint64, bits32, signed bool) (int64, bool) {
	switch {
	case !signed && neg:
		return 0, mag == 0
	case !signed:
		return int64(mag), bits32 && mag <= math.MaxUint32
	}
	limit := uint64(math.MaxInt64)
	if bits32 {
		limit = math.MaxInt32
	}
	if neg {
		return -int64(mag), mag <= limit+1
	}
	return int64(mag), mag <= limit
}

// str reads a string value and returns it as a new string.
func (s *state) str() (string, error) {
	if s.next() != '"' {
		return "", s.refuse("expected a string")
	}
	b, err := s.stringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// stringBytes reads a JSON string (at its opening quote) and returns its content,
// unescaped; the bytes are valid until the next string is read.
func (s *state) stringBytes() ([]byte, error) {
	start := s.pos + 1
	escaped, high := false, false
	for i := start; i < len(s.data); i++ {
		c := s.data[i]
		switch {
		case c == '"':
			raw := s.data[start:i]
			s.pos = i + 1
			if high && !utf8.Valid(raw) {
				s.pos = start
				return nil, s.refuse("invalid UTF-8 in a string")
			}
			if escaped {
				return s.unescape(raw, start)
			}
			return raw, nil
		case c == '\\':
			escaped = true
			i++ // the escaped byte cannot end the string; unescape checks it
		case c < ' ':
			s.pos = i
			return nil, s.refuse("control character in a string")
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	return nil, s.refuse("unterminated string")
}

// unescape decodes the escapes of raw (a string's content starting at offset start)
// into s.buf, refusing any escape protojson would not take.
func (s *state) unescape(raw []byte, start int) ([]byte, error) {
	buf := s.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return nil, s.refuseAt(start+i, "bad escape")
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return nil, s.refuseAt(start+i, "bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				lo, ok := rune(0), false
				if len(raw) >= i+12 && raw[i+6] == '\\' && raw[i+7] == 'u' {
					lo, ok = hex4(raw[i+8:])
				}
				if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
					return nil, s.refuseAt(start+i, "bad surrogate pair")
				}
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
			i += 4
		default:
			return nil, s.refuseAt(start+i, "bad escape")
		}
		i += 2
	}
	s.buf = buf
	return buf, nil
}

func (s *state) refuseAt(pos int, why string) error {
	s.pos = pos
	return s.refuse(why)
}

// hex4 parses the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// listString decodes an array of strings into fv ([]string), allocated at its size.
func (s *state) listString(fv reflect.Value) error {
	empty, err := s.open('[', ']', "an array")
	if err != nil || empty {
		return err
	}
	base := len(s.strs)
	defer func() {
		clear(s.strs[base:])
		s.strs = s.strs[:base]
	}()
	for more := true; more; {
		str, err := s.str()
		if err != nil {
			return err
		}
		s.strs = append(s.strs, str)
		if more, err = s.endOfItem(']'); err != nil {
			return err
		}
	}
	out := make([]string, len(s.strs)-base)
	copy(out, s.strs[base:])
	*(fv.Addr().Interface().(*[]string)) = out
	return nil
}

// listMessage decodes an array of objects of table t into fv ([]*T): the elements are
// decoded into the scratch list of t, then copied to one array of exactly their number
// that the pointers of fv point into.
func (s *state) listMessage(t *msgTable, fv reflect.Value) error {
	empty, err := s.open('[', ']', "an array")
	if err != nil || empty {
		return err
	}
	if t.unsupported {
		return s.refuse(t.why)
	}
	if s.busy[t.id] || s.each {
		return s.listMessageEach(t, fv)
	}
	s.busy[t.id] = true
	sc := s.scratch[t.id]
	if !sc.IsValid() {
		sc = reflect.New(t.sliceOf).Elem()
		s.scratch[t.id] = sc
	}
	n, dirty := 0, 0
	defer func() {
		// reflect's Slice would allocate a header; zero the elements one by one.
		for i := range dirty {
			sc.Index(i).SetZero()
		}
		s.busy[t.id] = false
	}()
	for more := true; more; n++ {
		if n == sc.Len() {
			sc.Grow(max(4, n))
			sc.SetLen(sc.Cap())
		}
		dirty = n + 1
		if s.next() != '{' {
			return s.refuse("expected an object for " + string(t.name))
		}
		if err := s.message(t, sc.Index(n)); err != nil {
			return err
		}
		if more, err = s.endOfItem(']'); err != nil {
			return err
		}
	}
	arr := s.arrays[t.id]
	if !arr.IsValid() {
		arr = reflect.New(t.sliceOf).Elem()
		s.arrays[t.id] = arr
	}
	arr.Grow(n)
	arr.SetLen(n)
	fv.Grow(n)
	fv.SetLen(n)
	for i := range n {
		e := arr.Index(i)
		e.Set(sc.Index(i))
		fv.Index(i).Set(e.Addr())
	}
	arr.SetZero()
	return nil
}

// listMessageEach decodes an array of objects into fv allocating each element on its
// own (a message nested in a list of its own type).
func (s *state) listMessageEach(t *msgTable, fv reflect.Value) error {
	for more := true; more; {
		if s.next() != '{' {
			return s.refuse("expected an object for " + string(t.name))
		}
		p := reflect.New(t.goType)
		if err := s.message(t, p.Elem()); err != nil {
			return err
		}
		n := fv.Len()
		if n == fv.Cap() {
			fv.Grow(1)
		}
		fv.SetLen(n + 1)
		fv.Index(n).Set(p)
		var err error
		if more, err = s.endOfItem(']'); err != nil {
			return err
		}
	}
	return nil
}

// mapStringString decodes an object of strings into fv (map[string]string).
func (s *state) mapStringString(fv reflect.Value) error {
	if s.next() != '{' {
		return s.refuse("expected an object for a map")
	}
	m := make(map[string]string)
	*(fv.Addr().Interface().(*map[string]string)) = m
	empty, err := s.open('{', '}', "an object")
	if err != nil || empty {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	for more := true; more; {
		key, err := s.name()
		if err != nil {
			return err
		}
		k := string(key)
		if _, dup := m[k]; dup {
			return s.refuse("duplicate map key")
		}
		v, err := s.str()
		if err != nil {
			return err
		}
		m[k] = v
		if more, err = s.endOfItem('}'); err != nil {
			return err
		}
	}
	s.depth--
	return nil
}

// skip checks that a value is valid JSON (RFC 8259) and moves past it.
func (s *state) skip() error {
	switch c := s.next(); {
	case c == '{' || c == '[':
		return s.skipContainer(c)
	case c == '"':
		_, err := s.stringBytes()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.skipNumber()
	case s.literal("true"), s.literal("false"), s.literal("null"):
		return nil
	}
	return s.refuse("invalid value")
}

// skipContainer skips an object or an array.
func (s *state) skipContainer(c byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	close := byte('}')
	if c == '[' {
		close = ']'
	}
	empty, err := s.open(c, close, "a container")
	if err != nil || empty {
		s.depth--
		return err
	}
	for more := true; more; {
		if c == '{' {
			if _, err := s.name(); err != nil {
				return err
			}
		}
		if err := s.skip(); err != nil {
			return err
		}
		if more, err = s.endOfItem(close); err != nil {
			return err
		}
	}
	s.depth--
	return nil
}

// skipNumber skips a number of the RFC 8259 grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *state) skipNumber() error {
	_, _, n, ok := parseDigits(s.data[s.pos:])
	if !ok {
		// parseDigits also fails on overflow; the grammar has no limit.
		n = s.pos
		if s.next() == '-' {
			n++
		}
		if n >= len(s.data) || s.data[n] < '1' || s.data[n] > '9' {
			return s.refuse("invalid number")
		}
		for n < len(s.data) && s.data[n] >= '0' && s.data[n] <= '9' {
			n++
		}
		n -= s.pos
	}
	i := s.pos + n
	digits := func() bool {
		from := i
		for i < len(s.data) && s.data[i] >= '0' && s.data[i] <= '9' {
			i++
		}
		return i > from
	}
	if i < len(s.data) && s.data[i] == '.' {
		i++
		if !digits() {
			s.pos = i
			return s.refuse("invalid number")
		}
	}
	if i < len(s.data) && (s.data[i] == 'e' || s.data[i] == 'E') {
		i++
		if i < len(s.data) && (s.data[i] == '+' || s.data[i] == '-') {
			i++
		}
		if !digits() {
			s.pos = i
			return s.refuse("invalid number")
		}
	}
	s.pos = i
	return nil
}
