package ifplugin

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

const (
	podVRF   = 1
	gwIPv6   = "fd00:10:1:1::1"
	podLLA   = "fe80::2"
	podMACst = "02:00:00:00:00:02"
)

// dualStackPod is the pod wiring of a dual-stack node as ipnet builds it: the pod VRF
// in both families, the pod-gateway loopback with an address of each in it, and the
// pod's TAP in the pod VRF, unnumbered to the loopback.
func dualStackPod(withIPv6 bool) map[string]proto.Message {
	return podWiring(true, withIPv6)
}

// podWiring is the pod wiring of a node of the given families: the pod VRF's table of
// each, the pod-gateway loopback with an address of each, the pod's TAP in the pod VRF
// unnumbered to the loopback.
func podWiring(withIPv4, withIPv6 bool) map[string]proto.Message {
	var gwIPs []string
	kvs := map[string]proto.Message{}
	if withIPv4 {
		gwIPs = append(gwIPs, "10.1.1.1/24")
		kvs[l3model.VrfTableKey(podVRF, l3model.VrfTable_IPV4)] = vrf(podVRF)
	}
	if withIPv6 {
		gwIPs = append(gwIPs, gwIPv6+"/64")
		kvs[l3model.VrfTableKey(podVRF, l3model.VrfTable_IPV6)] = &l3model.VrfTable{Id: podVRF, Protocol: l3model.VrfTable_IPV6}
	}
	tap := podTap("vpp-tap-1", "podGwLoop")
	tap.Vrf = podVRF
	kvs[ifmodel.InterfaceKey("podGwLoop")] = loop("podGwLoop", podVRF, gwIPs...)
	kvs[ifmodel.InterfaceKey("vpp-tap-1")] = tap
	return kvs
}

// ip6Enabled asks VPP whether IPv6 is enabled on the interface tagged tag.
func (e *env) ip6Enabled(tag string) bool {
	e.t.Helper()
	err := e.raw.SendRequest(&ip.SwInterfaceIP6GetLinkLocalAddress{SwIfIndex: interface_types.InterfaceIndex(e.simIface(tag).SwIfIndex)}).
		ReceiveReply(&ip.SwInterfaceIP6GetLinkLocalAddressReply{})
	if errors.Is(err, govppapi.IP6_NOT_ENABLED) {
		return false
	}
	if err != nil {
		e.t.Fatalf("sw_interface_ip6_get_link_local_address of %s: %v", tag, err)
	}
	return true
}

// neighbourSolicitation is the frame a pod sends to find the MAC of target: from
// its link-local address, to the solicited-node group of target, with its MAC as
// the source link-layer option.
func neighbourSolicitation(t *testing.T, target string) []byte {
	t.Helper()
	tgt := netip.MustParseAddr(target).As16()
	mac, _ := net.ParseMAC(podMACst)
	group := netip.AddrFrom16([16]byte{0: 0xff, 1: 0x02, 11: 0x01, 12: 0xff, 13: tgt[13], 14: tgt[14], 15: tgt[15]})
	body := append(make([]byte, 4), tgt[:]...) // reserved, target
	body = append(body, 1, 1)                  // source link-layer address option, 8 bytes
	body = append(body, mac...)
	src := net.ParseIP(podLLA)
	msg := icmp.Message{Type: ipv6.ICMPTypeNeighborSolicitation, Body: &icmp.RawBody{Data: body}}
	l4, err := msg.Marshal(icmp.IPv6PseudoHeader(src, net.IP(group.AsSlice())))
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 40, 40+len(l4))
	pkt[0] = 0x60
	binary.BigEndian.PutUint16(pkt[4:6], uint16(len(l4)))
	pkt[6], pkt[7] = 58, 255 // ICMPv6, hop limit 255
	copy(pkt[8:24], src)
	copy(pkt[24:40], group.AsSlice())
	pkt = append(pkt, l4...)
	eth := []byte{0x33, 0x33, 0xff, tgt[13], tgt[14], tgt[15]}
	eth = append(eth, mac...)
	eth = append(eth, 0x86, 0xdd)
	return append(eth, pkt...)
}

// advertisedTarget returns the target of the neighbour advertisement in frame, if it
// is one.
func advertisedTarget(frame []byte) (netip.Addr, bool) {
	const eth, ip6 = 14, 40
	if len(frame) < eth+ip6+24 || binary.BigEndian.Uint16(frame[12:14]) != 0x86dd || frame[eth+6] != 58 ||
		frame[eth+ip6] != byte(ipv6.ICMPTypeNeighborAdvertisement) {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16([16]byte(frame[eth+ip6+8 : eth+ip6+24])), true
}

func TestDualStackPodTapAnswersNeighbourSolicitationsForItsGateway(t *testing.T) {
	e := newEnv(t)
	e.mustCommit(dualStackPod(true))
	e.expectGatewayAdvertised()
}

// expectGatewayAdvertised checks that the pod TAP is unnumbered and that VPP answers,
// on the TAP, a pod's neighbour solicitation for its IPv6 gateway.
func (e *env) expectGatewayAdvertised() {
	e.t.Helper()
	if st := e.state(ifmodel.UnnumberedKey("vpp-tap-1")); st != kvapi.StateConfigured {
		e.t.Fatalf("unnumbered setting of the pod TAP: %v (%v)", st, e.kvs.GetValueStatus(ifmodel.UnnumberedKey("vpp-tap-1")).Error)
	}
	tapName := e.simIface("vpp-tap-1").Name
	var mu sync.Mutex
	var answers []netip.Addr
	e.sim.SetTxHook(func(ifName string, frame []byte) {
		if a, ok := advertisedTarget(frame); ok && ifName == tapName {
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
		}
	})
	defer e.sim.SetTxHook(nil)
	if err := e.sim.InjectFrame(tapName, neighbourSolicitation(e.t, gwIPv6)); err != nil {
		e.t.Fatal(err)
	}
	testkit.EventuallyTrue(e.t, testkit.DefaultTimeout, "neighbour advertisement of the pod gateway", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answers) == 1 && answers[0] == netip.MustParseAddr(gwIPv6)
	})
}

// A single-stack IPv6 node has no IPv4 table of its pod VRF: the pod-gateway loopback
// (IPv6 address only) and the pod TAP (unnumbered to it) must not wait for one, the
// TAP must take the loopback's tables (IPv4 table 0, IPv6 table of the pod VRF) for
// VPP to accept the unnumbered setting, the pod's IPv6 neighbour discovery must work,
// and an agent restart must find everything as it wants it.
func TestSingleStackIPv6PodNeedsNoIPv4TableAndFollowsItsDonor(t *testing.T) {
	e := newEnv(t)
	kvs := podWiring(false, true)
	e.mustCommit(kvs)
	for _, k := range []string{ifmodel.InterfaceKey("podGwLoop"), ifmodel.InterfaceKey("vpp-tap-1")} {
		if st := e.state(k); st != kvapi.StateConfigured {
			t.Fatalf("%s: %v (%v)", k, st, e.kvs.GetValueStatus(k).Error)
		}
	}
	e.expectGatewayAdvertised()
	for _, tag := range []string{"podGwLoop", "vpp-tap-1"} {
		if i := e.simIface(tag); i.VRF != 0 || i.VRF6 != podVRF {
			t.Errorf("%s in tables %d/%d, want 0/%d", tag, i.VRF, i.VRF6, podVRF)
		}
	}
	e.kvs, e.p = e.newAgent()
	e.sim.ResetMessageCounts()
	if err := e.resync(kvs); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"sw_interface_set_unnumbered", "sw_interface_ip6_enable_disable", "sw_interface_set_table",
		"sw_interface_add_del_address", "create_loopback", "tap_create_v3"} {
		if n := e.sim.MessageCount(m); n != 0 {
			t.Errorf("resync after a restart sent %d %s", n, m)
		}
	}
	// The TAP numbered again, without an address: IPv4 is VPP's default family, so
	// it is bound to the IPv4 table of its VRF, which must then exist.
	numbered := proto.Clone(kvs[ifmodel.InterfaceKey("vpp-tap-1")]).(*ifmodel.Interface)
	numbered.Unnumbered = nil
	e.mustCommit(map[string]proto.Message{ifmodel.InterfaceKey("vpp-tap-1"): numbered})
	if st := e.state(ifmodel.InterfaceKey("vpp-tap-1")); st != kvapi.StatePending {
		t.Errorf("an address-less TAP in a VRF without IPv4 table: %v, want pending", st)
	}
}

func TestUnnumberedFollowsTheIPv6TableOfItsDonorAndHoldsOneIPv6Enable(t *testing.T) {
	t.Run("IPv4-only donor: no IPv6 table, no IPv6 enable", func(t *testing.T) {
		e := newEnv(t)
		e.mustCommit(dualStackPod(false))
		if st := e.state(ifmodel.UnnumberedKey("vpp-tap-1")); st != kvapi.StateConfigured {
			t.Fatalf("unnumbered: %v", st)
		}
		if tap := e.simIface("vpp-tap-1"); tap.VRF != podVRF || tap.VRF6 != 0 || e.ip6Enabled("vpp-tap-1") {
			t.Errorf("TAP in tables %d/%d, IPv6 enabled %t; want %d/0, not enabled", tap.VRF, tap.VRF6, e.ip6Enabled("vpp-tap-1"), podVRF)
		}
	})
	t.Run("dual-stack donor, a failed attempt, a restart, a delete", func(t *testing.T) {
		e := newEnv(t)
		kvs := dualStackPod(true)
		// The first attempt fails at sw_interface_set_unnumbered: nothing stays.
		if err := e.sim.FailMessage("sw_interface_set_unnumbered", int32(govppapi.UNSPECIFIED), 1); err != nil {
			t.Fatal(err)
		}
		_ = e.commit(e.kvs, kvs)
		if tap := e.simIface("vpp-tap-1"); tap.Unnumbered == e.simIface("podGwLoop").SwIfIndex {
			t.Fatal("the failing unnumbered setting was applied")
		}
		if tap := e.simIface("vpp-tap-1"); tap.VRF6 != 0 || e.ip6Enabled("vpp-tap-1") {
			t.Fatalf("after the failure the TAP is in IPv6 table %d, IPv6 enabled %t", tap.VRF6, e.ip6Enabled("vpp-tap-1"))
		}
		if err := e.resync(kvs); err != nil { // the retry
			t.Fatal(err)
		}
		tap, gw := e.simIface("vpp-tap-1"), e.simIface("podGwLoop")
		if tap.Unnumbered != gw.SwIfIndex || tap.VRF != podVRF || tap.VRF6 != podVRF || !e.ip6Enabled("vpp-tap-1") {
			t.Fatalf("TAP unnumbered to %d in tables %d/%d; want unnumbered to %d in %d/%d with IPv6 enabled",
				tap.Unnumbered, tap.VRF, tap.VRF6, gw.SwIfIndex, podVRF, podVRF)
		}
		// An agent restart adopts the setting and sends nothing.
		e.kvs, e.p = e.newAgent()
		e.sim.ResetMessageCounts()
		if err := e.resync(kvs); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"sw_interface_set_unnumbered", "sw_interface_ip6_enable_disable", "sw_interface_set_table"} {
			if n := e.sim.MessageCount(m); n != 0 {
				t.Errorf("resync after a restart sent %d %s", n, m)
			}
		}
		// Removing the unnumbered setting gives back the one IPv6 enable and the table.
		numbered := proto.Clone(kvs[ifmodel.InterfaceKey("vpp-tap-1")]).(*ifmodel.Interface)
		numbered.Unnumbered = nil
		e.sim.ResetMessageCounts()
		e.mustCommit(map[string]proto.Message{ifmodel.InterfaceKey("vpp-tap-1"): numbered})
		if tap := e.simIface("vpp-tap-1"); tap.Unnumbered == gw.SwIfIndex || tap.VRF6 != 0 || e.ip6Enabled("vpp-tap-1") {
			t.Errorf("without unnumbered the TAP is unnumbered to %d, in IPv6 table %d, IPv6 enabled %t",
				tap.Unnumbered, tap.VRF6, e.ip6Enabled("vpp-tap-1"))
		}
		if n := e.sim.MessageCount("sw_interface_ip6_enable_disable"); n != 1 {
			t.Errorf("%d sw_interface_ip6_enable_disable sent, want the one disable", n)
		}
	})
}
