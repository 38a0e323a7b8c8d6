package vppsim

import (
	"testing"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// TestNATLocalAddressesFollowConfigurationOrder: NAT makes an address
// local (VPP answers its pings) by reference-counted registrations: a
// load-balanced mapping added after the outside interfaces is not local;
// an outside interface configured after it registers it; deleting the
// mapping releases nothing; an identity mapping's address is local as
// soon as it is added.
func TestNATLocalAddressesFollowConfigurationOrder(t *testing.T) {
	n := newNATEnv(t, 0) // the LB mapping of svcIP comes after the interfaces
	// Each ping has its own echo ID: a ping forwarded through the output
	// feature leaves a NAT session, and VPP sends a later echo of the same ID
	// the session's way (nat44_ed_out2in.c, i2o match with forwarding on).
	id := uint16(77)
	ping := func(dst string) bool {
		t.Helper()
		id++
		n.fromOutside(ipPkt(hostAIP, dst, protoICMP, 64, icmpEcho(icmpEchoRequest, id, 1)))
		f := n.c.take(nic1)
		n.c.reset()
		return len(f) == 1 && decodeFrame(t, f[0]).icmpType == icmpEchoReply && decodeFrame(t, f[0]).src.String() == dst
	}
	if ping(svcIP) {
		t.Fatal("a load-balanced address added after the outside interfaces answers pings")
	}
	// NIC2 stops and starts being outside: it registers every mapping.
	n.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: false, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2})
	n.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2})
	if !ping(svcIP) {
		t.Fatal("the load-balanced address is not local after NIC2 became outside again")
	}
	n.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: false, ExternalAddr: ip4(svcIP), ExternalPort: svcPort, Protocol: protoTCP})
	if !ping(svcIP) {
		t.Error("deleting the load-balanced mapping released its registration")
	}
	n.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: false, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: 2})
	if !ping(svcIP) {
		t.Error("NIC2 released a registration of a mapping that no longer exists")
	}
	n.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4("10.96.0.77"), SwIfIndex: allIfaces})
	if !ping("10.96.0.77") {
		t.Error("an identity mapping's address is not local")
	}
	n.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: false, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4("10.96.0.77"), SwIfIndex: allIfaces})
	if ping("10.96.0.77") {
		t.Error("a deleted identity mapping's address is still local")
	}
}
