package vppsim

import (
	"encoding/binary"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
)

// IPv6 forwarding by traffic (docs/dev-guide/VPP-FORWARDING.md §11): each
// rule by packets in, packets out, and "show trace" explaining each drop.

func TestIP6NotEnabledInterfaceDropsIPv6(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	e.addAddr(1, "10.0.0.1/24") // IPv4 only
	e.up(1)
	tr := traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, nic1G6, protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1))))
	})
	none(t, c)
	contains(t, tr, "ip6-input", "ip6-not-enabled", "drop: ip6 not enabled on the interface")
	// Enabling IPv6 (link-local only) lets the link-local ping through.
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 1, Enable: true})
	ll := eui64(nic1MAC)
	e.neighbor(1, "fe80::2", hostAMAC)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt("fe80::2", ll, protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1))))
	r := one6(t, c, nic1)
	if r.icmpType != icmp6EchoReply || r.src.String() != ll || r.dst.String() != "fe80::2" || r.dstMAC != hostAMAC || r.srcMAC != nic1MAC || !r.csumOK {
		t.Errorf("link-local echo reply %v (checksum ok %v)", r, r.csumOK)
	}
}

func TestIP6InputChecks(t *testing.T) {
	e, c, _ := l3Env6(t)
	echo := func(hop uint8, dst string) []byte {
		return ip6Pkt(hostA6, dst, protoICMP6, hop, icmpEcho(icmp6EchoRequest, 7, 1))
	}
	badVersion := echo(64, nic1G6)
	badVersion[0] = 0x40
	tests := []struct {
		name  string
		pkt   []byte
		node  string
		drop  string
		reply uint8 // ICMPv6 type sent back to host A, 0 if none
	}{
		{name: "version other than 6", pkt: badVersion, node: "ip6-input", drop: "ip6 version != 6"},
		{name: "shorter than the header", pkt: echo(64, nic1G6)[:39], node: "ip6-input", drop: "ip6 length < 40 bytes"},
		{name: "hop limit 0 gets time exceeded", pkt: echo(0, nic1G6), node: "ip6-input", drop: "ip6 ttl <= 1", reply: icmp6TimeExceeded},
		{name: "hop limit 1 to VPP is answered", pkt: echo(1, nic1G6), reply: icmp6EchoReply},
		{name: "hop limit 1 routed gets time exceeded", pkt: echo(1, hostB6), node: "ip6-rewrite", drop: "ip6 ttl <= 1", reply: icmp6TimeExceeded},
	}
	e.neighbor(2, hostB6, hostBMAC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, replied := injectFromA(t, e, c, tc.pkt, tc.node, tc.drop, tc.reply != 0)
			if !replied {
				return
			}
			if r.icmpType != tc.reply || r.dst.String() != hostA6 || r.src.String() != nic1G6 || !r.csumOK {
				t.Fatalf("got %v (checksum ok %v), want ICMPv6 type %d from %s", r, r.csumOK, tc.reply, nic1G6)
			}
			if tc.reply == icmp6TimeExceeded && (r.hop != 255 || r.icmpCode != 0 || len(r.quoted) < ip6HdrLen) {
				t.Errorf("time exceeded: hop limit %d code %d quoting %d bytes", r.hop, r.icmpCode, len(r.quoted))
			}
			if tc.reply == icmp6EchoReply && r.hop != 64 {
				t.Errorf("echo reply hop limit %d, want 64", r.hop)
			}
		})
	}
}

// injectFromA sends pkt from host A into NIC1; a drop reason, if given,
// must be in the trace at node and counted; with reply it returns the one
// frame sent back to host A, else it checks that nothing left.
func injectFromA(t *testing.T, e *testEnv, c *capture, pkt []byte, node, drop string, reply bool) (pkt6Info, bool) {
	t.Helper()
	c.reset()
	tr := traceOf(e, func() { e.inject(nic1, eth6(nic1MAC, hostAMAC, pkt)) })
	if drop != "" {
		contains(t, tr, node, "drop: "+drop)
		if e.sim.ErrorCount(node, drop) == 0 {
			t.Errorf("no %s %q counted", node, drop)
		}
	}
	if !reply {
		none(t, c)
		return pkt6Info{}, false
	}
	return one6(t, c, nic1), true
}

func TestIP6LocalDelivery(t *testing.T) {
	e, c, _ := l3Env6(t)
	badICMP := ip6Pkt(hostA6, nic1G6, protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1))
	badICMP[ip6HdrLen+2] ^= 0xff
	badUDP := ip6Pkt(hostA6, nic1G6, protoUDP, 64, udpL4(1000, 53, "q"))
	badUDP[ip6HdrLen+6] ^= 0xff
	longUDP := ip6Pkt(hostA6, nic1G6, protoUDP, 64, udpL4(1000, 53, "q"))
	binary.BigEndian.PutUint16(longUDP[ip6HdrLen+4:], 100)
	tests := []struct {
		name  string
		pkt   []byte
		node  string
		drop  string
		reply uint8
		code  uint8
	}{
		{name: "UDP to a closed port gets port unreachable", pkt: ip6Pkt(hostA6, nic1G6, protoUDP, 64, udpL4(1000, 53, "q")),
			node: "ip6-udp-lookup", drop: "No listener for dst port", reply: icmp6DestUnreach, code: icmp6CodePortUnreach},
		{name: "TCP goes to ip6-punt", pkt: ip6Pkt(hostA6, nic1G6, protoTCP, 64, tcpL4(1000, 22, tcpSYN)), node: "ip6-local", drop: "unknown ip protocol"},
		{name: "bad ICMPv6 checksum", pkt: badICMP, node: "ip6-local", drop: "bad icmp checksum"},
		{name: "bad UDP checksum", pkt: badUDP, node: "ip6-local", drop: "bad udp checksum"},
		{name: "UDP longer than the payload", pkt: longUDP, node: "ip6-local", drop: "inconsistent udp/ip lengths"},
		{name: "UDP from an unrouted source", pkt: ip6Pkt("2001:db8:77::1", nic1G6, protoUDP, 64, udpL4(1000, 53, "q")),
			node: "ip6-local", drop: "ip6 source lookup miss"},
		{name: "an echo reply no ping waits for is punted", pkt: ip6Pkt(hostA6, nic1G6, protoICMP6, 64, icmpEcho(icmp6EchoReply, 1, 1)),
			node: "ip6-icmp-echo-reply", drop: "ip6 punt"},
		{name: "an unknown ICMPv6 type is punted", pkt: ip6Pkt(hostA6, nic1G6, protoICMP6, 64, []byte{200, 0, 0, 0, 0, 0, 0, 0}),
			node: "ip6-icmp-input", drop: "unknown type"},
		{name: "a later check overrides an earlier one: unknown type, code above its maximum (0)",
			pkt: ip6Pkt(hostA6, nic1G6, protoICMP6, 64, []byte{200, 1, 0, 0, 0, 0, 0, 0}), node: "ip6-icmp-input", drop: "invalid code for type"},
		{name: "time exceeded received is punted, its code 1 valid", pkt: ip6Pkt(hostA6, nic1G6, protoICMP6, 64, []byte{icmp6TimeExceeded, 1, 0, 0, 0, 0, 0, 0}),
			node: "ip6-icmp-input", drop: "unknown type"},
		{name: "echo request with a code other than 0", pkt: ip6Pkt(hostA6, nic1G6, protoICMP6, 64, []byte{icmp6EchoRequest, 1, 0, 0, 0, 1, 0, 1}),
			node: "ip6-icmp-input", drop: "invalid code for type"},
		{name: "the address of another interface is local too", pkt: ip6Pkt(hostA6, nic2G6, protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1)),
			reply: icmp6EchoReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, replied := injectFromA(t, e, c, tc.pkt, tc.node, tc.drop, tc.reply != 0)
			if !replied {
				return
			}
			if r.icmpType != tc.reply || r.icmpCode != tc.code || r.dst.String() != hostA6 || !r.csumOK {
				t.Fatalf("got %v (checksum ok %v), want ICMPv6 %d/%d", r, r.csumOK, tc.reply, tc.code)
			}
		})
	}
	// ICMPv6 is exempt from the source check: an echo from an unrouted
	// source is answered, and the reply dies in the lookup.
	c.reset()
	tr := traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt("2001:db8:77::1", nic1G6, protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1))))
	})
	none(t, c)
	contains(t, tr, "ip6-icmp-echo-request", "drop: ip6 destination lookup miss")
}

func TestIP6RoutingResolvesByNeighbourDiscovery(t *testing.T) {
	e, c, clk := l3Env6(t)
	pkt := ip6Pkt(hostA6, hostB6, protoUDP, 64, udpL4(1000, 2000, "x"))
	tr := traceOf(e, func() { e.inject(nic1, eth6(nic1MAC, hostAMAC, pkt)) })
	contains(t, tr, "ip6-glean", "drop: neighbor solicitations sent", "NS who-has "+hostB6)
	ns := one6(t, c, nic2)
	nic2LL := eui64(nic2MAC)
	if ns.icmpType != icmp6NeighborSolicit || ns.target.String() != hostB6 || ns.src.String() != nic2LL || ns.dst.String() != solicitedNode(hostB6) ||
		ns.dstMAC != solicitedMAC(hostB6) || ns.srcMAC != nic2MAC || ns.hop != 255 || ns.optType != icmp6OptSrcLinkLayer || ns.optMAC != nic2MAC || !ns.csumOK {
		t.Fatalf("neighbour solicitation %v target %s option %d %s (checksum ok %v)", ns, ns.target, ns.optType, macString(ns.optMAC), ns.csumOK)
	}
	// A second packet within the throttle window sends no second NS.
	e.inject(nic1, eth6(nic1MAC, hostAMAC, pkt))
	none(t, c)
	if e.sim.ErrorCount("ip6-glean", "throttled") != 1 {
		t.Errorf("second solicitation not throttled:\n%s", cli(e, "show errors"))
	}
	clk.Step(2 * time.Millisecond)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, pkt))
	if ns := c.take(nic2); len(ns) != 1 {
		t.Errorf("%d solicitations after the throttle window, want 1", len(ns))
	}
	// Host B answers; the next packet is forwarded, hop limit - 1.
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt(hostB6, nic2LL, protoICMP6, 255, naL4(hostB6, &hostBMAC))))
	none(t, c)
	e.inject(nic1, eth6(nic1MAC, hostAMAC, pkt))
	r := one6(t, c, nic2)
	if r.dst.String() != hostB6 || r.hop != 63 || r.dstMAC != hostBMAC || r.srcMAC != nic2MAC || !r.csumOK {
		t.Errorf("forwarded %v", r)
	}
}

func TestIP6RoutesAndReject(t *testing.T) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	e.addRoute(ip.IPRoute{Prefix: pfx("2001:db8:100::/48"), Paths: []fib_types.FibPath{viaPath6(2, hostB6)}})
	e.addRoute(ip.IPRoute{Prefix: pfx("2001:db8:200::/48"), Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH}}})
	e.addRoute(ip.IPRoute{Prefix: pfx("2001:db8:300::/48"), Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT}}})
	e.addRoute(ip.IPRoute{Prefix: pfx("2001:db8:400::/48"), Paths: []fib_types.FibPath{{SwIfIndex: noIndex, Type: fib_types.FIB_API_PATH_TYPE_DROP}}})

	e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:100::5", protoUDP, 64, udpL4(1, 2, "x"))))
	if r := one6(t, c, nic2); r.dst.String() != "2001:db8:100::5" || r.dstMAC != hostBMAC || r.hop != 63 {
		t.Errorf("routed via the next hop: %v", r)
	}
	for _, tc := range []struct {
		dst  string
		code uint8
	}{{"2001:db8:200::5", icmp6CodeNoRoute}, {"2001:db8:300::5", icmp6CodeProhibited}} {
		tr := traceOf(e, func() {
			e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, tc.dst, protoUDP, 64, udpL4(1, 2, "x"))))
		})
		r := one6(t, c, nic1)
		if r.icmpType != icmp6DestUnreach || r.icmpCode != tc.code || r.src.String() != nic1G6 {
			t.Errorf("to %s: %v, want ICMPv6 1/%d", tc.dst, r, tc.code)
		}
		contains(t, tr, "ip6-null", "drop: destination unreachable")
	}
	tr := traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:400::5", protoUDP, 64, udpL4(1, 2, "x"))))
	})
	none(t, c)
	contains(t, tr, "drop: ip6 drop")
	tr = traceOf(e, func() {
		e.inject(nic1, eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, "2001:db8:999::5", protoUDP, 64, udpL4(1, 2, "x"))))
	})
	none(t, c)
	contains(t, tr, "drop: ip6 destination lookup miss")
}

func TestIP6PacketTooBig(t *testing.T) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	big := ip6Pkt(hostA6, hostB6, protoUDP, 64, udpL4(1, 2, string(make([]byte, 1400))))
	e.ok(&interfaces.SwInterfaceSetMtu{SwIfIndex: 2, Mtu: []uint32{9000, 0, 1280, 0}})
	tr := traceOf(e, func() { e.inject(nic1, eth6(nic1MAC, hostAMAC, big)) })
	contains(t, tr, "ip6-rewrite", "drop: ip6 MTU exceeded")
	r := one6(t, c, nic1)
	if r.icmpType != icmp6PacketTooBig || r.icmpData != 1280 || r.dst.String() != hostA6 || len(r.quoted) > ip6MinMTU-48 || !r.csumOK {
		t.Errorf("packet too big %v mtu %d quoting %d bytes", r, r.icmpData, len(r.quoted))
	}
	if n := ip6HdrLen + len(r.l4); n > ip6MinMTU {
		t.Errorf("the error is %d bytes, more than 1280", n)
	}
	// An MTU below 1280 is not checked.
	e.ok(&interfaces.SwInterfaceSetMtu{SwIfIndex: 2, Mtu: []uint32{9000, 0, 1000, 0}})
	e.inject(nic1, eth6(nic1MAC, hostAMAC, big))
	if r := one6(t, c, nic2); r.dst.String() != hostB6 {
		t.Errorf("with an IPv6 MTU below 1280: %v", r)
	}
}

func TestIP6ErrorsNeedAGlobalSourceAddress(t *testing.T) {
	e, c, clk := l3Env6(t)
	// NIC2 has IPv6 but only its link-local address.
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: false, Prefix: awp("2001:db8:2::1/64")})
	e.ok(&ip.SwInterfaceIP6EnableDisable{SwIfIndex: 2, Enable: true})
	e.addRoute(ip.IPRoute{Prefix: pfx("2001:db8:1::/64"), Paths: []fib_types.FibPath{viaPath6(1, "")}})
	tr := traceOf(e, func() {
		e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt("2001:db8:1::77", hostA6, protoUDP, 1, udpL4(1, 2, "x"))))
	})
	none(t, c)
	contains(t, tr, "no source address on "+nic2+": error dropped", "drop: ip6 ttl <= 1")
	// To a link-local source, the error comes from the link-local address.
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt("fe80::b", hostA6, protoUDP, 1, udpL4(1, 2, "x"))))
	e.neighbor(2, "fe80::b", hostBMAC)
	clk.Step(2 * time.Millisecond) // past ip6-icmp-error's throttle window
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt("fe80::b", hostA6, protoUDP, 1, udpL4(1, 2, "x"))))
	fs := c.take(nic2)
	if len(fs) != 2 {
		t.Fatalf("%d frames, want an NS then the error", len(fs))
	}
	if r := decode6(t, fs[1]); r.icmpType != icmp6TimeExceeded || r.src.String() != eui64(nic2MAC) || r.dst.String() != "fe80::b" || r.dstMAC != hostBMAC {
		t.Errorf("time exceeded to a link-local source: %v", r)
	}
}

func TestIP6Multicast(t *testing.T) {
	e, c, _ := l3Env6(t)
	// ff02::1 is accepted and the echo answered from the group (derived).
	e.inject(nic1, eth6([6]byte{0x33, 0x33, 0, 0, 0, 1}, hostAMAC, ip6Pkt(hostA6, "ff02::1", protoICMP6, 1, icmpEcho(icmp6EchoRequest, 1, 1))))
	fs := c.take(nic1)
	if len(fs) != 2 {
		// Host A is a static neighbour: the reply needs no NS.
		t.Logf("frames: %d", len(fs))
	}
	var r pkt6Info
	for _, f := range fs {
		if d := decode6(t, f); d.icmpType == icmp6EchoReply {
			r = d
		}
	}
	if r.src.String() != "ff02::1" || r.dst.String() != hostA6 {
		t.Errorf("echo reply to the all-nodes group %v", r)
	}
	c.reset()
	tr := traceOf(e, func() {
		e.inject(nic1, eth6([6]byte{0x33, 0x33, 0, 0, 0, 5}, hostAMAC, ip6Pkt(hostA6, "ff05::5", protoICMP6, 64, icmpEcho(icmp6EchoRequest, 1, 1))))
	})
	none(t, c)
	contains(t, tr, "ip6-mfib-forward-rpf", "drop: Multicast RPF check failed")
	// An unnumbered interface passes ip6-not-enabled but is not an mFIB
	// accepting interface without its own IPv6 link.
	lo := e.loopback()
	e.addAddr(lo, "2001:db8:9::1/128")
	e.ok(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo, UnnumberedSwIfIndex: 2, IsAdd: true})
	e.ok(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 2, IsAdd: false, Prefix: awp("2001:db8:2::1/64")})
	tr = traceOf(e, func() {
		e.inject(nic2, eth6(solicitedMAC("2001:db8:9::1"), hostBMAC, ip6Pkt("fe80::b", solicitedNode("2001:db8:9::1"), protoICMP6, 255, nsL4("2001:db8:9::1", &hostBMAC))))
	})
	none(t, c)
	contains(t, tr, "drop: Multicast RPF check failed")
}

// TestIP6ErrorsAreThrottledPerSourceAndDestination: ip6-icmp-error lets
// one error per (src, dst) bucket through per millisecond and counts the
// others "error message dropped".
func TestIP6ErrorsAreThrottledPerSourceAndDestination(t *testing.T) {
	e, c, clk := l3Env6(t)
	expired := eth6(nic1MAC, hostAMAC, ip6Pkt(hostA6, hostB6, protoUDP, 0, udpL4(1, 2, "x")))
	e.inject(nic1, expired)
	e.inject(nic1, expired)
	if n := len(c.take(nic1)); n != 1 {
		t.Errorf("%d errors for two packets within 1 ms, want 1", n)
	}
	if e.sim.ErrorCount("ip6-icmp-error", "error message dropped") != 1 {
		t.Errorf("the throttled error is not counted:\n%s", cli(e, "show errors"))
	}
	clk.Step(2 * time.Millisecond)
	e.inject(nic1, expired)
	if n := len(c.take(nic1)); n != 1 {
		t.Errorf("%d errors after the window, want 1", n)
	}
}
