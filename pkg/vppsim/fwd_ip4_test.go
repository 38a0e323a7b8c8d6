package vppsim

import (
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
)

// l3Env: NIC1 10.0.0.1/24 (host A 10.0.0.2 behind it), NIC2 10.0.1.1/24,
// both up.
func l3Env(t *testing.T) (*testEnv, *capture) {
	e := newEnv(t)
	c := newCapture(e)
	e.l3Up("10.0.0.1/24", "10.0.1.1/24")
	return e, c
}

// l3Up gives nic1 and nic2 an address each and sets them up.
func (e *testEnv) l3Up(nic1Addr, nic2Addr string) {
	e.t.Helper()
	e.addAddr(1, nic1Addr)
	e.addAddr(2, nic2Addr)
	e.up(1)
	e.up(2)
}

func TestARP(t *testing.T) {
	e, c := l3Env(t)
	lo := e.loopback()
	e.addAddr(lo, "10.9.9.1/32")
	e.up(lo)
	tests := []struct {
		name    string
		frame   []byte
		reply   bool
		spa     string
		drop    string
		learned bool
	}{
		{name: "request for our address is answered", frame: ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.0.0.1")),
			reply: true, spa: "10.0.0.1", learned: true},
		{name: "request for an address not ours is dropped", frame: ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.0.0.77")),
			drop: "ARP request for an address not ours"},
		{name: "sender outside every attached prefix is dropped", frame: ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "172.16.0.2", [6]byte{}, "10.0.0.1")),
			drop: "IP4 source address not local to subnet"},
		{name: "address of another interface is not answered here", frame: ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.9.9.1")),
			drop: "Interface is not mapped to an IP address"},
		{name: "ethernet source must be the ARP sender", frame: ethFrame(broadcastMAC, hostBMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.0.0.1")),
			drop: "ARP hw address mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.reset()
			e.inject(nic1, tc.frame)
			if !tc.reply {
				none(t, c)
				if e.sim.ErrorCount(errNode(tc.drop), tc.drop) == 0 {
					t.Errorf("no %q error counted:\n%s", tc.drop, cli(e, "show errors"))
				}
				return
			}
			r := oneFrame(t, c, nic1)
			if r.arpOp != arpOpReply || r.arpSPA.String() != tc.spa || r.arpSHA != nic1MAC || r.dstMAC != hostAMAC || r.srcMAC != nic1MAC {
				t.Errorf("reply %v", r)
			}
		})
	}
	if n := e.sim.Neighbors(); len(n) != 1 || n[0].IP.String() != "10.0.0.2" || n[0].Static {
		t.Errorf("learned neighbours %+v", n)
	}
}

// errNode returns the node counting a drop reason used in the tests.
func errNode(reason string) string {
	switch reason {
	case "ARP request for an address not ours":
		return "arp-proxy"
	}
	return "arp-reply"
}

func TestProxyARPAndUnnumbered(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	lo := e.loopback()
	e.addAddr(lo, "10.1.1.1/32")
	e.up(lo)
	// NIC1 is unnumbered to the loopback, as a pod TAP to the pod gateway.
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: 1, IsAdd: true})
	e.up(1)
	e.inject(nic1, ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.1.1.2", [6]byte{}, "10.1.1.1")))
	if r := oneFrame(t, c, nic1); r.arpOp != arpOpReply || r.arpSHA != nic1MAC || r.arpSPA.String() != "10.1.1.1" {
		t.Errorf("unnumbered reply %v", r)
	}
	// Proxy ARP on NIC2, which has no IPv4 at all.
	e.up(2)
	e.ok(&arp.ProxyArpAddDel{IsAdd: true, Proxy: arp.ProxyArp{TableID: 0, Low: ip4("192.168.0.1"), Hi: ip4("192.168.0.9")}})
	e.ok(&arp.ProxyArpIntfcEnableDisable{SwIfIndex: 2, Enable: true})
	e.inject(nic2, ethFrame(broadcastMAC, hostBMAC, etherTypeARP, arpPkt(1, hostBMAC, "172.16.0.5", [6]byte{}, "192.168.0.5")))
	if r := oneFrame(t, c, nic2); r.arpOp != arpOpReply || r.arpSHA != nic2MAC || r.arpSPA.String() != "192.168.0.5" {
		t.Errorf("proxy reply %v", r)
	}
	e.inject(nic2, ethFrame(broadcastMAC, hostBMAC, etherTypeARP, arpPkt(1, hostBMAC, "172.16.0.5", [6]byte{}, "192.168.0.50")))
	none(t, c)
	if e.sim.ErrorCount("arp-disabled", "ARP Disabled on this interface") != 1 {
		t.Errorf("out of range request not dropped by arp-disabled:\n%s", cli(e, "show errors"))
	}
}

func TestRoutingTTLAndICMP(t *testing.T) {
	e, c := l3Env(t)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	e.addRoute(ip.IPRoute{Prefix: pfx("172.16.0.0/16"), Paths: []fib_types.FibPath{viaPath(2, "10.0.1.2")}})
	e.addRoute(ip.IPRoute{Prefix: pfx("172.17.0.0/16"), Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_DROP}}})
	e.addRoute(ip.IPRoute{Prefix: pfx("172.18.0.0/16"), Paths: []fib_types.FibPath{viaPath(2, "10.0.1.9")}})

	t.Run("routed via next hop, TTL-1, rewritten MACs", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.16.5.5", protoUDP, 64, udpL4(1000, 53, "q"))))
		r := oneFrame(t, c, nic2)
		if r.ttl != 63 || r.srcMAC != nic2MAC || r.dstMAC != hostBMAC || !r.csumOK || r.dst.String() != "172.16.5.5" {
			t.Errorf("forwarded %v csum %v", r, r.csumOK)
		}
	})
	t.Run("connected destination", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoTCP, 5, tcpL4(1, 2, tcpSYN))))
		if r := oneFrame(t, c, nic2); r.ttl != 4 || r.dstMAC != hostBMAC {
			t.Errorf("forwarded %v", r)
		}
	})
	t.Run("TTL 1 gets time-exceeded from the receiving interface", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.16.5.5", protoUDP, 1, udpL4(1000, 53, "q"))))
		r := oneFrame(t, c, nic1)
		if r.proto != protoICMP || r.icmpType != icmpTimeExceeded || r.src.String() != "10.0.0.1" || r.dst.String() != "10.0.0.2" || r.ttl != 255 || !r.csumOK {
			t.Errorf("ICMP %v", r)
		}
		none(t, c)
	})
	t.Run("echo to VPP is answered", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.1", protoICMP, 64, icmpEcho(icmpEchoRequest, 7, 1))))
		r := oneFrame(t, c, nic1)
		if r.icmpType != icmpEchoReply || r.src.String() != "10.0.1.1" || r.dst.String() != "10.0.0.2" || r.ttl != 64 || r.sport != 7 || !r.csumOK {
			t.Errorf("echo reply %v", r)
		}
	})
	t.Run("UDP to VPP gets port unreachable", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", protoUDP, 64, udpL4(1000, 9, "x"))))
		if r := oneFrame(t, c, nic1); r.icmpType != icmpUnreach || r.icmpCode != 3 {
			t.Errorf("ICMP %v", r)
		}
	})
	t.Run("DROP route", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.17.0.1", protoUDP, 64, udpL4(1, 2, ""))))
		none(t, c)
	})
	t.Run("no route", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "8.8.8.8", protoUDP, 64, udpL4(1, 2, ""))))
		none(t, c)
		if e.sim.ErrorCount("ip4-drop", "ip4 destination lookup miss") == 0 {
			t.Error("no lookup miss counted")
		}
	})
	t.Run("unresolved next hop: dropped, ARP request sent", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.18.0.1", protoUDP, 64, udpL4(1, 2, ""))))
		r := oneFrame(t, c, nic2)
		if r.etype != etherTypeARP || r.arpOp != arpOpRequest || r.arpTPA.String() != "10.0.1.9" || r.arpSPA.String() != "10.0.1.1" || r.dstMAC != broadcastMAC {
			t.Errorf("ARP request %v", r)
		}
		none(t, c)
	})
	t.Run("glean on a connected subnet", func(t *testing.T) {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.33", protoUDP, 64, udpL4(1, 2, ""))))
		if r := oneFrame(t, c, nic2); r.arpTPA.String() != "10.0.1.33" {
			t.Errorf("ARP request %v", r)
		}
	})
	t.Run("wrong destination MAC is dropped", func(t *testing.T) {
		e.inject(nic1, ethFrame(hostBMAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.16.5.5", protoUDP, 64, udpL4(1, 2, ""))))
		none(t, c)
	})
	t.Run("bad header checksum is dropped", func(t *testing.T) {
		p := ipPkt("10.0.0.2", "172.16.5.5", protoUDP, 64, udpL4(1, 2, ""))
		p[10] ^= 0xff
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, p))
		none(t, c)
	})
	t.Run("admin-down interface: routes of its addresses are gone", func(t *testing.T) {
		e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: 2})
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 64, udpL4(1, 2, ""))))
		none(t, c)
		e.up(2)
	})
	ctr, _ := e.sim.InterfaceCounters(nic1)
	if ctr.RxPackets == 0 || ctr.Drops == 0 || ctr.TxPackets == 0 {
		t.Errorf("counters %+v", ctr)
	}
	contains(t, cli(e, "show interface"), "rx packets", "tx packets", "drops")
}

func TestInterVRFRoute(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	e.ok(&ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: 5}})
	e.ok(&interfaces.SwInterfaceSetTable{SwIfIndex: 2, VrfID: 5})
	e.addAddr(1, "10.0.0.1/24")
	e.addAddr(2, "10.0.1.1/24")
	e.up(1)
	e.up(2)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	// VRF 0 reaches 10.0.1.0/24 by looking it up in VRF 5.
	e.addRoute(ip.IPRoute{TableID: 0, Prefix: pfx("10.0.1.0/24"), Paths: []fib_types.FibPath{lookupPath(5)}})
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 9, udpL4(1, 2, "x"))))
	if r := oneFrame(t, c, nic2); r.ttl != 8 || r.dstMAC != hostBMAC {
		t.Errorf("inter-VRF forwarded %v (TTL drops once, not at the inter-VRF lookup)", r)
	}
}

func TestTraceShowsEveryNodeAndExplainsDrops(t *testing.T) {
	e, c := l3Env(t)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	e.addRoute(ip.IPRoute{Prefix: pfx("172.18.0.0/16"), Paths: []fib_types.FibPath{viaPath(2, "10.0.1.9")}})
	if out := cli(e, "trace add dpdk-input 2"); out != "" {
		t.Fatalf("trace add: %q", out)
	}
	contains(t, cli(e, "trace add foo-input 1"), "not an input node")
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 64, udpL4(1, 2, "x"))))
	oneFrame(t, c, nic2)
	// The operator's question "why did my packet not arrive": the next
	// hop is unresolved, VPP sent an ARP request and dropped the packet.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "172.18.0.1", protoUDP, 64, udpL4(1, 2, "x"))))
	// Only two packets were armed: this one is not traced.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 64, udpL4(1, 2, "x"))))
	out := cli(e, "show trace")
	contains(t, out, "Packet 1", "Packet 2", "dpdk-input", "ethernet-input", "ip4-input", "ip4-lookup", "ip4-rewrite",
		nic2+"-output", "ip4-arp", "no neighbour 10.0.1.9", "error-drop", "address resolution required")
	// The dropped packet lists each node it visited once: the node that
	// decided to drop says why on its one line, then error-drop. The ARP
	// request VPP sent for it is a buffer of its own, with its own record
	// (VPP copies the trace flag to it); the third packet is not traced.
	nodes, texts := traceNodes(out)
	if len(nodes) != 3 {
		t.Fatalf("%d trace records, want 2 packets and the ARP request:\n%s", len(nodes), out)
	}
	if strings.Join(nodes[1], " ") != "dpdk-input ethernet-input ip4-input acl-plugin-in-ip4-fa ip4-lookup ip4-arp error-drop" ||
		texts[1][5] != "no neighbour 10.0.1.9 on "+nic2+"; drop: address resolution required" {
		t.Errorf("trace of the dropped packet:\n%s", out)
	}
	if strings.Join(nodes[2], " ") != "ip4-glean "+nic2+"-output "+nic2+"-tx" || !strings.HasPrefix(texts[2][0], "ARP request who-has 10.0.1.9") {
		t.Errorf("trace of the ARP request:\n%s", out)
	}
	contains(t, cli(e, "show errors"), "ip4-arp", "address resolution required")
	cli(e, "clear trace")
	contains(t, cli(e, "show trace"), "No packets in trace buffer")
}

func TestMTUFragmentsOrAnswersFragNeeded(t *testing.T) {
	e, c := l3Env(t)
	e.neighbor(2, "10.0.1.2", hostBMAC)
	e.neighbor(1, "10.0.0.2", hostAMAC)
	e.ok(&interfaces.SwInterfaceSetMtu{SwIfIndex: 2, Mtu: []uint32{1000, 0, 0, 0}})
	big := ipPkt("10.0.0.2", "10.0.1.2", protoUDP, 64, udpL4(1, 2, strings.Repeat("x", 2472)))
	// DF set: ICMP fragmentation needed carrying the MTU.
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, big))
	fs := c.take(nic1)
	if len(fs) != 1 {
		t.Fatalf("%d ICMP errors", len(fs))
	}
	if r := decodeFrame(t, fs[0]); r.icmpType != icmpUnreach || r.icmpCode != 4 || be16(fs[0][ethHdrLen+ip4HdrLen+6:]) != 1000 {
		t.Errorf("frag needed %v", r)
	}
	none(t, c)
	// DF clear: fragments of at most 1000 bytes, offsets in 8-byte units.
	big[6] = 0
	ip4SetChecksum(big)
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, big))
	fs = c.take(nic2)
	if len(fs) != 3 {
		t.Fatalf("%d fragments, want 3", len(fs))
	}
	total := 0
	for k, f := range fs {
		ipH := f[ethHdrLen:]
		mf := ipH[6]&0x20 != 0
		if len(ipH) > 1000 || checksum(ipH[:ip4HdrLen], 0) != 0 || int(ip4FragOff(ipH))*8 != total || mf != (k < 2) || ip4TTL(ipH) != 63 {
			t.Errorf("fragment %d: len %d off %d mf %v", k, len(ipH), ip4FragOff(ipH), mf)
		}
		total += len(ipH) - ip4HdrLen
	}
	if total != len(big)-ip4HdrLen {
		t.Errorf("fragments carry %d bytes, want %d", total, len(big)-ip4HdrLen)
	}
}

func TestClearCounters(t *testing.T) {
	e, _ := l3Env(t)
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "8.8.8.8", protoUDP, 64, udpL4(1, 2, ""))))
	if c, _ := e.sim.InterfaceCounters(nic1); c.RxPackets != 1 || c.Drops != 1 {
		t.Fatalf("counters %+v", c)
	}
	e.ok(&interfaces.SwInterfaceClearStats{SwIfIndex: 1})
	e.expect(retvalInvalidSwIfIndex, &interfaces.SwInterfaceClearStats{SwIfIndex: 77})
	if c, _ := e.sim.InterfaceCounters(nic1); c != (InterfaceCounters{}) {
		t.Errorf("counters after clear %+v", c)
	}
	contains(t, cli(e, "show errors"), "ip4 destination lookup miss")
	cli(e, "clear errors")
	if strings.Contains(cli(e, "show errors"), "lookup miss") {
		t.Error("errors not cleared")
	}
}
