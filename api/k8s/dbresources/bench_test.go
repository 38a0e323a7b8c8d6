package dbresources

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// BenchmarkUnmarshal decodes the values of the issue side by side: protojson (the
// decoder before pbjson), Unmarshal (pbjson, protojson on fallback) and, for scale,
// the binary protobuf decoding of the same message.
func BenchmarkUnmarshal(b *testing.B) {
	cases := []struct {
		name, keyword string
		value         proto.Message
	}{
		{"endpoints10", "endpoints", endpoints10()},
		{"serviceNodePort", "service", serviceNodePort()},
		{"podWithPort", "pod", podWithPort()},
	}
	for _, c := range cases {
		var res *DBResource
		for _, r := range GetDBResources() {
			if r.Keyword == c.keyword {
				res = r
			}
		}
		data, err := Marshal(c.value)
		if err != nil {
			b.Fatal(err)
		}
		wire, err := proto.Marshal(c.value)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/protojson", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				v := res.NewValue()
				if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/pbjson", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := res.Unmarshal(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/binary", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				v := res.NewValue()
				if err := proto.Unmarshal(wire, v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGetResourceByKey is the lookup dbwatcher makes for every key it reads.
func BenchmarkGetResourceByKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := GetResourceByKey("k8s/endpoints/web-1/namespace/default"); !ok {
			b.Fatal("no resource")
		}
	}
}

// BenchmarkCheckKey is the identity check dbwatcher makes for every value it decodes.
func BenchmarkCheckKey(b *testing.B) {
	r, _ := GetResourceByKey("k8s/endpoints/web-0/namespace/default")
	v := endpoints10()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.CheckKey("k8s/endpoints/web-0/namespace/default", v); err != nil {
			b.Fatal(err)
		}
	}
}
