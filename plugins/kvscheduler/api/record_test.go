package api

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	interfaces "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// A transaction of large values (a node joining a cluster with many NodePort
// Services) is recorded with at most about RecordContentBudget bytes of values:
// the keys, operations and errors stay, the contents past the budget do not.
func TestBoundKeepsTheContentsOfARecordWithinItsBudget(t *testing.T) {
	text := strings.Repeat("m", 600<<10) // ~600 KiB, one DNAT of 100 mappings
	const n = 50
	rec := &RecordedTxn{}
	for i := range n {
		key := fmt.Sprintf("config/vpp/nat/v2/dnat44/ns/svc%02d", i)
		v := wrapperspb.String(text) // each value its own message, its previous value another
		rec.Values = append(rec.Values, RecordedKVPair{Key: key, Value: v})
		op := RecordedOp{Key: key, Operation: OpUpdate, Value: v, PrevValue: wrapperspb.String(text)}
		if i == n-1 {
			op.Error = "failed"
		}
		rec.Executed = append(rec.Executed, op)
	}
	rec.Bound(1000)

	if got := rec.ApproxMemory(); got > RecordContentBudget+64<<10 {
		t.Errorf("the record holds about %d bytes, want at most about %d", got, RecordContentBudget)
	}
	if len(rec.Values)+rec.OmittedValues != n || rec.OmittedValues == 0 || len(rec.Values) == 0 {
		t.Errorf("values: %d kept, %d omitted; want some of each, %d in all", len(rec.Values), rec.OmittedValues, n)
	}
	if len(rec.Executed) != n {
		t.Fatalf("executed: %d operations kept, want all %d (only their contents are cut)", len(rec.Executed), n)
	}
	stripped := 0
	for i, op := range rec.Executed {
		if op.Key == "" || op.Operation != OpUpdate {
			t.Errorf("operation %d lost its key or kind: %+v", i, op)
		}
		if op.Value == nil {
			stripped++
		}
	}
	if stripped == 0 || stripped != rec.OmittedContents {
		t.Errorf("%d operations without values, OmittedContents %d; want the same, more than 0", stripped, rec.OmittedContents)
	}
	if last := rec.Executed[n-1]; last.Error != "failed" {
		t.Errorf("the failed operation lost its error: %+v", last)
	}
}

// A value a record lists several times (the value a transaction carried is also the
// value of its operation) is one object in memory: it is counted once.
func TestRecordCountsAValueListedTwiceOnce(t *testing.T) {
	v, prev := wrapperspb.String(strings.Repeat("v", 1000)), wrapperspb.String(strings.Repeat("p", 1000))
	one := &RecordedTxn{Values: []RecordedKVPair{{Key: "a", Value: v}}, Executed: []RecordedOp{{Key: "a", Operation: OpUpdate, PrevValue: prev}}}
	both := &RecordedTxn{Values: []RecordedKVPair{{Key: "a", Value: v}}, Executed: []RecordedOp{{Key: "a", Operation: OpUpdate, Value: v, PrevValue: prev}}}
	if a, b := one.ApproxMemory(), both.ApproxMemory(); a != b {
		t.Errorf("record with the value listed once: %d bytes, twice: %d; want the same", a, b)
	}
	one.Bound(10)
	both.Bound(10)
	if a, b := one.ApproxMemory(), both.ApproxMemory(); a != b || a < ValueMemoryFactor*(proto.Size(v)+proto.Size(prev)) {
		t.Errorf("bounded records: %d and %d bytes, want the same, at least both values", a, b)
	}
}

// A value sharing most of its messages with one sized before (a DNAT gaining one
// mapping on a node join keeps the other mappings' messages) is sized at the cost of
// what changed: the shared messages' sizes are read from their size cache, not walked
// again (seen by changing a shared message behind the cache's back, which staged
// values never are).
func TestSizingANewValueReadsTheSizesOfTheMessagesItShares(t *testing.T) {
	mappings := make([]*nat.DNat44_StaticMapping, 100)
	for i := range mappings {
		mappings[i] = &nat.DNat44_StaticMapping{ExternalIp: fmt.Sprintf("192.168.16.%d", i), ExternalPort: 30080,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.1.1.2", LocalPort: 8080}}}
	}
	prev := &nat.DNat44{Label: "ns/svc", StMappings: mappings}
	next := &nat.DNat44{Label: "ns/svc", StMappings: append(mappings[:100:100],
		&nat.DNat44_StaticMapping{ExternalIp: "192.168.16.200", ExternalPort: 30080})}
	record := func(v proto.Message) int {
		rec := &RecordedTxn{Values: []RecordedKVPair{{Key: "config/vpp/nat/v2/dnat44/ns/svc", Value: v}}}
		rec.Bound(10)
		_, content := rec.approx()
		return content
	}
	if got, want := record(prev), proto.Size(prev); got != want {
		t.Fatalf("the first value: %d bytes, want %d", got, want)
	}
	if got, want := record(next), proto.Size(next); got != want {
		t.Errorf("the value sharing its mappings: %d bytes, want %d", got, want)
	}
	grown := proto.Size(next)
	mappings[0].ExternalIp = "192.168.160.100" // behind the cache's back
	if got := record(&nat.DNat44{Label: "ns/svc", StMappings: next.StMappings}); got != grown {
		t.Errorf("a third value sharing the mappings: %d bytes, want %d (the shared mappings' cached sizes; the change is not seen)", got, grown)
	}
}

// A small transaction keeps everything.
func TestBoundKeepsSmallRecordsWhole(t *testing.T) {
	v := wrapperspb.String("x")
	rec := &RecordedTxn{Values: []RecordedKVPair{{Key: "a", Value: v}}, Executed: []RecordedOp{{Key: "a", Operation: OpCreate, Value: v}}}
	rec.Bound(1000)
	if len(rec.Values) != 1 || rec.Executed[0].Value == nil || rec.OmittedValues+rec.OmittedContents != 0 {
		t.Errorf("small record changed: %+v", rec)
	}
}

// A summary shows the beginning of a large value as compact would write it, without
// formatting all of it.
func TestCompactPrefixStartsLikeTheWholeText(t *testing.T) {
	m := &descriptorpb.FileDescriptorProto{Name: proto.String("big.proto")}
	for i := range 2000 {
		m.MessageType = append(m.MessageType, &descriptorpb.DescriptorProto{Name: proto.String(fmt.Sprintf("M%d", i)),
			Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("f"), Number: proto.Int32(int32(i)),
				Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()}}})
	}
	whole := compact(m)
	for _, max := range []int{1, 100, 513, 5000} {
		got := compactPrefix(m, max)
		if len(got) <= max || len(got) > max+200 || !strings.HasPrefix(whole, got) {
			t.Errorf("compactPrefix(%d) = %q (%d bytes), want a little more than %d bytes that the whole text %q... starts with",
				max, got, len(got), max, whole[:min(len(whole), max+200)])
		}
	}
	small := wrapperspb.String("tap1")
	if got := compactPrefix(small, 512); got != compact(small) {
		t.Errorf("compactPrefix of a small value = %q, want %q", got, compact(small))
	}
	allocs := testing.AllocsPerRun(10, func() { compactPrefix(m, 512) })
	if allocs > 50 {
		t.Errorf("compactPrefix of a large value allocates %v times: it formats more than it shows", allocs)
	}
}

// The summary writes the values of this agent directly, and its text is exactly what
// compact writes through prototext; values it cannot write that way (non-ASCII or
// doubled spaces in strings, maps, floating point, proto2, unknown fields) are
// formatted by compact.
func TestCompactPrefixWritesValuesAsCompactDoes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	str := func() string {
		const chars = `abc019./:-_ "\` + "'"
		b := make([]byte, rng.Intn(12))
		for i := range b {
			b[i] = chars[rng.Intn(len(chars))]
		}
		return strings.ReplaceAll(string(b), "  ", " ")
	}
	var msgs []proto.Message
	for range 200 {
		d := &nat.DNat44{Label: str()}
		for range rng.Intn(4) {
			sm := &nat.DNat44_StaticMapping{ExternalIp: str(), ExternalPort: rng.Uint32() >> rng.Intn(32),
				Protocol: nat.DNat44_Protocol(rng.Intn(4)), TwiceNat: nat.DNat44_StaticMapping_TwiceNatMode(rng.Intn(3)),
				SessionAffinity: uint32(rng.Intn(2) * 300), ExternalInterface: str()}
			for range rng.Intn(4) {
				sm.LocalIps = append(sm.LocalIps, &nat.DNat44_StaticMapping_LocalIP{LocalIp: str(), LocalPort: uint32(rng.Intn(70000)),
					VrfId: uint32(rng.Intn(2)) * ^uint32(0), Probability: uint32(rng.Intn(3))})
			}
			d.StMappings = append(d.StMappings, sm)
		}
		for range rng.Intn(3) {
			d.IdMappings = append(d.IdMappings, &nat.DNat44_IdentityMapping{IpAddress: str(), Port: uint32(rng.Intn(9)), VrfId: uint32(rng.Intn(3))})
		}
		msgs = append(msgs, d)
		msgs = append(msgs, &interfaces.Interface{Name: str(), Type: interfaces.Interface_Type(rng.Intn(5)), Enabled: rng.Intn(2) == 0,
			IpAddresses: []string{str(), str()}, Mtu: uint32(rng.Intn(9000)),
			Link: &interfaces.Interface_Tap{Tap: &interfaces.TapLink{HostIfName: str()}}})
	}
	msgs = append(msgs, &nat.DNat44{Label: "two  spaces"}, &nat.DNat44{Label: "ünïcode"}, &nat.DNat44{Label: "tab\\there\n"},
		&nat.Nat44Global{Forwarding: true}, &interfaces.Interface{Type: interfaces.Interface_Type(99)}, wrapperspb.Double(1.5),
		&descriptorpb.DescriptorProto{Name: proto.String("proto2")})
	unknown := &nat.DNat44{Label: "with unknown fields"}
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7))
	msgs = append(msgs, unknown)
	for _, m := range msgs {
		if got, want := compactPrefix(m, 1<<20), compact(m); got != want {
			t.Errorf("compactPrefix(%T) = %q, compact = %q", m, got, want)
		}
	}
	// and a large value is cut as compact's text starts
	big := msgs[0].(*nat.DNat44)
	for range 100 {
		big.StMappings = append(big.StMappings, &nat.DNat44_StaticMapping{ExternalIp: "10.96.0.1", ExternalPort: 80,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.1.1.1", LocalPort: 8080}}})
	}
	if got := compactPrefix(big, 512); len(got) <= 512 || !strings.HasPrefix(compact(big), got) {
		t.Errorf("compactPrefix(512) of a large DNAT = %q, want a little more than 512 bytes that compact starts with", got)
	}
}
