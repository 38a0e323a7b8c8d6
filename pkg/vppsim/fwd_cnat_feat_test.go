package vppsim

import (
	"net/netip"
	"strings"
	"testing"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// cnatHairpinEnv is cnatEnv with the K8S SNAT policy (SNAT address the
// node IP, nic2 in the POD map), a TCP ClusterIP VIP:80 whose only backend
// is pod 1 itself, and the given cnat features enabled on the pods' nic2.
func cnatHairpinEnv(t *testing.T, feats ...string) (*testEnv, *capture) {
	e, c, _ := cnatEnv(t)
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP4: ip4(cnatNodeIP), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	e.ok(&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 2, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	e.mustCnat(cnat.CnatTranslation{Vip: apiEP(cnatVIP, 80), IPProto: ip_types.IP_API_PROTO_TCP,
		Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP("0.0.0.0", 0), DstEp: apiEP(cnatPod1, 8080)}}})
	for _, f := range feats {
		arc := "ip4-unicast"
		if f == cnatOutput4 {
			arc = "ip4-output"
		}
		e.ok(&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: arc, FeatureName: f})
	}
	return e, c
}

// A pod reaching itself through its Service: cnat-input DNATs on the pod's
// interface, cnat-output on the same interface sees source = destination
// (K8S policy rule 4) with the egress interface known and SNATs, so the pod
// gets its own packet from the SNAT address; its reply is un-SNATed by
// cnat-input and un-DNATed by cnat-output and comes back from the VIP.
func TestCnatHairpinPodToItselfThroughItsServiceIsSourceNATed(t *testing.T) {
	e, c := cnatHairpinEnv(t, cnatInput4, cnatOutput4)
	tr := traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatVIP, protoTCP, 64, tcpL4(33000, 80, tcpSYN))))
	})
	r := oneFrame(t, c, nic2)
	if r.dstMAC != podMACs[0] || r.src.String() != cnatNodeIP || r.sport != cnatMinSrcPort ||
		r.dst.String() != cnatPod1 || r.dport != 8080 || !r.csumOK {
		t.Fatalf("hairpin SYN %v, want %s:49152 -> %s:8080 to the pod itself\n%s", r, cnatNodeIP, cnatPod1, tr)
	}
	contains(t, tr, "cnat-input-ip4", "created session [10.0.1.2;33000 -> 10.96.0.10;80, TCP] => 10.0.1.2;33000 -> 10.0.1.2;8080",
		"cnat-output-ip4", "created session [10.0.1.2;33000 -> 10.0.1.2;8080, TCP] => 10.0.0.1;49152 -> 10.0.1.2;8080")
	if strings.Contains(tr, cnatTx4) {
		t.Errorf("the feature path translated, ip4-cnat-tx must not run:\n%s", tr)
	}
	tr = traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatNodeIP, protoTCP, 64, tcpL4(8080, cnatMinSrcPort, tcpSYN|tcpACK))))
	})
	back := oneFrame(t, c, nic2)
	if back.dstMAC != podMACs[0] || back.src.String() != cnatVIP || back.sport != 80 ||
		back.dst.String() != cnatPod1 || back.dport != 33000 || !back.csumOK {
		t.Fatalf("hairpin SYN-ACK %v, want %s:80 -> %s:33000\n%s", back, cnatVIP, cnatPod1, tr)
	}
	contains(t, tr, "cnat-input-ip4", "found session [10.0.1.2;8080 -> 10.0.0.1;49152, TCP]",
		"cnat-output-ip4", "found session [10.0.1.2;8080 -> 10.0.1.2;33000, TCP]")
	ss := dump[cnat.CnatSessionDetails](t, e.ch, &cnat.CnatSessionDump{})
	locs := map[uint8]int{}
	for _, s := range ss {
		locs[s.Session.Location]++
	}
	if len(ss) != 4 || locs[cnatLocInput] != 2 || locs[cnatLocOutput] != 2 {
		t.Fatalf("sessions %+v, want 2 at INPUT and 2 at OUTPUT (DNAT and SNAT, each with its return)", ss)
	}
}

// On the FIB path (ip4-cnat-tx) with cnat-snat-ip4, the policy runs before
// the lookup, where the destination is still the VIP: rule 4 can never
// match, and the pod gets its own packet with its own address as source.
func TestCnatHairpinIsNotSourceNATedOnTheFIBPath(t *testing.T) {
	e, c := cnatHairpinEnv(t, cnatSNAT4)
	tr := traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatVIP, protoTCP, 64, tcpL4(33000, 80, tcpSYN))))
	})
	r := oneFrame(t, c, nic2)
	if r.src.String() != cnatPod1 || r.dst.String() != cnatPod1 || r.dport != 8080 {
		t.Fatalf("FIB-path hairpin %v, want %s -> %s:8080 unSNATed\n%s", r, cnatPod1, cnatPod1, tr)
	}
	contains(t, tr, "cnat-snat-ip4", "policy: no source NAT", cnatTx4, "created session")
}

// With only cnat-output on the pod interface, the FIB path DNATs and
// cnat-output SNATs the hairpin; the reply to the SNAT address then needs
// cnat-input, without which it is delivered to VPP (the node IP) itself.
func TestCnatOutputAfterTheFIBPathSeesTheTranslatedPacket(t *testing.T) {
	e, c := cnatHairpinEnv(t, cnatOutput4)
	tr := traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatVIP, protoTCP, 64, tcpL4(33000, 80, tcpSYN))))
	})
	r := oneFrame(t, c, nic2)
	if r.src.String() != cnatNodeIP || r.sport != cnatMinSrcPort || r.dst.String() != cnatPod1 || r.dport != 8080 {
		t.Fatalf("hairpin %v, want SNATed by cnat-output\n%s", r, tr)
	}
	contains(t, tr, cnatTx4, "cnat-output-ip4", "created session")
	tr = traceOf(e, func() {
		e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatNodeIP, protoTCP, 64, tcpL4(8080, cnatMinSrcPort, tcpSYN|tcpACK))))
	})
	none(t, c)
	contains(t, tr, "ip4-local")
}

// cnat-input translates where ip4-cnat-tx would not run: before the input
// ACL, which sees the backend; cnat-output on the reply's egress interface
// restores the VIP. The path's source endpoint is never used by cnat-input.
func TestCnatInputFeatureDNATsBeforeTheInputACL(t *testing.T) {
	e, c, _ := cnatEnv(t)
	e.mustCnat(cnat.CnatTranslation{Vip: apiEP(cnatVIP, 53), IPProto: ip_types.IP_API_PROTO_UDP,
		Flags: uint8(cnat.CNAT_TRANSLATION_ALLOC_PORT),
		Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP(cnatNodeIP, 0), DstEp: apiEP(cnatPod1, 5353)}}})
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 1, Enable: true, ArcName: "ip4-unicast", FeatureName: cnatInput4})
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 1, Enable: true, ArcName: "ip4-output", FeatureName: cnatOutput4})
	var seen []string
	e.sim.mu.Lock()
	e.sim.st.aclFilter = func(_ uint32, input bool, f *aclFlow) (bool, string) {
		if input {
			seen = append(seen, f.Dst.String())
		}
		return true, "permit"
	}
	e.sim.mu.Unlock()
	e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(40000, 53, "q"))))
	r := oneFrame(t, c, nic2)
	if r.src.String() != cnatHostA || r.sport != 40000 || r.dst.String() != cnatPod1 || r.dport != 5353 || !r.csumOK {
		t.Fatalf("translated %v, want %s:40000 -> %s:5353 (no SNAT in cnat-input)", r, cnatHostA, cnatPod1)
	}
	if len(seen) != 1 || seen[0] != cnatPod1 {
		t.Fatalf("input ACL saw %v, want the backend %s", seen, cnatPod1)
	}
	e.inject(nic2, ethFrame(nic2MAC, podMACs[0], etherTypeIP4, ipPkt(cnatPod1, cnatHostA, protoUDP, 64, udpL4(5353, 40000, "a"))))
	back := oneFrame(t, c, nic1)
	if back.src.String() != cnatVIP || back.sport != 53 || back.dst.String() != cnatHostA || back.dport != 40000 || !back.csumOK {
		t.Fatalf("reply %v, want %s:53 -> %s:40000 restored by cnat-output on nic1", back, cnatVIP, cnatHostA)
	}
	// No client is learned for the feature sessions: only the VIP's.
	e.sim.mu.Lock()
	n := len(e.sim.st.cnat.clients)
	e.sim.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d cnat clients, want only the VIP's", n)
	}
}

// cnat-output with the K8S policy on an IPv6 flow: a packet forwarded from
// outside (neither interface in the POD map) is SNATed to the IPv6 SNAT
// address, and nothing is SNATed while that address is zero.
func TestCnatOutputFeatureIPv6SNATNeedsANonZeroAddress(t *testing.T) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	e.ok(&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S})
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: "ip6-output", FeatureName: cnatOutput6})
	send := func(sport uint16) pkt6Info {
		e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP6, ip6Pkt(hostA6, hostB6, protoUDP, 64, udpL4(sport, 53, "q"))))
		return one6(t, c, nic2)
	}
	e.ok(&cnat.CnatSetSnatAddresses{SwIfIndex: ^interface_types.InterfaceIndex(0)}) // both zero
	if r := send(40000); r.src.String() != hostA6 {
		t.Fatalf("with a zero SNAT address: %v, want untranslated", r)
	}
	snat := "fd00::99"
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP6: netip.MustParseAddr(snat).As16(), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	r := send(40001)
	if r.src.String() != snat || r.sport != cnatMinSrcPort || r.dst.String() != hostB6 || r.dport != 53 || !r.csumOK {
		t.Fatalf("IPv6 SNAT %v, want %s;49152 -> %s;53", r, snat, hostB6)
	}
}

// The IPv6 hairpin: cnat-input-ip6 and cnat-output-ip6 on the pod's
// interface, as for IPv4.
func TestCnatHairpinIPv6(t *testing.T) {
	e, c, _ := l3Env6(t)
	e.neighbor(2, hostB6, hostBMAC)
	const vip, snat = "fd00:10:96::10", "2001:db8:1::1"
	e.ok(&cnat.CnatSetSnatAddresses{SnatIP6: netip.MustParseAddr(snat).As16(), SwIfIndex: ^interface_types.InterfaceIndex(0)})
	e.ok(&cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S})
	e.ok(&cnat.CnatSnatPolicyAddDelIf{SwIfIndex: 2, IsAdd: 1, Table: cnat.CNAT_POLICY_POD})
	e.mustCnat(cnat.CnatTranslation{Vip: apiEP(vip, 80), IPProto: ip_types.IP_API_PROTO_TCP,
		Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP("::", 0), DstEp: apiEP(hostB6, 8080)}}})
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: "ip6-unicast", FeatureName: cnatInput6})
	e.ok(&feature.FeatureEnableDisable{SwIfIndex: 2, Enable: true, ArcName: "ip6-output", FeatureName: cnatOutput6})
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt(hostB6, vip, protoTCP, 64, tcpL4(33000, 80, tcpSYN))))
	r := one6(t, c, nic2)
	if r.src.String() != snat || r.sport != cnatMinSrcPort || r.dst.String() != hostB6 || r.dport != 8080 || !r.csumOK {
		t.Fatalf("IPv6 hairpin SYN %v ports %d->%d, want %s;49152 -> %s;8080", r, r.sport, r.dport, snat, hostB6)
	}
	e.inject(nic2, eth6(nic2MAC, hostBMAC, ip6Pkt(hostB6, snat, protoTCP, 64, tcpL4(8080, cnatMinSrcPort, tcpSYN|tcpACK))))
	back := one6(t, c, nic2)
	if back.src.String() != vip || back.sport != 80 || back.dst.String() != hostB6 || back.dport != 33000 || !back.csumOK {
		t.Fatalf("IPv6 hairpin SYN-ACK %v ports %d->%d, want %s;80 -> %s;33000", back, back.sport, back.dport, vip, hostB6)
	}
}

// A path with tracker flag NO_NAT (API flags value 2) makes cnat-input
// send the packet untranslated to the backend's adjacency (direct server
// return), on the first packet and on the session's later ones; the API's
// CNAT_EPT_NO_NAT (1) is stored as CNAT_TRK_ACTIVE by VPP and changes
// nothing.
func TestCnatInputNoNATPathForwardsUntranslatedToTheBackend(t *testing.T) {
	for _, tc := range []struct {
		flags uint8
		dsr   bool
	}{{flags: 2, dsr: true}, {flags: uint8(cnat.CNAT_EPT_NO_NAT)}} {
		e, c, _ := cnatEnv(t)
		e.mustCnat(cnat.CnatTranslation{Vip: apiEP(cnatVIP, 53), IPProto: ip_types.IP_API_PROTO_UDP,
			Paths: []cnat.CnatEndpointTuple{{SrcEp: apiEP("0.0.0.0", 0), DstEp: apiEP(cnatPod1, 5353), Flags: tc.flags}}})
		e.ok(&feature.FeatureEnableDisable{SwIfIndex: 1, Enable: true, ArcName: "ip4-unicast", FeatureName: cnatInput4})
		for range 2 {
			e.inject(nic1, ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt(cnatHostA, cnatVIP, protoUDP, 64, udpL4(40000, 53, "q"))))
			r := oneFrame(t, c, nic2)
			wantDst, wantPort := cnatPod1, uint16(5353)
			if tc.dsr {
				wantDst, wantPort = cnatVIP, 53
			}
			if r.dstMAC != podMACs[0] || r.dst.String() != wantDst || r.dport != wantPort || r.src.String() != cnatHostA || !r.csumOK {
				t.Fatalf("path flags %d: %v to %s, want %s:%d to the backend's MAC", tc.flags, r, macString(r.dstMAC), wantDst, wantPort)
			}
		}
	}
}
