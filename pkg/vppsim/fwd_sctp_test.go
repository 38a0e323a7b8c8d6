package vppsim

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// sctpL4 builds an SCTP common header (ports, verification tag, CRC32c)
// with one INIT-like chunk header.
func sctpL4(sport, dport uint16) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint16(b[0:2], sport)
	binary.BigEndian.PutUint16(b[2:4], dport)
	b[12] = 1 // chunk type INIT
	binary.BigEndian.PutUint16(b[14:16], 4)
	binary.LittleEndian.PutUint32(b[8:12], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// TestSCTPThroughACLHasNoPorts: the ACL plugin extracts ports only for
// TCP and UDP (type and code for ICMP); for SCTP both are 0, so a rule
// for protocol 132 with a port range without 0 never matches, and one
// with all ports does.
func TestSCTPThroughACLHasNoPorts(t *testing.T) {
	e, c := l3Env(t)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	onlyPort, _ := e.addACL(noIndex, "sctp-5000", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", protoSCTP, 5000))
	anyPort, _ := e.addACL(noIndex, "sctp-any", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", protoSCTP, 0))
	send := func() int {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoSCTP, 64, sctpL4(40000, 5000))))
		return len(c.take(nic2))
	}
	if rv := e.setACLs(1, []uint32{onlyPort}); rv != 0 {
		t.Fatal(rv)
	}
	if got := send(); got != 0 {
		t.Errorf("SCTP to port 5000 passed a rule for port 5000 (%d frames): VPP sees port 0", got)
	}
	if rv := e.setACLs(1, []uint32{onlyPort, anyPort}); rv != 0 {
		t.Fatal(rv)
	}
	if got := send(); got != 1 {
		t.Errorf("SCTP did not pass a rule for all ports (%d frames)", got)
	}
}

// TestSCTPThroughNAT44ED: NAT44-ED handles SCTP as an unknown protocol,
// keyed by addresses only. A port-specific mapping (what a Service port
// is) never matches it; a mapping of (address, port 0, protocol 132)
// does, to its local address with the ports kept. In2out SNATs every
// new SCTP flow to a pool address whatever the forwarding setting, even
// pod to pod.
func TestSCTPThroughNAT44ED(t *testing.T) {
	n := newNATEnv(t, 0)
	n.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4(svcIP), ExternalPort: 7777, Protocol: protoSCTP, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{
			{Addr: ip4(pod1IP), Port: 7777, Probability: 1}, {Addr: ip4(pod2IP), Port: 7777, Probability: 1}}})

	t.Run("service port mapping does not DNAT; in2out SNATs to the pool", func(t *testing.T) {
		n.fromPod(pod1MAC, ipPkt(pod1IP, svcIP, protoSCTP, 64, sctpL4(40000, 7777)))
		r := oneFrame(t, n.c, nic1)
		if r.src.String() != nodeIP || r.dst.String() != svcIP || r.proto != protoSCTP {
			t.Errorf("got %v, want SNAT to %s, destination untouched", r, nodeIP)
		}
	})
	t.Run("pod to pod is SNATed too", func(t *testing.T) {
		n.fromPod(pod1MAC, ipPkt(pod1IP, pod2IP, protoSCTP, 64, sctpL4(40001, 9)))
		r := oneFrame(t, n.c, nic2)
		if r.src.String() != nodeIP || r.dst.String() != pod2IP || r.dstMAC != pod2MAC {
			t.Errorf("got %v, want %s -> %s", r, nodeIP, pod2IP)
		}
		// The answer matches the session by addresses and goes back.
		n.fromPod(pod2MAC, ipPkt(pod2IP, nodeIP, protoSCTP, 64, sctpL4(9, 40001)))
		if back := oneFrame(t, n.c, nic2); back.src.String() != pod2IP || back.dst.String() != pod1IP || back.dstMAC != pod1MAC {
			t.Errorf("answer %v", back)
		}
	})
	t.Run("address+protocol mapping DNATs from outside", func(t *testing.T) {
		n.ok(&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY, LocalIPAddress: ip4(pod2IP),
			ExternalIPAddress: ip4("10.96.0.50"), Protocol: protoSCTP, ExternalSwIfIndex: allIfaces, VrfID: 0})
		n.fromOutside(ipPkt(hostAIP, "10.96.0.50", protoSCTP, 64, sctpL4(41000, 7777)))
		r := oneFrame(t, n.c, nic2)
		if r.dst.String() != pod2IP || r.dport != 0 || r.src.String() != hostAIP {
			t.Fatalf("got %v, want DNAT to %s", r, pod2IP)
		}
		f := n.sim.Sessions()
		found := false
		for _, s := range f {
			if s.Protocol == protoSCTP && s.InsideAddr.Addr().String() == pod2IP && s.OutsideAddr.Addr().String() == "10.96.0.50" {
				found = true
				if s.InsideAddr.Port() != 0x8400 || !s.Static {
					t.Errorf("session %+v: VPP dumps the protocol, host order, as both ports", s)
				}
			}
		}
		if !found {
			t.Errorf("no SCTP session: %+v", f)
		}
		n.fromPod(pod2MAC, ipPkt(pod2IP, hostAIP, protoSCTP, 64, sctpL4(7777, 41000)))
		if back := oneFrame(t, n.c, nic1); back.src.String() != "10.96.0.50" || back.dst.String() != hostAIP {
			t.Errorf("reply %v", back)
		}
	})
	t.Run("outside without a mapping passes untranslated with forwarding on", func(t *testing.T) {
		n.addRoute(ip.IPRoute{Prefix: pfx("10.1.1.0/24"), Paths: []fib_types.FibPath{viaPath(2, "")}})
		before := len(n.sim.Sessions())
		n.fromOutside(ipPkt(hostAIP, pod1IP, protoSCTP, 64, sctpL4(42000, 5)))
		if r := oneFrame(t, n.c, nic2); r.src.String() != hostAIP || r.dst.String() != pod1IP {
			t.Errorf("got %v", r)
		}
		if after := len(n.sim.Sessions()); after != before {
			t.Errorf("a session was made (%d -> %d)", before, after)
		}
	})
}
