package natplugin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// invalidFields returns the fields an error of a check names, sorted (nil: no error).
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ive *kvapi.InvalidValueError
	if !errors.As(err, &ive) {
		t.Fatalf("error %v is not an InvalidValueError", err)
	}
	fields := slices.Clone(ive.InvalidFields)
	slices.Sort(fields)
	return fields
}

// insertAt returns a copy of d with the entries inserted at index i of its static mappings.
func insertAt(d *nat.DNat44, i int, entries ...*nat.DNat44_StaticMapping) *nat.DNat44 {
	c := proto.Clone(d).(*nat.DNat44)
	c.StMappings = slices.Insert(c.StMappings, i, entries...)
	return c
}

func TestValidChangeAgreesWithTheWholeCheck(t *testing.T) {
	const key = nat.DNAT44Prefix + "default/np7"
	ref := nodePortService(7, 50, 3)
	entry := func(ip string, port uint32) *nat.DNat44_StaticMapping {
		return &nat.DNat44_StaticMapping{ExternalIp: ip, ExternalPort: port, Protocol: nat.DNat44_TCP,
			TwiceNat: nat.DNat44_StaticMapping_SELF, LocalIps: ref.StMappings[1].LocalIps}
	}
	badLocal := entry("192.168.17.1", 30007)
	badLocal.LocalIps = []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.0.7", 8080, 0, 1), lip("not-an-ip", 8080, 0, 300)}
	dupOfUnchanged := ref.StMappings[3] // an entry already in the value (at 3)
	tests := []struct {
		name    string
		v       *nat.DNat44
		decided bool
	}{
		{"a node joins (two entries in the middle)", insertAt(ref, 51, entry("192.168.16.200", 30007), entry("10.20.0.200", 30007)), true},
		{"a node leaves", nodePortService(7, 49, 3), true},
		{"the same value", proto.Clone(ref).(*nat.DNat44), true},
		{"an entry changed in place", func() *nat.DNat44 {
			c := proto.Clone(ref).(*nat.DNat44)
			c.StMappings[20].ExternalPort = 31000
			return c
		}(), true},
		{"a new entry with a bad address", insertAt(ref, 40, entry("192.168.16.300", 30007)), true},
		{"a new entry with a bad local and probability", insertAt(ref, 40, badLocal), true},
		{"a new entry duplicating an unchanged one", insertAt(ref, 40, proto.Clone(dupOfUnchanged).(*nat.DNat44_StaticMapping)), true},
		{"a new entry duplicating one of the end", insertAt(ref, 1, proto.Clone(ref.StMappings[90]).(*nat.DNat44_StaticMapping)), true},
		{"two new entries duplicating each other", insertAt(ref, 40, entry("192.168.17.9", 30007), entry("192.168.17.9", 30007)), true},
		{"a new entry of another protocol is no duplicate", func() *nat.DNat44 {
			e := proto.Clone(dupOfUnchanged).(*nat.DNat44_StaticMapping)
			e.Protocol = nat.DNat44_UDP
			return insertAt(ref, 40, e)
		}(), true},
		{"an address-only new entry", insertAt(ref, 40, &nat.DNat44_StaticMapping{ExternalIp: "192.168.17.1",
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.0.1", 0, 0, 0)}}), false},
		{"a new entry of an interface", insertAt(ref, 40, &nat.DNat44_StaticMapping{ExternalInterface: "tap0", ExternalPort: 80,
			Protocol: nat.DNat44_TCP, LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.0.1", 8080, 0, 0)}}), false},
		{"identity mappings", func() *nat.DNat44 {
			c := proto.Clone(ref).(*nat.DNat44)
			c.IdMappings = []*nat.DNat44_IdentityMapping{{IpAddress: "10.0.0.1", Port: 22, Protocol: nat.DNat44_TCP}}
			return c
		}(), false},
		{"many entries changed", nodePortService(8, 50, 3), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.v
			if tc.name == "many entries changed" {
				v.Label = ref.Label // every entry differs, the key is the same
			}
			err, decided := validChange(key, ref, v)
			if decided != tc.decided {
				t.Fatalf("decided = %v, want %v", decided, tc.decided)
			}
			if !decided {
				return
			}
			_, whole := validDNat44(key, v, nil)
			if got, want := invalidFields(t, err), invalidFields(t, whole); !slices.Equal(got, want) {
				t.Errorf("fields %q (%v), the whole check names %q (%v)", got, err, want, whole)
			}
			if fmt.Sprint(err) != fmt.Sprint(whole) {
				t.Errorf("validChange = %v, the whole check %v", err, whole)
			}
		})
	}
}

// TestValidChangeRandomEditsAgreeWithTheWholeCheck inserts, removes and rewrites
// entries of a valid value at random (some of them invalid or duplicates) and compares
// the verdicts and the fields named with those of the whole check.
func TestValidChangeRandomEditsAgreeWithTheWholeCheck(t *testing.T) {
	const key = nat.DNAT44Prefix + "default/np3"
	ref := nodePortService(3, 20, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	ips := []string{"192.168.16.1", "192.168.16.2", "192.168.16.77", "10.20.0.5", "10.20.0.300", "x"}
	ports := []uint32{30003, 30004, 80, 70000}
	decidedRuns := 0
	for run := range 2000 {
		v := proto.Clone(ref).(*nat.DNat44)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(v.StMappings) + 1)
			switch rng.IntN(3) {
			case 0:
				v.StMappings = slices.Insert(v.StMappings, i, &nat.DNat44_StaticMapping{
					ExternalIp: ips[rng.IntN(len(ips))], ExternalPort: ports[rng.IntN(len(ports))],
					Protocol: nat.DNat44_Protocol(rng.IntN(2)), LocalIps: ref.StMappings[1].LocalIps})
			case 1:
				if i < len(v.StMappings) {
					v.StMappings = slices.Delete(v.StMappings, i, i+1)
				}
			case 2:
				if i < len(v.StMappings) {
					v.StMappings[i].ExternalIp = ips[rng.IntN(len(ips))]
				}
			}
		}
		err, decided := validChange(key, ref, v)
		if !decided {
			continue
		}
		decidedRuns++
		_, whole := validDNat44(key, v, nil)
		if got, want := invalidFields(t, err), invalidFields(t, whole); !slices.Equal(got, want) {
			t.Fatalf("run %d: fields %q (%v), the whole check names %q (%v)", run, got, err, want, whole)
		}
		if fmt.Sprint(err) != fmt.Sprint(whole) {
			t.Fatalf("run %d: validChange = %v, the whole check %v", run, err, whole)
		}
	}
	if decidedRuns < 1000 {
		t.Errorf("only %d of 2000 edits were decided by validChange", decidedRuns)
	}
}

// allocatedBytes returns the bytes f allocates, on average over 20 runs.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 20
}

// TestValidateOfAJoinParsesOnlyTheNewEntries: the descriptor checks a value against
// the last one it accepted for the key, so a node joining (two new entries of ~100)
// allocates for the two entries only, where a whole check allocates the parsed form
// of every entry.
func TestValidateOfAJoinParsesOnlyTheNewEntries(t *testing.T) {
	addrs := make([]string, 64)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("10.1.0.%d", i)
	}
	const key = nat.DNAT44Prefix + "default/np5"
	before := nodePortServiceAsRendered(5, 50, 10, addrs)
	joined := nodePortServiceAsRendered(5, 51, 10, addrs)
	d := &dnatDescriptor{}
	if err := d.validate(key, before); err != nil {
		t.Fatal(err)
	}
	incremental := allocatedBytes(func() {
		d.lastValid[key] = before
		if err := d.validate(key, joined); err != nil {
			t.Fatal(err)
		}
	})
	whole := allocatedBytes(func() {
		if _, err := validDNat44(key, joined, nil); err != nil {
			t.Fatal(err)
		}
	})
	if incremental*10 > whole {
		t.Errorf("validate of a join allocates %d bytes, a whole check %d: want the two new entries' only", incremental, whole)
	}
	if d.lastValid[key] != joined {
		t.Error("the accepted value is not the reference of the next check")
	}
	// A value that fails is not the reference.
	bad := insertAt(joined, 1, &nat.DNat44_StaticMapping{ExternalIp: "300.1.1.1", ExternalPort: 30005, Protocol: nat.DNat44_TCP,
		LocalIps: joined.StMappings[1].LocalIps})
	if err := d.validate(key, bad); err == nil {
		t.Fatal("a bad address was accepted")
	}
	if d.lastValid[key] != joined {
		t.Error("a value that failed became the reference")
	}
}
