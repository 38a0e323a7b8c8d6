package pbjson_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson"
	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson/internal/testpb"
)

func TestEverySupportedKindDecodes(t *testing.T) {
	in := `{"s":"x","b":true,"i32":-5,"i64":"-9000000000","u32":"4000000000","si32":-7,"sf64":"123","f32":99,` +
		`"color":"BLUE","strs":["a","","c"],"labels":{"k":"v"},"custom":"named"}`
	want := &testpb.Kinds{S: "x", B: true, I32: -5, I64: -9000000000, U32: 4000000000, Si32: -7, Sf64: 123, F32: 99,
		Color: testpb.Kinds_BLUE, Strs: []string{"a", "", "c"}, Labels: map[string]string{"k": "v"}, JsonNamed: "named"}
	got, err := decoder(t, want).Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// The proto name of a field with a json_name is taken too.
	got, err = decoder(t, want).Decode([]byte(`{"json_named":"p"}`))
	if err != nil || got.(*testpb.Kinds).GetJsonNamed() != "p" {
		t.Errorf("json_named: %v, %v", got, err)
	}
	// And the two names of one field are one field.
	if _, err := decoder(t, want).Decode([]byte(`{"json_named":"p","custom":"q"}`)); err == nil {
		t.Error("a field given by both names decoded")
	}
}

func TestUnsupportedKindsFallBackEvenWhenNull(t *testing.T) {
	for _, f := range []string{"u64", "raw", "dbl", "flt", "ints", "colors", "counts", "opt", "one", "two", "dur", "byNum", "flags"} {
		for _, v := range []string{"null", `"1"`, "1", "[]", "{}"} {
			in := fmt.Sprintf(`{"s":"x",%q:%s}`, f, v)
			if got, err := decoder(t, &testpb.Kinds{}).Decode([]byte(in)); err == nil {
				t.Errorf("%s decoded to %v", in, got)
			} else if !errors.Is(err, pbjson.ErrFallback) {
				t.Errorf("%s: %v", in, err)
			}
		}
	}
	// Absent, they do not matter.
	if _, err := decoder(t, &testpb.Kinds{}).Decode([]byte(`{"s":"x"}`)); err != nil {
		t.Errorf("a message with unsupported fields absent: %v", err)
	}
}

// tree builds a Tree of the given depth and fan-out, with Kinds at every node.
func tree(name string, depth, fan int) *testpb.Tree {
	t := &testpb.Tree{Name: name, Kinds: &testpb.Kinds{S: name, I32: int32(depth), Strs: []string{name}}}
	if depth == 0 {
		return t
	}
	for i := range fan {
		t.Children = append(t.Children, tree(fmt.Sprintf("%s.%d", name, i), depth-1, fan))
	}
	t.First = tree(name+".first", depth-1, 1)
	t.MoreKinds = []*testpb.Kinds{{S: "m1", Color: testpb.Kinds_GREEN}, {Labels: map[string]string{"a": "b"}}}
	return t
}

// TestRecursiveListsDecode: a message repeated inside its own list (the scratch list of
// its type in use) is decoded element by element, and the result equals protojson's.
func TestRecursiveListsDecode(t *testing.T) {
	want := tree("root", 4, 3)
	data, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	d := decoder(t, want)
	for range 3 { // the pooled scratch is reused and must come back clean
		got, err := d.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("got %v", got)
		}
	}
	// A refusal in the middle of a nested list leaves no trace in the next decode.
	bad := strings.Replace(string(data), `"root.1.2"`, `"root.1.2\x01"`, 1)
	if _, err := d.Decode([]byte(bad)); err == nil {
		t.Fatal("a control character in a string decoded")
	}
	if got, err := d.Decode(data); err != nil || !proto.Equal(got, want) {
		t.Fatalf("after a refusal: %v, %v", got, err)
	}
}

func TestLongListsGrowTheScratch(t *testing.T) {
	want := &testpb.Tree{}
	for i := range 1000 {
		want.MoreKinds = append(want.MoreKinds, &testpb.Kinds{S: fmt.Sprint(i), I64: int64(i) << 40})
	}
	data, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decoder(t, want).Decode(data)
	if err != nil || !proto.Equal(got, want) {
		t.Fatalf("%v, %v", got, err)
	}
	if !contiguous(got.(*testpb.Tree).GetMoreKinds()) {
		t.Error("the 1000 elements are not one array")
	}
}

// FuzzDecodeKindsMatchesProtojson: whenever pbjson decodes a Tree (every field kind,
// supported or not, and recursion), protojson decodes it to an equal value.
func FuzzDecodeKindsMatchesProtojson(f *testing.F) {
	for _, v := range []proto.Message{
		tree("r", 2, 2),
		&testpb.Tree{Kinds: &testpb.Kinds{S: "é\"\n", B: true, I32: -1, I64: 1 << 60, U32: 1 << 31, Si32: -3, Sf64: -4, F32: 5,
			Color: 7, Strs: []string{"a"}, Labels: map[string]string{"": ""}, JsonNamed: "j"}},
		&testpb.Tree{Kinds: &testpb.Kinds{U64: 1, Raw: []byte("x"), Dbl: 1.5, Flt: 2, Ints: []int32{1}, Colors: []testpb.Kinds_Color{1},
			Counts: map[string]int32{"a": 1}, Choice: &testpb.Kinds_Two{Two: 2}, Dur: durationpb.New(3), ByNum: map[int32]string{1: "a"}, Flags: []bool{true}}},
	} {
		data, err := protojson.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		named, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(named)
	}
	for _, s := range []string{`{"kinds":{"color":"NOPE","i32":"-0","u32":-0}}`, `{"children":[{"children":[{}]},{}]}`,
		`{"kinds":{"custom":"a","json_named":"b"}}`, `{"first":{"first":{"first":null}}}`} {
		f.Add([]byte(s))
	}
	d, err := pbjson.NewDecoder((&testpb.Tree{}).ProtoReflect().Type())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := d.Decode(data)
		if err != nil {
			if !errors.Is(err, pbjson.ErrFallback) {
				t.Fatalf("%q: error %v does not wrap ErrFallback", data, err)
			}
			return
		}
		want := &testpb.Tree{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, want); err != nil {
			t.Fatalf("pbjson decoded %q to %v, protojson refuses it: %v", data, got, err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("%q: pbjson %v, protojson %v", data, got, want)
		}
	})
}
