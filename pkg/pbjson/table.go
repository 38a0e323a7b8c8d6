package pbjson

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoimpl"
)

// kind is how the decoder handles one field.
type kind uint8

const (
	kUnsupported kind = iota // any value, even null, makes Decode fall back
	kString
	kBool
	kInt32
	kInt64
	kUint32
	kEnum
	kMessage
	kListString
	kListMessage
	kMapStringString
)

// maxFields bounds the fields of a supported message: duplicates are tracked in a uint64.
const maxFields = 64

// msgTable is the compiled form of one message type.
type msgTable struct {
	id      int // index into the per-call scratch lists
	name    protoreflect.FullName
	goType  reflect.Type // the generated struct (not the pointer)
	sliceOf reflect.Type // []goType, for the backing arrays of repeated fields
	// unsupported is set for messages the decoder refuses whole (well-known types,
	// required fields, too many fields); why says why.
	unsupported bool
	why         string
	fields      []field
	byName      map[string]int // JSON name, then proto name, to an index of fields
}

// field is the compiled form of one field of a message.
type field struct {
	kind    kind
	goIndex int // index of the Go struct field
	fd      protoreflect.FieldDescriptor
	msg     *msgTable        // kMessage, kListMessage
	enum    map[string]int32 // kEnum: value names to numbers
	why     string           // kUnsupported: why
}

// compiler builds the tables of a message and every message reachable from it.
type compiler struct {
	tables map[protoreflect.FullName]*msgTable
	list   []*msgTable
}

var (
	protoMessageType = reflect.TypeFor[proto.Message]()
	mapStringString  = reflect.TypeFor[map[string]string]()
	sliceOfString    = reflect.TypeFor[[]string]()
)

// compile returns the table of the message descriptor md whose generated Go struct is
// goType (a pointer to it implements proto.Message).
func (c *compiler) compile(md protoreflect.MessageDescriptor, goType reflect.Type) (*msgTable, error) {
	if t, ok := c.tables[md.FullName()]; ok {
		if t.goType != goType {
			return nil, fmt.Errorf("message %s: two Go types, %v and %v", md.FullName(), t.goType, goType)
		}
		return t, nil
	}
	if goType.Kind() != reflect.Struct || !reflect.PointerTo(goType).Implements(protoMessageType) || !generated(goType) {
		return nil, fmt.Errorf("message %s: Go type %v is not a generated message struct", md.FullName(), goType)
	}
	if got := reflect.New(goType).Interface().(proto.Message).ProtoReflect().Descriptor().FullName(); got != md.FullName() {
		return nil, fmt.Errorf("message %s: Go type %v is message %s", md.FullName(), goType, got)
	}
	t := &msgTable{id: len(c.list), name: md.FullName(), goType: goType, sliceOf: reflect.SliceOf(goType)}
	c.tables[md.FullName()] = t
	c.list = append(c.list, t)

	fds := md.Fields()
	switch {
	case strings.HasPrefix(string(md.FullName()), "google.protobuf."):
		t.unsupported, t.why = true, "well-known type "+string(md.FullName())
	case fds.Len() > maxFields:
		t.unsupported, t.why = true, fmt.Sprintf("message %s has more than %d fields", md.FullName(), maxFields)
	case md.RequiredNumbers().Len() > 0:
		t.unsupported, t.why = true, fmt.Sprintf("message %s has required fields", md.FullName())
	}
	if t.unsupported {
		return t, nil
	}

	byNumber := goFieldsByNumber(goType)
	t.fields = make([]field, fds.Len())
	t.byName = make(map[string]int, 2*fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		f, err := c.compileField(fd, goType, byNumber)
		if err != nil {
			return nil, err
		}
		t.fields[i] = f
	}
	// protojson looks a name up as a JSON name first, then as a proto name.
	for i := range fds.Len() {
		if _, ok := t.byName[fds.Get(i).JSONName()]; !ok {
			t.byName[fds.Get(i).JSONName()] = i
		}
	}
	for i := range fds.Len() {
		if _, ok := t.byName[fds.Get(i).TextName()]; !ok {
			t.byName[fds.Get(i).TextName()] = i
		}
	}
	return t, nil
}

// generated tells whether goType is a struct of protoc-gen-go: it carries the
// protoimpl.MessageState that the generated code embeds.
func generated(goType reflect.Type) bool {
	f, ok := goType.FieldByName("state")
	return ok && f.Type == reflect.TypeFor[protoimpl.MessageState]()
}

// goFieldsByNumber maps field numbers to the indexes of the generated struct's fields,
// from their `protobuf:"<wire>,<number>,..."` tags.
func goFieldsByNumber(goType reflect.Type) map[protoreflect.FieldNumber]int {
	out := make(map[protoreflect.FieldNumber]int)
	for i := range goType.NumField() {
		tag := goType.Field(i).Tag.Get("protobuf")
		parts := strings.Split(tag, ",")
		if len(parts) < 2 {
			continue
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			continue
		}
		out[protoreflect.FieldNumber(n)] = i
	}
	return out
}

// compileField compiles one field; kinds the decoder does not cover become kUnsupported.
func (c *compiler) compileField(fd protoreflect.FieldDescriptor, goType reflect.Type, byNumber map[protoreflect.FieldNumber]int) (field, error) {
	unsupported := func(why string) (field, error) {
		return field{kind: kUnsupported, fd: fd, why: fmt.Sprintf("field %s: %s", fd.FullName(), why)}, nil
	}
	if fd.ContainingOneof() != nil {
		return unsupported("oneof (or proto3 optional)")
	}
	gi, ok := byNumber[fd.Number()]
	if !ok {
		return unsupported("no Go struct field")
	}
	ft := goType.Field(gi).Type
	f := field{fd: fd, goIndex: gi}
	switch {
	case fd.IsMap():
		if fd.MapKey().Kind() != protoreflect.StringKind || fd.MapValue().Kind() != protoreflect.StringKind || ft != mapStringString {
			return unsupported("map other than map<string, string>")
		}
		f.kind = kMapStringString
		return f, nil
	case fd.IsList():
		if ft.Kind() != reflect.Slice {
			return unsupported("repeated field without a Go slice")
		}
		switch fd.Kind() {
		case protoreflect.MessageKind:
			if ft.Elem().Kind() != reflect.Pointer {
				return unsupported("repeated message without a slice of pointers")
			}
			t, err := c.compile(fd.Message(), ft.Elem().Elem())
			if err != nil {
				return field{}, fmt.Errorf("field %s: %w", fd.FullName(), err)
			}
			f.kind, f.msg = kListMessage, t
			return f, nil
		case protoreflect.StringKind:
			if ft != sliceOfString {
				return unsupported("repeated string without a []string")
			}
			f.kind = kListString
			return f, nil
		}
		// No model of this repository has repeated bools, integers or enums.
		return unsupported("repeated " + fd.Kind().String())
	case fd.Kind() == protoreflect.MessageKind:
		if ft.Kind() != reflect.Pointer {
			return unsupported("message without a Go pointer")
		}
		t, err := c.compile(fd.Message(), ft.Elem())
		if err != nil {
			return field{}, fmt.Errorf("field %s: %w", fd.FullName(), err)
		}
		f.kind, f.msg = kMessage, t
		return f, nil
	}
	if fd.HasPresence() {
		return unsupported("scalar with presence")
	}
	k, why := scalarKind(fd, ft)
	if k == kUnsupported {
		return unsupported(why)
	}
	f.kind, f.enum = k, enumNames(fd)
	return f, nil
}

// scalarKind is the kind of a singular scalar field whose Go type is ft.
func scalarKind(fd protoreflect.FieldDescriptor, ft reflect.Type) (kind, string) {
	want, k := reflect.Invalid, kUnsupported
	switch fd.Kind() {
	case protoreflect.StringKind:
		want, k = reflect.String, kString
	case protoreflect.BoolKind:
		want, k = reflect.Bool, kBool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		want, k = reflect.Int32, kInt32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		want, k = reflect.Int64, kInt64
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		want, k = reflect.Uint32, kUint32
	case protoreflect.EnumKind:
		ed := fd.Enum()
		if ed.IsClosed() {
			return kUnsupported, "closed enum"
		}
		if strings.HasPrefix(string(ed.FullName()), "google.protobuf.") {
			return kUnsupported, "well-known enum " + string(ed.FullName())
		}
		want, k = reflect.Int32, kEnum
	default:
		return kUnsupported, "kind " + fd.Kind().String()
	}
	if ft.Kind() != want {
		return kUnsupported, fmt.Sprintf("Go type %v for kind %v", ft, fd.Kind())
	}
	return k, ""
}

// enumNames maps the value names of an enum field to their numbers (nil for others).
func enumNames(fd protoreflect.FieldDescriptor) map[string]int32 {
	if fd.Kind() != protoreflect.EnumKind {
		return nil
	}
	vals := fd.Enum().Values()
	out := make(map[string]int32, vals.Len())
	for i := range vals.Len() {
		out[string(vals.Get(i).Name())] = int32(vals.Get(i).Number())
	}
	return out
}
