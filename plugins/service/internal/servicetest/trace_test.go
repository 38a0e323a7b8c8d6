package servicetest

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

func TestDiffLinesMarksAddedAndRemovedLines(t *testing.T) {
	got := DiffLines("a\nb\nc\n", "a\nc\nd\n")
	if want := "  a\n- b\n  c\n+ d\n"; got != want {
		t.Errorf("diff\n%s\nwant\n%s", got, want)
	}
	if ProtoDiff(&vpp_nat.DNat44{Label: "x"}, &vpp_nat.DNat44{Label: "x"}) != "" {
		t.Error("equal messages differ")
	}
	if d := ProtoDiff(&vpp_nat.DNat44{Label: "x"}, (*vpp_nat.DNat44)(nil)); !strings.Contains(d, "+ <none>") {
		t.Errorf("missing message diff: %s", d)
	}
}

func TestTraceFollowsMappingsAndFeatures(t *testing.T) {
	kvs := map[string]proto.Message{
		vpp_nat.GlobalNAT44Key: &vpp_nat.Nat44Global{
			NatInterfaces: []*vpp_nat.Nat44Global_Interface{{Name: "pod"}, {Name: "pod", IsInside: true}, {Name: "inonly", IsInside: true}},
			AddressPool:   []*vpp_nat.Nat44Global_Address{{Address: "10.1.1.254", TwiceNat: true}},
		},
		vpp_nat.DNAT44Key("default/s"): &vpp_nat.DNat44{Label: "default/s", StMappings: []*vpp_nat.DNat44_StaticMapping{{
			ExternalIp: "10.96.0.1", ExternalPort: 80, TwiceNat: vpp_nat.DNat44_StaticMapping_SELF,
			LocalIps: []*vpp_nat.DNat44_StaticMapping_LocalIP{{LocalIp: "10.1.1.2", LocalPort: 8080}, {LocalIp: "10.1.1.3", LocalPort: 8080}},
		}}},
	}
	n := NATFrom(kvs)
	p := Packet{Src: netip.MustParseAddrPort("10.1.1.2:5000"), Dst: netip.MustParseAddrPort("10.96.0.1:80"), InIf: "pod"}
	outcomes, why := n.Trace(p)
	if why != "" || !slices.Equal(Destinations(outcomes), []string{"10.1.1.2:8080", "10.1.1.3:8080"}) {
		t.Fatalf("outcomes %v (%s)", outcomes, why)
	}
	if outcomes[0].Src.Addr().String() != "10.1.1.254" || outcomes[1].Src != p.Src {
		t.Errorf("self-twice-NAT: %v", outcomes)
	}
	p.InIf = "inonly"
	if _, why := n.Trace(p); !strings.Contains(why, "neither") {
		t.Errorf("inside-only interface translated: %s", why)
	}
}
