package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TxnType tells where a transaction came from.
type TxnType int

const (
	// NBTransaction was committed by a plugin through Txn.Commit.
	NBTransaction TxnType = iota
	// SBNotification applies values pushed by PushSBNotification.
	SBNotification
	// RetryFailedOps retries the failed operations of an earlier transaction.
	RetryFailedOps
)

var txnTypeNames = [...]string{"NB", "SB", "RETRY"}

// String returns NB, SB or RETRY.
func (t TxnType) String() string {
	if t < 0 || int(t) >= len(txnTypeNames) {
		return "TxnType(" + itoa(int(t)) + ")"
	}
	return txnTypeNames[t]
}

// MarshalText encodes the type by name (used by encoding/json).
func (t TxnType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// RecordedTxn is the history record of one executed transaction.
type RecordedTxn struct {
	// SeqNum orders transactions; it is what Commit returned.
	SeqNum uint64 `json:"seqNum"`
	// TxnType tells where the transaction came from.
	TxnType TxnType `json:"txnType"`
	// ResyncType is NotResync for ordinary transactions.
	ResyncType ResyncType `json:"resyncType"`
	// Description is the text given by WithDescription (for retries: which txn).
	Description string `json:"description,omitempty"`
	// Retry is the retry policy (nil without WithRetry).
	Retry *RetryOpt `json:"retry,omitempty"`
	// WithRevert tells whether the transaction was all-or-nothing.
	WithRevert bool `json:"withRevert,omitempty"`
	// Start and Stop bracket the execution (queueing time excluded).
	Start time.Time `json:"start"`
	Stop  time.Time `json:"stop"`
	// ValueCount is the number of values the transaction carried.
	ValueCount int `json:"valueCount"`
	// Values are the values the transaction carried. For a resync they are recorded
	// only when it was committed verbose; otherwise only ValueCount is.
	Values []RecordedKVPair `json:"values,omitempty"`
	// Planned are the operations the simulation predicted (only when transaction
	// simulation is enabled in the configuration).
	Planned []RecordedOp `json:"planned,omitempty"`
	// Executed are the operations actually run, in order, including failed ones.
	Executed []RecordedOp `json:"executed,omitempty"`
	// Error is the transaction error, "" on success.
	Error string `json:"error,omitempty"`
	// OmittedValues, OmittedPlanned and OmittedExecuted count the entries left out of
	// Values, Planned and Executed by Bound (the history keeps a bounded record of a
	// transaction of 100k values, not copies of them all).
	OmittedValues   int `json:"omittedValues,omitempty"`
	OmittedPlanned  int `json:"omittedPlanned,omitempty"`
	OmittedExecuted int `json:"omittedExecuted,omitempty"`
	// OmittedContents counts the operations kept without their values (Value and
	// PrevValue) because the record had reached RecordContentBudget.
	OmittedContents int `json:"omittedContents,omitempty"`

	// contentBytes is the encoded size of the values kept, as Bound computed it
	// (contentKnown), so that ApproxSize need not compute it again.
	contentBytes int
	contentKnown bool
}

// RecordContentBudget is about how many bytes of memory the protobuf values one
// recorded transaction keeps may take (estimated as ValueMemoryFactor times their
// encoded size). Past it, further values are omitted and further operations keep
// their key, operation and error but not their values: a node joining a cluster with
// 1,000 NodePort Services updates 1,000 DNATs of about 100 mappings each, and a record
// of all their contents would be hundreds of MB of JSON for whoever reads the history,
// and would keep every previous value alive.
const RecordContentBudget = 4 << 20

// ValueMemoryFactor is how many bytes of heap a protobuf value takes per byte of its
// encoded size, for the memory estimates of records: a DNat44 of short strings and
// small integers, the bulk of what a node's records hold, takes 5.9-6.3 times its
// encoded size (one Go struct and string header per local IP). A history bounded by
// encoded size would hold six times its bound; values of long strings are
// overestimated, which only makes the bound stricter.
const ValueMemoryFactor = 6

// Bound keeps at most max entries of each list (Values, Planned, Executed), counting
// the others in the Omitted fields. Executed keeps its first max operations and, after
// them, up to max failed ones, so the errors of a large transaction stay visible. The
// kept entries are copied, so the long lists can be garbage collected. max <= 0 keeps
// every entry. Then the values are bounded by RecordContentBudget (boundContents).
func (t *RecordedTxn) Bound(max int) { t.BoundSized(max, nil, nil) }

// BoundSized is Bound taking the encoded size of a value from known when it reports one
// (the scheduler knows the size of a value it sized when the value was applied: the
// previous value of an update, which sizing again would walk a DNAT of 100 mappings)
// instead of computing it; computed is told the size of every value Bound sized
// itself. Either may be nil.
func (t *RecordedTxn) BoundSized(max int, known func(proto.Message) (int, bool), computed func(proto.Message, int)) {
	t.boundCount(max)
	t.boundContents(RecordContentBudget, known, computed)
}

// boundContents keeps values while their estimated memory (ValueMemoryFactor times
// their encoded size) adds up to at most budget:
// later Values are omitted, later Planned and Executed operations lose Value and
// PrevValue (counted in OmittedContents). Errors and keys are always kept. Sizes are
// computed only until the budget is reached, so bounding a transaction of 1,000 large
// values costs the values kept, not all of them.
func (t *RecordedTxn) boundContents(budget int, known func(proto.Message) (int, bool), computed func(proto.Message, int)) {
	used := 0 // encoded bytes kept; the budget is for ValueMemoryFactor times as much
	budget /= ValueMemoryFactor
	sized := recentlySized{known: known, computed: computed}
	for i, v := range t.Values {
		size := sized.size(v.Value)
		if used+size > budget {
			t.OmittedValues += len(t.Values) - i
			t.Values = append([]RecordedKVPair(nil), t.Values[:i]...)
			break
		}
		used += size
	}
	full := false
	for _, ops := range [][]RecordedOp{t.Planned, t.Executed} {
		for i := range ops {
			op := &ops[i]
			if op.Value == nil && op.PrevValue == nil {
				continue
			}
			if !full {
				size := sized.size(op.Value) + sized.size(op.PrevValue)
				if used+size <= budget {
					used += size
					continue
				}
				full = true
			}
			op.Value, op.PrevValue = nil, nil
			t.OmittedContents++
		}
	}
	t.contentBytes, t.contentKnown = used, true
}

func (t *RecordedTxn) boundCount(max int) {
	if max <= 0 {
		return
	}
	if n := len(t.Values); n > max {
		t.Values = append(make([]RecordedKVPair, 0, max), t.Values[:max]...)
		t.OmittedValues += n - max
	}
	if n := len(t.Planned); n > max {
		t.Planned = append(make([]RecordedOp, 0, max), t.Planned[:max]...)
		t.OmittedPlanned += n - max
	}
	if n := len(t.Executed); n > max {
		var failed []RecordedOp
		for _, op := range t.Executed[max:] {
			if op.Error != "" && len(failed) < max {
				failed = append(failed, op)
			}
		}
		kept := make([]RecordedOp, 0, max+len(failed))
		kept = append(append(kept, t.Executed[:max]...), failed...)
		t.OmittedExecuted += n - len(kept)
		t.Executed = kept
	}
}

// recordOverhead is the approximate size of a record, an op or a value without their
// strings and protobuf contents.
const recordOverhead = 256

// ApproxSize estimates the size of the record, in bytes: the strings and the encoded
// size of every protobuf value (a value listed several times in a row, as the value
// carried and the value of its operation, counted once), plus a fixed overhead per entry. It is a cost
// estimate, not an exact figure; the heap the record keeps alive is ApproxMemory.
//
// Cost: after Bound, O(entries) without encoding any value (Bound has summed the sizes
// of the values it kept); before, the values are sized.
func (t *RecordedTxn) ApproxSize() int {
	size, content := t.approx()
	return size + content
}

// ApproxMemory estimates the heap the record keeps alive, in bytes: ApproxSize with
// ValueMemoryFactor times the encoded size of the values (which a record may be the
// last to refer to: the previous value of an update). Histories bound by it hold about
// what they are given, not six times as much. Cost: that of ApproxSize.
func (t *RecordedTxn) ApproxMemory() int {
	size, content := t.approx()
	return size + ValueMemoryFactor*content
}

// approx returns the size of the record without its values and the encoded size of
// the values.
func (t *RecordedTxn) approx() (size, content int) {
	size = recordOverhead + len(t.Description) + len(t.Error)
	var sized recentlySized
	for _, v := range t.Values {
		size += recordOverhead/4 + len(v.Key)
		if !t.contentKnown {
			content += sized.size(v.Value)
		}
	}
	for _, ops := range [][]RecordedOp{t.Planned, t.Executed} {
		for _, op := range ops {
			size += recordOverhead/2 + len(op.Key) + len(op.Error)
			if !t.contentKnown {
				content += sized.size(op.Value) + sized.size(op.PrevValue)
			}
		}
	}
	if t.contentKnown {
		content = t.contentBytes
	}
	return size, content
}

// recentlySized remembers the last few values it sized, so that a value a record lists
// more than once (the value a transaction carried is also the Value of its operation,
// and the PrevValue of the next operation on the key) is counted once: it is one object
// in memory, and sizing a DNAT of 100 mappings walks a thousand messages.
type recentlySized struct {
	msgs  [4]proto.Message
	sizes [4]int
	next  int
	// known gives the sizes known beforehand (nil: none); computed is told the sizes
	// computed (nil: nobody).
	known    func(proto.Message) (int, bool)
	computed func(proto.Message, int)
}

// size returns the encoded size of m the first time it sees m (among the last few),
// 0 after that.
func (r *recentlySized) size(m proto.Message) int {
	if m == nil {
		return 0
	}
	for _, o := range r.msgs {
		if o == m {
			return 0
		}
	}
	size, ok := 0, false
	if r.known != nil {
		size, ok = r.known(m)
	}
	if !ok {
		// A message sized before is not walked again (its size cache): staged values
		// are not modified, and a new value shares most of its messages with the value
		// it replaces (a node port's set of translations gaining one node's), so that
		// sizing it costs what changed. A value modified in place after it was sized
		// would be misjudged; the sizes are estimates for bounding records.
		size = proto.MarshalOptions{UseCachedSize: true}.Size(m)
		if r.computed != nil {
			r.computed(m, size)
		}
	}
	r.msgs[r.next], r.sizes[r.next] = m, size
	r.next = (r.next + 1) % len(r.msgs)
	return size
}

func protoSize(m proto.Message) int {
	if m == nil {
		return 0
	}
	return proto.Size(m)
}

// RecordedKVPair is one value carried by a recorded transaction.
type RecordedKVPair struct {
	// Key identifies the value.
	Key string
	// Value is the content; nil for a deletion.
	Value proto.Message
	// Origin is FromNB for NB transactions and FromSB for notifications.
	Origin ValueOrigin
}

// RecordedOp is one operation executed (or planned) by a transaction.
type RecordedOp struct {
	// Key identifies the value.
	Key string
	// Operation is what was done.
	Operation TxnOperation
	// Value is the value applied (nil for a delete).
	Value proto.Message
	// PrevValue is the value in place before (nil for a create).
	PrevValue proto.Message
	// PrevState and NewState are the value state before and after.
	PrevState ValueState
	NewState  ValueState
	// Error is the error of a failed operation, "" on success.
	Error string
	// IsRetry marks operations of a RetryFailedOps transaction.
	IsRetry bool
	// IsRevert marks operations that undo a failed transaction.
	IsRevert bool
	// IsDerived marks operations on derived values.
	IsDerived bool
	// Duration is the time spent in the descriptor's callbacks for the operation (for
	// an operation run together with others, the time to start it plus the time
	// waited for it, which overlaps the others); 0 when no callback ran.
	Duration time.Duration
}

// MarshalJSON encodes the value with protojson.
func (p RecordedKVPair) MarshalJSON() ([]byte, error) {
	v, err := MarshalProtoJSON(p.Value)
	if err != nil {
		return nil, fmt.Errorf("value of %s: %w", p.Key, err)
	}
	return json.Marshal(struct {
		Key    string          `json:"key"`
		Value  json.RawMessage `json:"value,omitempty"`
		Origin ValueOrigin     `json:"origin"`
	}{p.Key, v, p.Origin})
}

// MarshalJSON encodes the values with protojson.
func (o RecordedOp) MarshalJSON() ([]byte, error) {
	v, err := MarshalProtoJSON(o.Value)
	if err != nil {
		return nil, fmt.Errorf("value of %s: %w", o.Key, err)
	}
	pv, err := MarshalProtoJSON(o.PrevValue)
	if err != nil {
		return nil, fmt.Errorf("previous value of %s: %w", o.Key, err)
	}
	return json.Marshal(struct {
		Key       string          `json:"key"`
		Operation TxnOperation    `json:"operation"`
		Value     json.RawMessage `json:"value,omitempty"`
		PrevValue json.RawMessage `json:"prevValue,omitempty"`
		PrevState ValueState      `json:"prevState"`
		NewState  ValueState      `json:"newState"`
		Error     string          `json:"error,omitempty"`
		IsRetry   bool            `json:"isRetry,omitempty"`
		IsRevert  bool            `json:"isRevert,omitempty"`
		IsDerived bool            `json:"isDerived,omitempty"`
		Duration  string          `json:"duration,omitempty"`
	}{o.Key, o.Operation, v, pv, o.PrevState, o.NewState, o.Error, o.IsRetry, o.IsRevert, o.IsDerived, durationText(o.Duration)})
}

// MarshalProtoJSON encodes m with protojson; a nil message gives nil (no JSON).
func MarshalProtoJSON(m proto.Message) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	return protojson.Marshal(m)
}

// String renders the record for logs, one line per value and operation:
//
//	txn #7 NB resync=FULL "pod added" [revert] 2024-05-01T10:00:00.000Z took 1.2ms
//	  values (2):
//	    config/vpp/v2/interfaces/tap1 = name:"tap1"
//	  executed (1):
//	    1. CREATE config/vpp/v2/interfaces/tap1 PENDING -> CONFIGURED
func (t *RecordedTxn) String() string { return t.Summary(0) }

// summaryValueBytes bounds the text of one value in a limited Summary: a value that lists
// every pod interface (the NAT44 global configuration) would otherwise put kilobytes
// into the log for every pod.
const summaryValueBytes = 512

// Summary is String with at most limit lines per list (values, planned, executed), the
// rest counted, and values longer than summaryValueBytes cut: a resync of 10k values
// logs a readable summary instead of 20k lines. limit <= 0 means no limit.
func (t *RecordedTxn) Summary(limit int) string {
	var b strings.Builder
	// (the common lines are written without fmt: a summary is logged for every
	// transaction at the info level)
	b.WriteString("txn #")
	b.WriteString(strconv.FormatUint(t.SeqNum, 10))
	b.WriteByte(' ')
	b.WriteString(t.TxnType.String())
	if t.ResyncType != NotResync {
		fmt.Fprintf(&b, " resync=%s", t.ResyncType)
	}
	if t.Description != "" {
		fmt.Fprintf(&b, " %q", t.Description)
	}
	if t.Retry != nil {
		fmt.Fprintf(&b, " [retry %v x%d", t.Retry.Period, t.Retry.MaxCount)
		if t.Retry.ExpBackoff {
			b.WriteString(" exp")
		}
		b.WriteString("]")
	}
	if t.WithRevert {
		b.WriteString(" [revert]")
	}
	var buf [64]byte
	b.WriteByte(' ')
	b.Write(t.Start.AppendFormat(buf[:0], "2006-01-02T15:04:05.000Z07:00"))
	b.WriteString(" took ")
	b.WriteString(t.Stop.Sub(t.Start).String())
	b.WriteByte('\n')
	if len(t.Values) > 0 {
		b.WriteString("  values (")
		b.WriteString(strconv.Itoa(len(t.Values)))
		b.WriteString("):\n")
		for i, v := range t.Values {
			if limit > 0 && i == limit {
				fmt.Fprintf(&b, "    ... and %d more\n", len(t.Values)-limit)
				break
			}
			if v.Value == nil {
				fmt.Fprintf(&b, "    %s = <delete>\n", v.Key)
				continue
			}
			var text string
			if limit > 0 {
				text = compactPrefix(v.Value, summaryValueBytes+1)
			} else {
				text = compact(v.Value)
			}
			if limit > 0 && len(text) > summaryValueBytes {
				cut := summaryValueBytes
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut--
				}
				text = fmt.Sprintf("%s ... (more: GET /scheduler/txn-history?seq-num=%d)", text[:cut], t.SeqNum)
			}
			b.WriteString("    ")
			b.WriteString(v.Key)
			b.WriteString(" = ")
			b.WriteString(text)
			b.WriteByte('\n')
		}
	} else if t.ValueCount > 0 {
		fmt.Fprintf(&b, "  values: %d (not recorded)\n", t.ValueCount)
	}
	writeOps(&b, "planned", t.Planned, limit)
	writeOps(&b, "executed", t.Executed, limit)
	if t.OmittedValues+t.OmittedPlanned+t.OmittedExecuted > 0 {
		fmt.Fprintf(&b, "  not recorded: %d values, %d planned, %d executed operations\n",
			t.OmittedValues, t.OmittedPlanned, t.OmittedExecuted)
	}
	if t.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", t.Error)
	}
	return b.String()
}

func writeOps(b *strings.Builder, title string, ops []RecordedOp, limit int) {
	if len(ops) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s (%d):\n", title, len(ops))
	for i, op := range ops {
		if limit > 0 && i == limit {
			fmt.Fprintf(b, "    ... and %d more\n", len(ops)-limit)
			return
		}
		b.WriteString("    ")
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". ")
		b.WriteString(op.Operation.String())
		b.WriteByte(' ')
		b.WriteString(op.Key)
		b.WriteByte(' ')
		b.WriteString(op.PrevState.String())
		b.WriteString(" -> ")
		b.WriteString(op.NewState.String())
		var flags []string
		if op.IsDerived {
			flags = append(flags, "derived")
		}
		if op.IsRetry {
			flags = append(flags, "retry")
		}
		if op.IsRevert {
			flags = append(flags, "revert")
		}
		if len(flags) > 0 {
			fmt.Fprintf(b, " [%s]", strings.Join(flags, ","))
		}
		if op.Duration > 0 {
			b.WriteString(" (")
			b.WriteString(durationText(op.Duration))
			b.WriteByte(')')
		}
		if op.Error != "" {
			fmt.Fprintf(b, " error: %s", op.Error)
		}
		b.WriteByte('\n')
	}
}

// durationText renders an operation's duration to the microsecond (or in nanoseconds
// below one), "" for none.
func durationText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	if d < time.Microsecond {
		return d.String()
	}
	return d.Round(time.Microsecond).String()
}

// compact renders a message on one line.
func compact(m proto.Message) string {
	s := fmt.Sprint(m)
	return strings.Join(strings.Fields(s), " ")
}

// compactPrefix is compact(m) when that is at most max bytes long, otherwise a text
// longer than max that compact(m) starts with (or, for a value of a type that writes
// itself, at least its first max bytes): a summary shows the beginning of a large value
// (a DNAT of 100 mappings, 30 kB of text) without formatting all of it.
//
// A proto3 message of strings of printable ASCII, integers, booleans, enums and
// messages (the values of this agent) is written directly, in the text compact
// writes: formatting with prototext and normalizing its spaces cost 4 times as much,
// and a summary is logged for every transaction at the info level.
func compactPrefix(m proto.Message, max int) string {
	w := &prefixWriter{max: max, exact: true}
	if w.message(m.ProtoReflect()); !w.unsupported {
		return w.b.String()
	}
	if protoSize(m) <= max/2 {
		return compact(m) // small: the text is short anyway
	}
	w = &prefixWriter{max: max}
	w.message(m.ProtoReflect())
	return w.b.String()
}

// prefixWriter writes a message in the one-line text form of compact until it has
// written more than max bytes. In exact mode it writes exactly what compact writes, or
// stops at the first thing it cannot write that way (unsupported): a message other than
// proto3 (extensions), unknown fields, maps, Any, floating point numbers, bytes, and
// strings that are not printable ASCII or hold two spaces in a row (compact joins them).
type prefixWriter struct {
	b           strings.Builder
	max         int
	exact       bool
	unsupported bool
}

func (w *prefixWriter) full() bool { return w.b.Len() > w.max || w.unsupported }

func (w *prefixWriter) sep() {
	if w.b.Len() > 0 {
		if last := w.b.String()[w.b.Len()-1]; last != '{' {
			w.b.WriteByte(' ')
		}
	}
}

func (w *prefixWriter) message(m protoreflect.Message) {
	desc := m.Descriptor()
	if w.exact && (desc.Syntax() != protoreflect.Proto3 || len(m.GetUnknown()) > 0 || desc.FullName() == "google.protobuf.Any") {
		w.unsupported = true
		return
	}
	fields := desc.Fields()
	for i := 0; i < fields.Len() && !w.full(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len() && !w.full(); j++ {
				w.field(fd, l.Get(j))
			}
		case fd.IsMap():
			if w.exact {
				w.unsupported = true
				return
			}
			w.sep()
			w.b.WriteString(string(fd.Name()) + ":{...}")
		default:
			w.field(fd, v)
		}
	}
}

func (w *prefixWriter) field(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	w.sep()
	w.b.WriteString(string(fd.Name()))
	w.b.WriteByte(':')
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		w.b.WriteByte('{')
		if w.message(v.Message()); !w.full() {
			w.b.WriteByte('}')
		}
	case protoreflect.StringKind:
		str := v.String()
		if !plainASCII(str) {
			if w.exact {
				w.unsupported = true
				return
			}
			w.b.WriteString(strconv.Quote(str))
			return
		}
		// printable ASCII: quoted as strconv.Quote and prototext quote it, without
		// building the quoted string
		w.b.WriteByte('"')
		for i := 0; i < len(str); i++ {
			if c := str[i]; c == '"' || c == '\\' {
				w.b.WriteByte('\\')
			}
			w.b.WriteByte(str[i])
		}
		w.b.WriteByte('"')
	case protoreflect.BytesKind:
		if w.exact {
			w.unsupported = true
			return
		}
		w.b.WriteString(strconv.Quote(string(v.Bytes())))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			w.b.WriteString(string(ev.Name()))
		} else {
			w.b.WriteString(strconv.Itoa(int(v.Enum())))
		}
	case protoreflect.BoolKind:
		w.b.WriteString(strconv.FormatBool(v.Bool()))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		var buf [24]byte
		w.b.Write(strconv.AppendInt(buf[:0], v.Int(), 10))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		var buf [24]byte
		w.b.Write(strconv.AppendUint(buf[:0], v.Uint(), 10))
	default:
		if w.exact {
			w.unsupported = true
			return
		}
		w.b.WriteString(v.String())
	}
}

// plainASCII tells whether s is printable ASCII without two spaces in a row: quoted
// alike by prototext and strconv.Quote, and left alone by compact.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || (c == ' ' && i > 0 && s[i-1] == ' ') {
			return false
		}
	}
	return true
}
