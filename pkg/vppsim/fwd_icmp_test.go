package vppsim

import (
	"bytes"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip"
)

// rejectRoute is a route whose one path is of a special type.
func rejectRoute(prefix string, typ fib_types.FibPathType) ip.IPRoute {
	return ip.IPRoute{Prefix: pfx(prefix), NPaths: 1, Paths: []fib_types.FibPath{
		{SwIfIndex: noIndex, Type: typ, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}}}
}

// icmpQuote returns the packet an ICMP error frame quotes.
func icmpQuote(f []byte) []byte {
	h := f[ethHdrLen:]
	return ip4L4(h)[8:]
}

// TestRejectRoutesAnswerICMP sends TCP and UDP from a pod of a Contiv-like
// node (NAT44-ED with forwarding on) to addresses with ICMP_UNREACH and
// ICMP_PROHIBIT routes, as a Service without endpoints would have: the
// pod gets ICMP 3/1 or 3/10 at once, from its gateway, quoting what it
// sent; nothing leaves the node toward the default gateway.
func TestRejectRoutesAnswerICMP(t *testing.T) {
	n := newNATEnv(t, 0)
	n.addRoute(rejectRoute("10.96.0.20/32", fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH))
	n.addRoute(rejectRoute("10.96.0.21/32", fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT))
	tests := []struct {
		name string
		pkt  []byte
		code uint8
	}{
		{"TCP SYN to unreach", ipPkt(pod1IP, "10.96.0.20", protoTCP, 64, tcpL4(40000, 80, tcpSYN)), icmpCodeHostUnreach},
		{"UDP to unreach", ipPkt(pod1IP, "10.96.0.20", protoUDP, 64, udpL4(40001, 53, "query")), icmpCodeHostUnreach},
		{"TCP SYN to prohibit", ipPkt(pod1IP, "10.96.0.21", protoTCP, 64, tcpL4(40002, 80, tcpSYN)), icmpCodeHostProhibited},
		{"UDP to prohibit", ipPkt(pod1IP, "10.96.0.21", protoUDP, 64, udpL4(40003, 53, "query")), icmpCodeHostProhibited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n.clk.Step(time.Second) // a new window of both rate limits
			n.fromPod(pod1MAC, tt.pkt)
			frames := n.c.take(nic2)
			if len(frames) != 1 {
				t.Fatalf("%d frames back to the pod, want 1 ICMP error; elsewhere %d\n%s", len(frames), n.c.total(), cli(n.testEnv, "show errors"))
			}
			r := decodeFrame(t, frames[0])
			if r.proto != protoICMP || r.icmpType != icmpUnreach || r.icmpCode != tt.code || !r.csumOK {
				t.Errorf("got %v, want ICMP 3/%d", r, tt.code)
			}
			if r.src.String() != "10.1.1.1" || r.dst.String() != pod1IP || r.ttl != 255 || r.dstMAC != pod1MAC {
				t.Errorf("ICMP error %v: want from the pod's gateway 10.1.1.1, TTL 255, to the pod", r)
			}
			if q := icmpQuote(frames[0]); !bytes.Equal(q, tt.pkt) {
				t.Errorf("quoted packet\n%x\nwant\n%x", q, tt.pkt)
			}
			none(t, n.c)
		})
	}
}

// TestRejectRoutesAreRateLimited checks ip4-null's rate limit: one error
// per (src, dst) per 0.1 s window, then again in the next window.
func TestRejectRoutesAreRateLimited(t *testing.T) {
	n := newNATEnv(t, 0)
	n.addRoute(rejectRoute("10.96.0.20/32", fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH))
	syn := func(sport uint16) int {
		n.fromPod(pod1MAC, ipPkt(pod1IP, "10.96.0.20", protoTCP, 64, tcpL4(sport, 80, tcpSYN)))
		return len(n.c.take(nic2))
	}
	if got := syn(40000); got != 1 {
		t.Fatalf("first SYN: %d errors, want 1", got)
	}
	n.clk.Step(50 * time.Millisecond) // past ip4-icmp-error's 10 µs, within ip4-null's 0.1 s
	if got := syn(40001); got != 0 {
		t.Errorf("second SYN of the window: %d errors, want 0", got)
	}
	if c := n.sim.ErrorCount("ip4-null", "ICMP error rate limited"); c != 1 {
		t.Errorf("rate-limited count %d, want 1", c)
	}
	n.clk.Step(50 * time.Millisecond) // exactly 0.1 s after the window opened: still the same window
	if got := syn(40002); got != 0 {
		t.Errorf("SYN at 0.1 s: %d errors, want 0", got)
	}
	n.clk.Step(time.Millisecond)
	if got := syn(40003); got != 1 {
		t.Errorf("SYN of the next window: %d errors, want 1", got)
	}
	none(t, n.c)
}

// TestICMPErrorThrottle checks ip4-icmp-error's own rate limit, which all
// ICMP errors pass: a second error about the same (src, dst) within 10 µs
// is not sent.
func TestICMPErrorThrottle(t *testing.T) {
	n := newNATEnv(t, 0)
	udp := func(port uint16) int {
		n.fromOutside(ipPkt(hostAIP, nodeIP, protoUDP, 64, udpL4(50000, port, "x")))
		return len(n.c.take(nic1))
	}
	if got := udp(7777); got != 1 {
		t.Fatalf("first port unreachable: %d frames", got)
	}
	if got := udp(7778); got != 0 {
		t.Errorf("second within 10 µs: %d frames, want 0", got)
	}
	n.clk.Step(11 * time.Microsecond)
	if got := udp(7779); got != 1 {
		t.Errorf("after 11 µs: %d frames, want 1", got)
	}
}

// TestICMPErrorSourceIsClosestAddress: the source of an ICMP error is the
// receiving interface's address sharing the longest prefix with the
// destination (ip4_sas_by_sw_if_index).
func TestICMPErrorSourceIsClosestAddress(t *testing.T) {
	e, c := l3Env(t)
	e.addAddr(1, "172.30.0.1/24") // added after 10.0.0.1/24
	e.neighbor(1, "172.30.0.7", hostAMAC)
	e.addRoute(rejectRoute("10.50.0.0/16", fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH))
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("172.30.0.7", "10.50.0.1", protoUDP, 64, udpL4(1, 2, ""))))
	if r := oneFrame(t, c, nic1); r.src.String() != "172.30.0.1" || r.icmpCode != icmpCodeHostUnreach {
		t.Errorf("ICMP error %v, want from 172.30.0.1", r)
	}
}

// TestContivRejectRoutesInBothVRFs: on a Contiv node, a Service IP with
// no endpoints rejected by an ICMP_PROHIBIT route in the pod VRF (for
// pods) and in VRF 0 (for the NIC): a pod's SYN gets the error from its
// gateway; an outside client's SYN (forwarding-bypass session at the NIC)
// gets it from the node IP, through the NIC's output feature unchanged.
func TestContivRejectRoutesInBothVRFs(t *testing.T) {
	n := newContivNode(t)
	const rejected = "10.96.0.30"
	for _, vrf := range []uint32{0, 1} {
		r := rejectRoute(rejected+"/32", fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT)
		r.TableID = vrf
		n.addRoute(r)
	}
	n.fromPodIP(pod1IP, ipPkt(pod1IP, rejected, protoTCP, 64, tcpL4(40000, 80, tcpSYN)))
	if r := oneFrame(t, n.c, nic2); r.icmpType != icmpUnreach || r.icmpCode != icmpCodeHostProhibited || r.src.String() != "10.1.1.1" || r.dst.String() != pod1IP {
		t.Errorf("pod got %v", r)
	}
	// A new window of ip4-null's rate limit: two (src, dst) pairs share
	// one of its 4 buckets with odds 1/4 within 0.1 s.
	n.clk.Step(time.Second)
	syn := ipPkt(hostAIP, rejected, protoTCP, 64, tcpL4(41000, 80, tcpSYN))
	n.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, syn))
	f := n.c.take(nic1)
	if len(f) != 1 {
		t.Fatalf("outside client: %d frames back\n%s", len(f), cli(n.testEnv, "show errors"))
	}
	if r := decodeFrame(t, f[0]); r.icmpType != icmpUnreach || r.icmpCode != icmpCodeHostProhibited || r.src.String() != nodeIP || r.dst.String() != hostAIP {
		t.Errorf("outside client got %v", r)
	}
	if q := icmpQuote(f[0]); !bytes.Equal(q, syn) {
		t.Errorf("quoted %x, want %x", q, syn)
	}
	none(t, n.c)
}
