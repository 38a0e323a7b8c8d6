package nat44

import (
	"context"
	"net/netip"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// The node of the traffic tests: one NIC standing for the pod TAPs, NAT inside and
// outside (like Contiv's pod interfaces), three pods, a service whose static mapping
// translates the source too (twice-NAT, as for external IPs of cluster-wide
// services) to the NAT loopback address.
const (
	podsNIC       = "GigabitEthernet0/9/0"
	clientNIC     = "GigabitEthernet0/a/0"
	trafficClient = "10.1.2.5" // a pod on the client NIC
	trafficPod1   = "10.1.1.2" // the backend
	trafficPod2   = "10.1.1.3" // the client
	trafficPod3   = "10.1.1.4" // another backend
	trafficNATLo  = "10.1.1.254"
	trafficSvcIP  = "10.96.0.20"
	trafficSvc    = 53
	trafficTarget = 5353
)

var (
	trafficPod1MAC   = [6]byte{0x02, 0, 0, 0, 1, 2}
	trafficPod2MAC   = [6]byte{0x02, 0, 0, 0, 1, 3}
	trafficPod3MAC   = [6]byte{0x02, 0, 0, 0, 1, 4}
	trafficClientMAC = [6]byte{0x02, 0, 0, 0, 2, 5}
)

// trafficNode is a simulator programmed as the node above, on a fake clock.
type trafficNode struct {
	*vpp
	clk          *testkit.Clock
	nicMAC       [6]byte
	clientNICMAC [6]byte
}

func newTrafficNode(t *testing.T, mappingFlags nat_types.NatConfigFlags) *trafficNode {
	t.Helper()
	n := newBareTrafficNode(t)
	n.do(t, staticMapping(true, mappingFlags, trafficPod1))
	return n
}

// staticMapping returns the request that adds (or removes) the UDP mapping of the
// service to one backend.
func staticMapping(add bool, flags nat_types.NatConfigFlags, backend string) *nat44_ed.Nat44AddDelStaticMappingV2 {
	return &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: add, Flags: flags | nat_types.NAT_IS_OUT2IN_ONLY,
		Protocol: protoUDP, LocalIPAddress: ip4Address(backend), LocalPort: trafficTarget,
		ExternalIPAddress: ip4Address(trafficSvcIP), ExternalPort: trafficSvc, ExternalSwIfIndex: ^interface_types.InterfaceIndex(0)}
}

// newBareTrafficNode is the node of newTrafficNode without the service's mapping.
func newBareTrafficNode(t *testing.T) *trafficNode {
	t.Helper()
	clk := testkit.NewClockAt(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	v := startVPPWith(t, true, vppsim.Options{NICs: []string{podsNIC, clientNIC}, Clock: clk})
	nic, ok := v.sim.InterfaceByName(podsNIC)
	cnic, cok := v.sim.InterfaceByName(clientNIC)
	if !ok || !cok {
		t.Fatalf("no interface %s or %s", podsNIC, clientNIC)
	}
	n := &trafficNode{vpp: v, clk: clk}
	copy(n.nicMAC[:], nic.MAC)
	copy(n.clientNICMAC[:], cnic.MAC)
	sw, csw := interface_types.InterfaceIndex(nic.SwIfIndex), interface_types.InterfaceIndex(cnic.SwIfIndex)
	neighborOn := func(sw interface_types.InterfaceIndex, ip string, mac [6]byte) govppapi.Message {
		return &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
			Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: ipAddress(ip)}}
	}
	neighbor := func(ip string, mac [6]byte) govppapi.Message { return neighborOn(sw, ip, mac) }
	n.do(t,
		&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: mustPrefix(t, "10.1.1.1/24")},
		&interfaces.SwInterfaceSetFlags{SwIfIndex: sw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP},
		neighbor(trafficPod1, trafficPod1MAC),
		neighbor(trafficPod2, trafficPod2MAC),
		neighbor(trafficPod3, trafficPod3MAC),
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: sw},
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: sw},
		&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4Address(trafficNATLo), LastIPAddress: ip4Address(trafficNATLo),
			VrfID: ^uint32(0), IsAdd: true, Flags: nat_types.NAT_IS_TWICE_NAT},
		// The client NIC: a pod that backs no service (NAT outside only, as Contiv
		// makes the interfaces of such pods).
		&interfaces.SwInterfaceAddDelAddress{SwIfIndex: csw, IsAdd: true, Prefix: mustPrefix(t, "10.1.2.1/24")},
		&interfaces.SwInterfaceSetFlags{SwIfIndex: csw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP},
		neighborOn(csw, trafficClient, trafficClientMAC),
		&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: csw},
	)
	return n
}

// udpFromClient sends one UDP datagram from the client of the client NIC.
func (n *trafficNode) udpFromClient(t *testing.T, sport uint16, dst string, dport uint16) {
	t.Helper()
	n.fromClient(t, protoUDP, sport, dst, dport)
}

// fromClient sends one UDP datagram or TCP SYN from the client of the client NIC.
func (n *trafficNode) fromClient(t *testing.T, proto uint8, sport uint16, dst string, dport uint16) {
	t.Helper()
	if err := n.sim.InjectFrame(clientNIC, l4Frame(proto, n.clientNICMAC, trafficClientMAC, trafficClient, sport, dst, dport)); err != nil {
		t.Fatal(err)
	}
}

// do sends the requests and fails the test on an error or a non-zero retval.
func (n *trafficNode) do(t *testing.T, reqs ...govppapi.Message) {
	t.Helper()
	for _, req := range reqs {
		if err := n.ch.SendRequest(req).ReceiveReply(replyOf(t, req)); err != nil {
			t.Fatalf("%s: %v", req.GetMessageName(), err)
		}
	}
}

// replyOf returns an empty reply message for a request of newTrafficNode.
func replyOf(t *testing.T, req govppapi.Message) govppapi.Message {
	t.Helper()
	switch req.(type) {
	case *interfaces.SwInterfaceAddDelAddress:
		return &interfaces.SwInterfaceAddDelAddressReply{}
	case *interfaces.SwInterfaceSetFlags:
		return &interfaces.SwInterfaceSetFlagsReply{}
	case *ip_neighbor.IPNeighborAddDel:
		return &ip_neighbor.IPNeighborAddDelReply{}
	case *nat44_ed.Nat44InterfaceAddDelFeature:
		return &nat44_ed.Nat44InterfaceAddDelFeatureReply{}
	case *nat44_ed.Nat44AddDelAddressRange:
		return &nat44_ed.Nat44AddDelAddressRangeReply{}
	case *nat44_ed.Nat44AddDelStaticMappingV2:
		return &nat44_ed.Nat44AddDelStaticMappingV2Reply{}
	case *nat44_ed.Nat44ForwardingEnableDisable:
		return &nat44_ed.Nat44ForwardingEnableDisableReply{}
	case *nat44_ed.Nat44AddDelLbStaticMapping:
		return &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	}
	t.Fatalf("no reply known for %T", req)
	return nil
}

// udpFromPod sends one UDP datagram from a pod of the node.
func (n *trafficNode) udpFromPod(t *testing.T, srcMAC [6]byte, src string, sport uint16, dst string, dport uint16) {
	t.Helper()
	if err := n.sim.InjectFrame(podsNIC, udpFrame(n.nicMAC, srcMAC, src, sport, dst, dport)); err != nil {
		t.Fatal(err)
	}
}

// udpFrame builds an Ethernet frame with an IPv4 UDP datagram (no UDP checksum).
func udpFrame(dstMAC, srcMAC [6]byte, src string, sport uint16, dst string, dport uint16) []byte {
	return l4Frame(protoUDP, dstMAC, srcMAC, src, sport, dst, dport)
}

// l4Frame builds an Ethernet frame with an IPv4 UDP datagram or TCP SYN (no L4
// checksum): servicetest.L4Frame.
func l4Frame(proto uint8, dstMAC, srcMAC [6]byte, src string, sport uint16, dst string, dport uint16) []byte {
	return st.L4Frame(proto, dstMAC, srcMAC, src, sport, dst, dport)
}

func mustPrefix(t *testing.T, s string) ip_types.AddressWithPrefix {
	t.Helper()
	p, err := ip_types.ParseAddressWithPrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ip4Address(s string) ip_types.IP4Address { return netip.MustParseAddr(s).As4() }

func ipAddress(s string) ip_types.Address {
	a := ip_types.Address{Af: ip_types.ADDRESS_IP4}
	a.Un.SetIP4(ip4Address(s))
	return a
}

// TestIdleTwiceNATSessionFromTrafficIsDeleted: a twice-NAT session created by real
// traffic is keyed on the inside by the twice-NAT address of the client; the cleanup
// must delete it by that address once it idled past the timeout. Both kinds: a
// mapping that always translates the source (external IPs of cluster-wide services)
// and one that does so only when a backend reaches itself (SELF).
func TestIdleTwiceNATSessionFromTrafficIsDeleted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flags     nat_types.NatConfigFlags
		client    string
		clientMAC [6]byte
	}{
		{"twice-NAT", nat_types.NAT_IS_TWICE_NAT, trafficPod2, trafficPod2MAC},
		{"self twice-NAT", nat_types.NAT_IS_SELF_TWICE_NAT, trafficPod1, trafficPod1MAC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTrafficNode(t, tc.flags)
			n.udpFromPod(t, tc.clientMAC, tc.client, 40000, trafficSvcIP, trafficSvc)
			sessions := n.sim.Sessions()
			if len(sessions) != 1 || !sessions[0].TwiceNAT || sessions[0].ExtHostNATAddr.Addr().String() != trafficNATLo ||
				sessions[0].InsideAddr.String() != trafficPod1+":5353" {
				t.Fatalf("the traffic made no twice-NAT session to the backend: %+v", sessions)
			}

			e := newEnv(t, envOptions{svcConf: &config.Config{CleanupIdleNATSessions: true, ServiceLocalEndpointWeight: 1,
				OtherNATSessionTimeout: 5}})
			e.rndr.GoVPPChan = n.ch
			if res, err := e.rndr.cleanupIdleSessions(context.Background()); err != nil || res != (cleanupResult{other: 1}) {
				t.Fatalf("a fresh session: pass %+v, %v; want it counted and kept", res, err)
			}
			n.clk.Step(6 * time.Minute)
			res, err := e.rndr.cleanupIdleSessions(context.Background())
			if err != nil || res != (cleanupResult{other: 1, deletedOther: 1}) {
				t.Errorf("after 6 idle minutes: pass %+v, %v; want the session deleted", res, err)
			}
			if left := n.sim.Sessions(); len(left) != 0 {
				t.Errorf("sessions left: %+v", left)
			}
		})
	}
}
