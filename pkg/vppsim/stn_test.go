package vppsim

import (
	"testing"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/stn"
)

// The STN tests: nic1 is the stolen NIC (10.0.0.1/24, the node's address), nic2 the
// interface toward the host, with no address (as the host-interconnect TAP, which is
// unnumbered in Contiv's STN mode).

const protoGRE = 47

func setSTNRule(e *testEnv, ipAddr string, sw interface_types.InterfaceIndex, add bool) int32 {
	e.t.Helper()
	return e.rv(&stn.StnAddDelRule{IPAddress: addr(ipAddr), SwIfIndex: sw, IsAdd: add})
}

func TestSTNRuleAPIAddsMovesDeletesAndDumps(t *testing.T) {
	e := newEnv(t)
	if rv := setSTNRule(e, "10.0.0.1", 2, true); rv != 0 {
		t.Fatalf("add: retval %d", rv)
	}
	if rv := setSTNRule(e, "2001:db8::1", 2, true); rv != 0 {
		t.Fatalf("add IPv6: retval %d", rv)
	}
	if rv := setSTNRule(e, "10.0.0.1", 1, true); rv != 0 {
		t.Fatalf("add again: retval %d", rv)
	}
	rules := dump[stn.StnRulesDetails](t, e.ch, &stn.StnRulesDump{})
	if len(rules) != 2 || rules[0].IPAddress.String() != "10.0.0.1" || rules[0].SwIfIndex != 1 || rules[1].SwIfIndex != 2 {
		t.Fatalf("dump %+v, want 10.0.0.1 moved to sw_if_index 1 and 2001:db8::1 on 2, in pool order", rules)
	}
	contains(t, cli(e, "show stn rules"), "- rule_index: 0", "address: 10.0.0.1", "iface: "+nic1+" (1)",
		"- rule_index: 1", "address: 2001:db8::1")
	e.expect(retvalInvalidSwIfIndex, &stn.StnAddDelRule{IPAddress: addr("10.0.0.9"), SwIfIndex: 77, IsAdd: true})
	if rv := setSTNRule(e, "10.0.0.1", 1, false); rv != 0 {
		t.Fatalf("delete: retval %d", rv)
	}
	e.expect(retvalNoSuchEntry, &stn.StnAddDelRule{IPAddress: addr("10.0.0.1"), SwIfIndex: 1})
	if rules := dump[stn.StnRulesDetails](t, e.ch, &stn.StnRulesDump{}); len(rules) != 1 {
		t.Fatalf("after delete: %+v", rules)
	}
}

// stnEnv is l3Env with nic2's address removed and a rule for nic1's address toward nic2.
func stnEnv(t *testing.T) (*testEnv, *capture) {
	e := newEnv(t)
	c := newCapture(e)
	e.addAddr(1, "10.0.0.1/24")
	e.up(1)
	e.up(2)
	if rv := setSTNRule(e, "10.0.0.1", 2, true); rv != 0 {
		t.Fatalf("stn rule: retval %d", rv)
	}
	return e, c
}

func TestSTNSendsTheHostWhatVPPDoesNotConsume(t *testing.T) {
	e, c := stnEnv(t)
	for _, tc := range []struct {
		name  string
		proto uint8
		l4    []byte
	}{
		{"TCP (no session layer)", protoTCP, tcpL4(40000, 22, 0x02)},
		{"UDP to a port no node has", protoUDP, udpL4(40000, 5000, "x")},
		{"GRE (no handler)", protoGRE, []byte{0, 0, 8, 0}},
		{"ICMP echo reply (no CLI ping of VPP's)", protoICMP, icmpEcho(0, 7, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.reset()
			e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", tc.proto, 60, tc.l4)))
			p := oneFrame(t, c, nic2)
			if p.dstMAC != stnHostMAC || p.srcMAC != stnLocalMAC || p.etype != etherTypeIP4 {
				t.Errorf("punted frame %v type %#x, want 00:00:00:00:00:01 -> 00:00:00:00:00:02 IPv4", p, p.etype)
			}
			if p.ttl != 60 || p.dst.String() != "10.0.0.1" || p.src.String() != "10.0.0.2" || p.proto != tc.proto {
				t.Errorf("punted packet %v, want it unchanged (TTL 60, no rewrite)", p)
			}
			none(t, c) // and no ICMP error back on nic1
		})
	}
}

func TestSTNLeavesWhatVPPConsumesToVPP(t *testing.T) {
	e, c := stnEnv(t)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", protoICMP, 64, icmpEcho(8, 7, 1))))
	if r := oneFrame(t, c, nic1); r.icmpType != 0 || r.src.String() != "10.0.0.1" {
		t.Errorf("echo request: %v, want VPP's own echo reply", r)
	}
	e.inject(nic1, ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.0.0.1")))
	if r := oneFrame(t, c, nic1); r.arpOp != arpOpReply || r.arpSHA != nic1MAC {
		t.Errorf("ARP request: %v, want VPP's reply with the NIC's MAC", r)
	}
	none(t, c)
}

func TestSTNPuntOfAnAddressWithoutARuleIsDroppedAndUDPPuntOutlivesTheRules(t *testing.T) {
	e, c := stnEnv(t)
	lo := e.loopback()
	e.addAddr(lo, "10.9.9.1/32")
	e.up(lo)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.9.9.1", protoTCP, 64, tcpL4(1, 22, 0x02))))
	none(t, c)
	if e.sim.ErrorCount("ip4-local", "TCP to VPP (no session layer)") != 1 {
		t.Errorf("TCP to an address without a rule not dropped:\n%s", cli(e, "show errors"))
	}
	if rv := setSTNRule(e, "10.0.0.1", 2, false); rv != 0 {
		t.Fatalf("delete: retval %d", rv)
	}
	// stn.c registered the punting of unknown UDP ports with the first rule and does
	// not withdraw it: no ICMP port unreachable, the packet is punted and dropped.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", protoUDP, 64, udpL4(1, 5000, "x"))))
	none(t, c)
	if e.sim.ErrorCount("ip4-udp-lookup", "No listener for dst port") != 1 {
		t.Errorf("UDP to an unknown port not dropped:\n%s", cli(e, "show errors"))
	}
}

func TestSTNRuleIPEnablesItsInterface(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	e.addAddr(1, "10.0.0.1/24")
	e.up(1)
	e.up(2)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	fromHost := ethFrame(nic2MAC, hostBMAC, etherTypeIP4, ipPkt("10.0.0.1", "10.0.0.2", protoUDP, 64, udpL4(1, 53, "q")))
	e.inject(nic2, fromHost)
	none(t, c)
	if rv := setSTNRule(e, "10.0.0.1", 2, true); rv != 0 {
		t.Fatalf("stn rule: retval %d", rv)
	}
	if rv := setSTNRule(e, "10.0.0.1", 2, false); rv != 0 { // VPP does not disable it again
		t.Fatalf("delete: retval %d", rv)
	}
	e.inject(nic2, fromHost)
	if p := oneFrame(t, c, nic1); p.dst.String() != "10.0.0.2" || p.ttl != 63 {
		t.Errorf("forwarded %v, want the host's packet routed out of the NIC", p)
	}
}

func TestSTNPuntIsTraced(t *testing.T) {
	e, c := stnEnv(t)
	cli(e, "trace add dpdk-input 1")
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", protoTCP, 64, tcpL4(1, 22, 0x02))))
	oneFrame(t, c, nic2)
	contains(t, cli(e, "show trace"), "stn-ip4-punt", "rule 10.0.0.1 -> "+nic2, nic2+"-tx")
}
