package vppsim

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

func rule(action acl_types.ACLAction, src, dst string, proto uint8, dport uint16) acl_types.ACLRule {
	r := acl_types.ACLRule{IsPermit: action, SrcPrefix: pfx(src), DstPrefix: pfx(dst), Proto: ip_types.IPProto(proto),
		SrcportOrIcmptypeLast: 65535, DstportOrIcmpcodeLast: 65535}
	if dport != 0 {
		r.DstportOrIcmpcodeFirst, r.DstportOrIcmpcodeLast = dport, dport
	}
	return r
}

const (
	aclDeny    = acl_types.ACL_ACTION_API_DENY
	aclPermit  = acl_types.ACL_ACTION_API_PERMIT
	aclReflect = acl_types.ACL_ACTION_API_PERMIT_REFLECT
)

func (e *testEnv) addACL(idx uint32, tag string, rules ...acl_types.ACLRule) (uint32, int32) {
	e.t.Helper()
	rep := &acl.ACLAddReplaceReply{}
	rv := e.call(&acl.ACLAddReplace{ACLIndex: idx, Tag: tag, Count: uint32(len(rules)), R: rules}, rep)
	return rep.ACLIndex, rv
}

func (e *testEnv) setACLs(sw interface_types.InterfaceIndex, in []uint32, out ...uint32) int32 {
	e.t.Helper()
	l := append(append([]uint32(nil), in...), out...)
	return e.rv(&acl.ACLInterfaceSetACLList{SwIfIndex: sw, Count: uint8(len(l)), NInput: uint8(len(in)), Acls: l})
}

func TestACLAddReplaceDeleteWithVPPRetvals(t *testing.T) {
	e := newEnv(t)
	a, rv := e.addACL(noIndex, "a", rule(aclPermit, "10.0.0.0/8", "0.0.0.0/0", 6, 80))
	b, rv2 := e.addACL(noIndex, "b", rule(aclDeny, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	if rv != 0 || rv2 != 0 || a != 0 || b != 1 {
		t.Fatalf("add = %d/%d, %d/%d; want indexes 0 and 1", a, rv, b, rv2)
	}
	for _, tt := range []struct {
		name string
		req  *acl.ACLAddReplace
		want api.VPPApiError
	}{
		{"replace of an unknown index", &acl.ACLAddReplace{ACLIndex: 7, Tag: "x"}, api.NO_SUCH_ENTRY},
		{"source with host bits", &acl.ACLAddReplace{ACLIndex: noIndex, Count: 1, R: []acl_types.ACLRule{{SrcPrefix: ip_types.Prefix{Address: addrToAPI(netip.MustParseAddr("10.0.0.1")), Len: 8}, DstPrefix: pfx("0.0.0.0/0")}}}, api.INVALID_SRC_ADDRESS},
		{"mixed families", &acl.ACLAddReplace{ACLIndex: noIndex, Count: 1, R: []acl_types.ACLRule{{SrcPrefix: pfx("0.0.0.0/0"), DstPrefix: pfx("::/0")}}}, api.INVALID_SRC_ADDRESS},
		{"inverted port range", &acl.ACLAddReplace{ACLIndex: noIndex, Count: 1, R: []acl_types.ACLRule{{SrcPrefix: pfx("0.0.0.0/0"), DstPrefix: pfx("0.0.0.0/0"), DstportOrIcmpcodeFirst: 90, DstportOrIcmpcodeLast: 80}}}, api.INVALID_VALUE_2},
	} {
		if got := e.rv(tt.req); got != int32(tt.want) {
			t.Errorf("%s: retval %d, want %d", tt.name, got, tt.want)
		}
	}
	// replace in place keeps the index
	if idx, rv := e.addACL(a, "a2", rule(aclPermit, "10.0.0.0/8", "0.0.0.0/0", 17, 53)); rv != 0 || idx != a {
		t.Errorf("replace = %d, %d", idx, rv)
	}
	all := dump[acl.ACLDetails](t, e.ch, &acl.ACLDump{ACLIndex: noIndex})
	if len(all) != 2 || all[0].Tag != "a2" || all[0].R[0].Proto != 17 || all[1].Tag != "b" {
		t.Errorf("dump = %+v", all)
	}
	if one := dump[acl.ACLDetails](t, e.ch, &acl.ACLDump{ACLIndex: 1}); len(one) != 1 || one[0].Tag != "b" {
		t.Errorf("dump 1 = %+v", one)
	}
	if none := dump[acl.ACLDetails](t, e.ch, &acl.ACLDump{ACLIndex: 9}); len(none) != 0 {
		t.Errorf("dump of an unknown index = %+v", none)
	}

	// in use: deleting fails, output checked first
	if rv := e.setACLs(1, []uint32{a}, b); rv != 0 {
		t.Fatalf("set list: %d", rv)
	}
	e.expect(int32(api.ACL_IN_USE_OUTBOUND), &acl.ACLDel{ACLIndex: b})
	e.expect(int32(api.ACL_IN_USE_INBOUND), &acl.ACLDel{ACLIndex: a})
	e.expect(retvalNoSuchEntry, &acl.ACLDel{ACLIndex: 9})
	if rv := e.setACLs(1, nil); rv != 0 {
		t.Fatal(rv)
	}
	e.expect(0, &acl.ACLDel{ACLIndex: a})
	if idx, _ := e.addACL(noIndex, "c", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", 0, 0)); idx != a {
		t.Errorf("new ACL got index %d, want the freed %d", idx, a)
	}
}

func TestACLInterfaceListsSetAtomicallyAndDumped(t *testing.T) {
	e := newEnv(t)
	a, _ := e.addACL(noIndex, "a", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	b, _ := e.addACL(noIndex, "b", rule(aclDeny, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	lo := e.loopback()
	e.expect(retvalInvalidSwIfIndex, &acl.ACLInterfaceSetACLList{SwIfIndex: 99})
	if rv := e.setACLs(lo, []uint32{a}, 7); rv != retvalNoSuchEntry {
		t.Errorf("unknown ACL: %d", rv)
	}
	if rv := e.setACLs(lo, []uint32{a, a}); rv != int32(api.ENTRY_ALREADY_EXISTS) {
		t.Errorf("duplicate ACL: %d", rv)
	}
	if rv := e.setACLs(lo, []uint32{a}, b, a); rv != 0 { // the same ACL in both directions is fine
		t.Fatalf("set: %d", rv)
	}
	one := dump[acl.ACLInterfaceListDetails](t, e.ch, &acl.ACLInterfaceListDump{SwIfIndex: lo})
	if len(one) != 1 || one[0].NInput != 1 || one[0].Count != 3 || one[0].Acls[1] != b {
		t.Errorf("list of lo = %+v", one)
	}
	all := dump[acl.ACLInterfaceListDetails](t, e.ch, &acl.ACLInterfaceListDump{SwIfIndex: allIfaces})
	if len(all) != 4 || all[0].Count != 0 { // local0, two NICs without ACLs, lo
		t.Errorf("list of all = %+v", all)
	}
	// add/del one ACL
	e.expect(retvalValueExist, &acl.ACLInterfaceAddDel{IsAdd: true, IsInput: true, SwIfIndex: lo, ACLIndex: a})
	e.expect(0, &acl.ACLInterfaceAddDel{IsAdd: true, IsInput: true, SwIfIndex: lo, ACLIndex: b})
	e.expect(0, &acl.ACLInterfaceAddDel{IsAdd: false, IsInput: false, SwIfIndex: lo, ACLIndex: a})
	e.expect(retvalNoSuchEntry, &acl.ACLInterfaceAddDel{IsAdd: false, IsInput: false, SwIfIndex: lo, ACLIndex: a})
	one = dump[acl.ACLInterfaceListDetails](t, e.ch, &acl.ACLInterfaceListDump{SwIfIndex: lo})
	if len(one) != 1 || one[0].NInput != 2 || len(one[0].Acls) != 3 || one[0].Acls[1] != b || one[0].Acls[2] != b {
		t.Errorf("list after add/del = %+v", one)
	}
	out := cli(e, "show acl-plugin interface")
	if !strings.Contains(out, "sw_if_index 3:\n  input acl(s): 0, 1\n  output acl(s): 1\n") {
		t.Errorf("show acl-plugin interface:\n%s", out)
	}
	out = cli(e, "show acl-plugin acl")
	if !strings.Contains(out, "acl-index 1 count 1 tag {b}\n           0: ipv4 deny src 0.0.0.0/0 dst 0.0.0.0/0 proto 0 sport 0-65535 dport 0-65535\n  applied inbound on sw_if_index: 3\n  applied outbound on sw_if_index: 3\n") {
		t.Errorf("show acl-plugin acl:\n%s", out)
	}
	// the lists go with the interface
	e.ok(&interfaces.DeleteLoopback{SwIfIndex: lo})
	e.expect(0, &acl.ACLDel{ACLIndex: b})
	lo2 := e.loopback()
	if lo2 != lo {
		t.Fatalf("loopback index %d not reused", lo2)
	}
	if one := dump[acl.ACLInterfaceListDetails](t, e.ch, &acl.ACLInterfaceListDump{SwIfIndex: lo2}); len(one) != 1 || one[0].Count != 0 {
		t.Errorf("new interface with a reused index inherited ACLs: %+v", one)
	}
}

// flow builds an IPv4 flow.
func aclTestFlow(src, dst string, proto uint8, sp, dp uint16) *aclFlow {
	return &aclFlow{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Proto: proto, SrcPort: sp, DstPort: dp}
}

func TestACLEvaluateFirstMatchDenyAtEndAndReflectSessions(t *testing.T) {
	e := newEnv(t)
	const nic = 1
	pods, _ := e.addACL(noIndex, "pods", rule(aclReflect, "10.1.1.2/32", "0.0.0.0/0", 6, 80),
		rule(aclDeny, "10.1.1.2/32", "0.0.0.0/0", 0, 0), rule(aclPermit, "10.1.0.0/16", "0.0.0.0/0", 17, 0))
	icmp, _ := e.addACL(noIndex, "icmp", acl_types.ACLRule{IsPermit: aclPermit, SrcPrefix: pfx("0.0.0.0/0"), DstPrefix: pfx("0.0.0.0/0"),
		Proto: 1, SrcportOrIcmptypeFirst: 8, SrcportOrIcmptypeLast: 8, DstportOrIcmpcodeLast: 255})
	flags, _ := e.addACL(noIndex, "syn-only", acl_types.ACLRule{IsPermit: aclPermit, SrcPrefix: pfx("0.0.0.0/0"), DstPrefix: pfx("0.0.0.0/0"),
		Proto: 6, SrcportOrIcmptypeLast: 65535, DstportOrIcmpcodeLast: 65535, TCPFlagsMask: 0x12, TCPFlagsValue: 0x02})
	if rv := e.setACLs(nic, []uint32{icmp, flags}, pods); rv != 0 {
		t.Fatal(rv)
	}
	now := time.Unix(1000, 0)
	e.sim.mu.Lock()
	defer e.sim.mu.Unlock()
	st := e.sim.st
	st.acl.now = func() time.Time { return now }
	eval := func(input bool, f *aclFlow) bool {
		ok, _ := st.aclEvaluate(nic, input, f)
		return ok
	}
	syn := func(f *aclFlow) *aclFlow { f.TCPFlags = 0x02; return f }
	for _, tt := range []struct {
		name  string
		input bool
		f     *aclFlow
		want  bool
	}{
		{"output: first match permit+reflect", false, aclTestFlow("10.1.1.2", "8.8.8.8", 6, 40000, 80), true},
		{"output: deny of the same source", false, aclTestFlow("10.1.1.2", "8.8.8.8", 6, 40000, 81), false},
		{"output: later permit for others", false, aclTestFlow("10.1.3.4", "8.8.8.8", 17, 40000, 53), true},
		{"output: no match drops", false, aclTestFlow("192.168.1.1", "8.8.8.8", 17, 40000, 53), false},
		{"output: IPv6 never matches IPv4 rules", false, &aclFlow{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), Proto: 17}, false},
		{"input: reply of the reflected flow passes (session)", true, aclTestFlow("8.8.8.8", "10.1.1.2", 6, 80, 40000), true},
		{"input: other reply does not", true, aclTestFlow("8.8.8.8", "10.1.1.2", 6, 81, 40000), false},
		{"input: ICMP echo request (type 8) permitted", true, &aclFlow{Src: netip.MustParseAddr("1.1.1.1"), Dst: netip.MustParseAddr("2.2.2.2"), Proto: 1, ICMPType: 8}, true},
		{"input: ICMP echo reply (type 0) dropped", true, &aclFlow{Src: netip.MustParseAddr("1.1.1.1"), Dst: netip.MustParseAddr("2.2.2.2"), Proto: 1, ICMPType: 0}, false},
		{"input: SYN passes the flags rule", true, syn(aclTestFlow("1.1.1.1", "2.2.2.2", 6, 1, 2)), true},
		{"input: SYN-ACK does not", true, &aclFlow{Src: netip.MustParseAddr("1.1.1.1"), Dst: netip.MustParseAddr("2.2.2.2"), Proto: 6, TCPFlags: 0x12}, false},
		// l4_match_nonfirst_fragment, on by default: a non-first fragment
		// matches the first rule of its protocol, ports and flags aside.
		{"input: non-first fragment matches on the protocol alone", true, &aclFlow{Src: netip.MustParseAddr("1.1.1.1"), Dst: netip.MustParseAddr("2.2.2.2"), Proto: 1, Fragment: true}, true},
		{"input: TCP non-first fragment takes the first TCP rule", true, &aclFlow{Src: netip.MustParseAddr("1.1.1.1"), Dst: netip.MustParseAddr("2.2.2.2"), Proto: 6, Fragment: true}, true},
		{"other interface: no ACL", true, aclTestFlow("1.1.1.1", "2.2.2.2", 6, 1, 2), true},
	} {
		sw := uint32(nic)
		if strings.HasPrefix(tt.name, "other") {
			sw = 2
		}
		if got, reason := st.aclEvaluate(sw, tt.input, tt.f); got != tt.want {
			t.Errorf("%s: permit = %v (%s), want %v", tt.name, got, reason, tt.want)
		}
	}
	// a transient TCP session times out after 120 s
	now = now.Add(121 * time.Second)
	if eval(true, aclTestFlow("8.8.8.8", "10.1.1.2", 6, 80, 40000)) {
		t.Error("reply passed after the transient TCP timeout")
	}
	// an acknowledged one lives 24 h
	eval(false, aclTestFlow("10.1.1.2", "8.8.8.8", 6, 40001, 80))
	ack := aclTestFlow("8.8.8.8", "10.1.1.2", 6, 80, 40001)
	ack.TCPFlags = tcpFlagACK
	eval(true, ack)
	now = now.Add(time.Hour)
	if !eval(true, ack) {
		t.Error("established session expired after an hour")
	}
	// changing the interface's lists clears its sessions
	st.aclSetLists(st.ifaces[nic], []uint32{icmp}, []uint32{pods})
	if eval(true, ack) {
		t.Error("session survived a change of the interface's ACLs")
	}
}

// TestACLInTheForwardingPathAndTheSNATHazard drives packets through the
// graph with the ACL plugin's own state: an output ACL on the SNAT output
// interface sees the node address (NAT output runs first), so a pod's egress
// rule there fails open; the same rule on the pod-facing input holds; a
// permit+reflect session lets the reply pass a deny-all output ACL.
func TestACLInTheForwardingPathAndTheSNATHazard(t *testing.T) {
	n := newNATEnv(t, 0)
	e := n.testEnv
	const outside, podSide = 1, 2
	denyPod1, _ := e.addACL(noIndex, "deny-pod1", rule(aclDeny, pod1IP+"/32", "0.0.0.0/0", 0, 0), rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	denyAll, _ := e.addACL(noIndex, "deny-all", rule(aclDeny, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	egress, _ := e.addACL(noIndex, "pod1-egress", rule(aclReflect, pod1IP+"/32", "8.8.8.8/32", 6, 443),
		rule(aclDeny, pod1IP+"/32", "0.0.0.0/0", 0, 0), rule(aclReflect, "0.0.0.0/0", "0.0.0.0/0", 0, 0))

	// 1. the hazard: the output ACL of the SNAT interface never sees the pod
	if rv := e.setACLs(outside, nil, denyPod1); rv != 0 {
		t.Fatal(rv)
	}
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoTCP, 64, tcpL4(40000, 80, tcpSYN)))
	if f := oneFrame(t, n.c, nic1); f.src.String() != nodeIP {
		t.Fatalf("SNATed packet = %+v", f)
	}
	// 2. the fix: the pod's egress rules on the pod-facing input
	if rv := e.setACLs(outside, nil); rv != 0 {
		t.Fatal(rv)
	}
	if rv := e.setACLs(podSide, []uint32{egress}, denyAll); rv != 0 {
		t.Fatal(rv)
	}
	contains(t, cli(e, "trace add dpdk-input 10")+"ok", "ok")
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoTCP, 64, tcpL4(40001, 80, tcpSYN)))
	none(t, n.c)
	contains(t, cli(e, "show trace"), "acl-plugin-in-ip4-fa", "pod1-egress", "deny")
	// 3. allowed: out, and the reply comes back through the deny-all output ACL
	n.fromPod(pod1MAC, ipPkt(pod1IP, "8.8.8.8", protoTCP, 64, tcpL4(40002, 443, tcpSYN)))
	out := oneFrame(t, n.c, nic1)
	n.fromOutside(ipPkt("8.8.8.8", nodeIP, protoTCP, 60, tcpL4(443, out.sport, tcpSYN|tcpACK)))
	if back := oneFrame(t, n.c, nic2); back.dst.String() != pod1IP {
		t.Errorf("reply = %+v, want it delivered to the pod through its session", back)
	}
	// 4. an unsolicited packet to the pod is dropped by the output ACL
	n.fromOutside(ipPkt("8.8.8.8", pod1IP, protoTCP, 60, tcpL4(443, 5555, tcpSYN)))
	none(t, n.c)
}

// TestRequestHookSeesTheStateEachRequestLeft: the hook runs for every
// executed request, before its reply, and the inspection methods show the
// state that request left (InterfaceACLs by tag, "#<index>" if untagged).
func TestRequestHookSeesTheStateEachRequestLeft(t *testing.T) {
	e := newEnv(t)
	a, _ := e.addACL(noIndex, "a", rule(aclPermit, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	b, _ := e.addACL(noIndex, "", rule(aclDeny, "0.0.0.0/0", "0.0.0.0/0", 0, 0))
	lo := e.loopback()
	var (
		mu   sync.Mutex // the hook runs on the simulator's goroutine
		seen []string
	)
	e.sim.SetRequestHook(func(name string) {
		in, out := e.sim.InterfaceACLs(uint32(lo))
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %v %v", name, in, out))
		mu.Unlock()
	})
	if rv := e.setACLs(lo, []uint32{a}, b); rv != 0 {
		t.Fatalf("set: %d", rv)
	}
	if rv := e.setACLs(lo, nil); rv != 0 {
		t.Fatalf("clear: %d", rv)
	}
	e.sim.SetRequestHook(nil)
	if rv := e.setACLs(lo, []uint32{b}); rv != 0 {
		t.Fatalf("set again: %d", rv)
	}
	want := fmt.Sprintf("acl_interface_set_acl_list [a] [#%d]\nacl_interface_set_acl_list [] []", b)
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	if got != want {
		t.Errorf("hook saw:\n%s\nwant:\n%s", got, want)
	}
	if in, out := e.sim.InterfaceACLs(uint32(lo)); fmt.Sprint(in, out) != fmt.Sprintf("[#%d] []", b) {
		t.Errorf("InterfaceACLs = %v %v", in, out)
	}
	if in, out := e.sim.InterfaceACLs(999); in != nil || out != nil {
		t.Errorf("InterfaceACLs of an unknown interface = %v %v", in, out)
	}
}
