package vppsim

import (
	"testing"
)

// The IPv6 STN tests: nic1 is the stolen NIC (2001:db8:1::1/64, the node's address; host
// A behind it), nic2 the interface toward the host, with no address.

// stnEnv6 is an IPv6 NIC with a rule for its address toward nic2.
func stnEnv6(t *testing.T) (*testEnv, *capture) {
	e := newEnv(t)
	c := newCapture(e)
	e.addAddr(1, nic1G6+"/64")
	e.up(1)
	e.up(2)
	e.neighbor(1, hostA6, hostAMAC)
	if rv := setSTNRule(e, nic1G6, 2, true); rv != 0 {
		t.Fatalf("stn rule: retval %d", rv)
	}
	return e, c
}

func TestSTNSendsTheHostWhatVPPDoesNotConsumeOverIPv6(t *testing.T) {
	e, c := stnEnv6(t)
	for _, tc := range []struct {
		name  string
		proto uint8
		l4    []byte
	}{
		{"TCP (no session layer)", protoTCP, tcpL4(40000, 22, 0x02)},
		{"UDP to a port no node has", protoUDP, udpL4(40000, 5000, "x")},
		{"GRE (no handler)", protoGRE, []byte{0, 0, 0x86, 0xdd}},
		{"ICMPv6 echo reply (no CLI ping of VPP's)", protoICMP6, []byte{icmp6EchoReply, 0, 0, 0, 0, 7, 0, 1}},
		{"ICMPv6 type without a node", protoICMP6, []byte{200, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.reset()
			e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, nic1G6, tc.proto, 60, tc.l4)))
			p := one6(t, c, nic2)
			if p.dstMAC != stnHostMAC || p.srcMAC != stnLocalMAC || p.etype != etherTypeIP6 {
				t.Errorf("punted frame %v type %#x, want 00:00:00:00:00:01 -> 00:00:00:00:00:02 IPv6", p, p.etype)
			}
			if p.hop != 60 || p.dst.String() != nic1G6 || p.src.String() != hostA6 || p.nh != tc.proto {
				t.Errorf("punted packet %v, want it unchanged (hop limit 60, no rewrite)", p)
			}
			none(t, c) // and no ICMPv6 error back on nic1
		})
	}
}

func TestSTNLeavesWhatVPPConsumesToVPPOverIPv6(t *testing.T) {
	e, c := stnEnv6(t)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, nic1G6, protoICMP6, 64, []byte{icmp6EchoRequest, 0, 0, 0, 0, 7, 0, 1})))
	if r := one6(t, c, nic1); r.icmpType != icmp6EchoReply || r.src.String() != nic1G6 {
		t.Errorf("echo request: %v, want VPP's own echo reply", r)
	}
	e.inject(nic1, eth6(solicitedMAC(nic1G6), hostAMAC, ip6Pkt(hostA6, solicitedNode(nic1G6), protoICMP6, 255, nsL4(nic1G6, &hostAMAC))))
	if r := one6(t, c, nic1); r.icmpType != icmp6NeighborAdvert || r.target.String() != nic1G6 {
		t.Errorf("neighbour solicitation: %v, want VPP's advertisement", r)
	}
	none(t, c)
}

func TestSTNPuntOverIPv6WithoutARuleIsDroppedAndUDPPuntOutlivesTheRules(t *testing.T) {
	e, c := stnEnv6(t)
	lo := e.loopback()
	e.addAddr(lo, "2001:db8:9::1/128")
	e.up(lo)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:9::1", protoTCP, 64, tcpL4(1, 22, 0x02))))
	none(t, c)
	if e.sim.ErrorCount("ip6-local", "unknown ip protocol") != 1 {
		t.Errorf("TCP to an address without a rule not dropped:\n%s", cli(e, "show errors"))
	}
	if rv := setSTNRule(e, nic1G6, 2, false); rv != 0 {
		t.Fatalf("delete: retval %d", rv)
	}
	// stn.c registered the punting of unknown UDP ports for IPv6 too with the first
	// rule and does not withdraw it: no ICMPv6 port unreachable, punted and dropped.
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, nic1G6, protoUDP, 64, udpL4(1, 5000, "x"))))
	none(t, c)
	if e.sim.ErrorCount("ip6-udp-lookup", "No listener for dst port") != 1 {
		t.Errorf("UDP to an unknown port not dropped:\n%s", cli(e, "show errors"))
	}
}

func TestSTNPuntOverIPv6IsTraced(t *testing.T) {
	e, c := stnEnv6(t)
	cli(e, "trace add dpdk-input 1")
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, nic1G6, protoTCP, 64, tcpL4(1, 22, 0x02))))
	one6(t, c, nic2)
	contains(t, cli(e, "show trace"), "stn-ip6-punt", "rule "+nic1G6+" -> "+nic2, nic2+"-tx")
}
