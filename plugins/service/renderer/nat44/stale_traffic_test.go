package nat44

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// wire records the UDP datagrams and TCP segments the NICs transmit, as "src -> dst".
type wire struct {
	mu   sync.Mutex
	sent []string
	// withIf prefixes each frame with the name of the interface it left by
	// ("IFNAME SRC:PORT -> DST:PORT").
	withIf bool
}

func (w *wire) hook(ifName string, frame []byte) {
	if len(frame) < 14+20+8 || binary.BigEndian.Uint16(frame[12:14]) != 0x0800 || (frame[14+9] != protoUDP && frame[14+9] != protoTCP) {
		return
	}
	ip := frame[14:]
	udp := ip[int(ip[0]&0x0f)*4:]
	src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:2]))
	dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(udp[2:4]))
	line := src.String() + " -> " + dst.String()
	if w.withIf {
		line = ifName + " " + line
	}
	w.mu.Lock()
	w.sent = append(w.sent, line)
	w.mu.Unlock()
}

// take returns the datagrams sent since the last take.
func (w *wire) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.sent
	w.sent = nil
	return out
}

// udpService is the service of the traffic node with the given backends (none: a
// service without endpoints) on port 53/UDP, target port 5353.
func udpService(backends ...string) *renderer.FlatService {
	fs := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: "dns"},
		ClusterIPs: []renderer.Address{renderer.NewAddress(netip.MustParseAddr(trafficSvcIP).AsSlice())},
		Ports:      []renderer.FlatPort{{Name: "dns", Port: renderer.ServicePort{Protocol: renderer.UDP, Port: trafficSvc}}}}
	p := &fs.Ports[0]
	for _, b := range backends {
		ep := renderer.Endpoint{Address: renderer.NewAddress(netip.MustParseAddr(b).AsSlice()), Local: true}
		if len(p.Backends) == 0 {
			p.Backends = []renderer.BackendGroup{{TargetPort: trafficTarget}}
		}
		p.Backends[0].Endpoints = append(p.Backends[0].Endpoints, ep)
	}
	p.ExternalBackends, p.HasEndpoints = p.Backends, len(backends) > 0
	return fs
}

// TestUDPClientKeepsItsTupleAcrossEndpointChanges: a UDP client that keeps its source
// port (a DNS resolver, a game client) must reach the service right after its first
// endpoint appears and right after its backend is replaced, as with kube-proxy, which
// clears the conntrack entries of a UDP service whose endpoints changed (e2e "should
// be able to preserve UDP traffic when server pod cycles"). Before that the client's
// NAT session (a forwarding-bypass one while the service had no endpoint, then one to
// the old backend) took its datagrams for as long as it was used.
func TestUDPClientKeepsItsTupleAcrossEndpointChanges(t *testing.T) {
	n := newBareTrafficNode(t)
	n.do(t, &nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	w := &wire{}
	n.sim.SetTxHook(w.hook)
	e := newEnv(t, envOptions{})
	// A channel of its own: the renderer's session goroutine runs beside the test's
	// requests (a govpp channel serves one goroutine).
	ch, err := n.conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	e.rndr.GoVPPChan = ch
	if err := e.rndr.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.rndr.Close() })
	const clientPort = 40000
	send := func() []string {
		n.udpFromClient(t, clientPort, trafficSvcIP, trafficSvc)
		return w.take()
	}
	answer := func(from string, fromMAC [6]byte) []string {
		n.udpFromPod(t, fromMAC, from, trafficTarget, trafficClient, clientPort)
		return w.take()
	}
	// change has the renderer render the service's change (the DNAT it stages is the
	// mapping programmed next to it) and commits it.
	change := func(old, svc *renderer.FlatService, reqs ...*nat44_ed.Nat44AddDelStaticMappingV2) {
		t.Helper()
		if old == nil {
			_ = e.rndr.AddFlatService(renderer.DiscardTxn{}, svc)
		} else {
			_ = e.rndr.UpdateFlatService(renderer.DiscardTxn{}, old, svc)
		}
		for _, r := range reqs {
			n.do(t, r)
		}
		e.rndr.Committed(nil)
	}
	// purged waits until no session leads elsewhere than backend.
	purged := func(backend string) {
		t.Helper()
		testkit.Eventually(t, 5*time.Second, "stale sessions purged", func() error {
			for _, s := range n.sim.Sessions() {
				if s.InsideAddr.Addr().String() != backend {
					return fmt.Errorf("session %+v left", s)
				}
			}
			return nil
		})
	}

	// No endpoint: the datagram passes untranslated (a forwarding-bypass session),
	// to nowhere here (no route to the service address).
	none := udpService()
	change(nil, none)
	if got := send(); len(got) != 0 {
		t.Fatalf("a service without endpoints delivered %q", got)
	}
	if len(n.sim.Sessions()) != 1 {
		t.Fatalf("sessions %+v, want the bypass one", n.sim.Sessions())
	}

	// The first endpoint appears: the next datagram of the same tuple reaches it.
	first := udpService(trafficPod1)
	change(none, first, staticMapping(true, nat_types.NAT_IS_SELF_TWICE_NAT, trafficPod1))
	purged(trafficPod1)
	want := trafficClient + ":40000 -> " + trafficPod1 + ":5353"
	if got := send(); len(got) != 1 || got[0] != want {
		t.Fatalf("after the first endpoint appeared: sent %q, want %q", got, want)
	}
	if got := answer(trafficPod1, trafficPod1MAC); len(got) != 1 || got[0] != trafficSvcIP+":53 -> "+trafficClient+":40000" {
		t.Fatalf("answer %q, want it from the service address", got)
	}

	// The backend is replaced: the same tuple reaches the new one.
	replaced := udpService(trafficPod3)
	change(first, replaced, staticMapping(false, nat_types.NAT_IS_SELF_TWICE_NAT, trafficPod1),
		staticMapping(true, nat_types.NAT_IS_SELF_TWICE_NAT, trafficPod3))
	purged(trafficPod3)
	want = trafficClient + ":40000 -> " + trafficPod3 + ":5353"
	if got := send(); len(got) != 1 || got[0] != want {
		t.Fatalf("after the backend was replaced: sent %q, want %q", got, want)
	}
	if got := answer(trafficPod3, trafficPod3MAC); len(got) != 1 || got[0] != trafficSvcIP+":53 -> "+trafficClient+":40000" {
		t.Fatalf("answer %q, want it from the service address", got)
	}

	// A change that leaves the port's endpoints as they are purges nothing.
	_ = e.rndr.UpdateFlatService(renderer.DiscardTxn{}, replaced, udpService(trafficPod3))
	if len(e.rndr.stale) != 0 {
		t.Errorf("an unchanged port is to be purged: %+v", e.rndr.stale)
	}
}

// TestUDPClientThatSentBeforeTheServiceExistedReachesItsFirstBackend (issue #26 item
// 6, the node as ipnet lays it out): a pod sends to a cluster IP before its Service
// exists. VPP's out2in on the pod's TAP (NAT outside) makes a forwarding-bypass
// session, the datagram is routed to the uplink, whose NAT output feature source-NATs
// it to the node IP (nat44_ed_not_translate_output_feature translates when the reverse
// flow is a bypass session): a session whose remote end is the cluster IP itself. Once
// the Service exists with a backend, out2in finds that session's inside flow before
// any mapping, so the same socket's datagrams kept leaving the node for as long as
// they came. kube-proxy deletes the conntrack entries whose original destination is
// the Service's address when its first endpoint appears; the purge must delete this
// session too, and the next datagram of the same 5-tuple reach the backend.
func TestUDPClientThatSentBeforeTheServiceExistedReachesItsFirstBackend(t *testing.T) {
	n := newExternalNode(t)
	ch, err := n.conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	r := n.env.rndr
	purged := make(chan int, 16)
	r.GoVPPChan, r.stalePurged = ch, func(deleted int) { purged <- deleted }
	if err := r.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	const clusterIP = "10.96.0.60"
	client := netip.MustParseAddrPort(pod2IP + ":40000")
	vip := netip.MustParseAddrPort(clusterIP + ":53")
	// onNIC returns the datagrams of frames that left by the NIC.
	onNIC := func(nic string, frames []string) []string {
		var out []string
		for _, f := range frames {
			if ifName, pkt, _ := strings.Cut(f, " "); ifName == nic {
				out = append(out, pkt)
			}
		}
		return out
	}

	// No Service yet: the datagram leaves by the uplink, source-NATed to the node IP.
	sent := n.send(t, pod2NIC, protoUDP, 0, client, vip)
	if got := onNIC(uplinkNIC, sent); len(got) != 1 || !strings.HasPrefix(got[0], nodeIP+":") || !strings.HasSuffix(got[0], " -> "+vip.String()) {
		t.Fatalf("before the Service: sent %q, want one datagram from the node IP to %s on the uplink", sent, vip)
	}

	svc := st.Service("default", "dns", clusterIP, st.Port("dns", "UDP", int32(vip.Port()), 0))
	slice := &esmodel.EndpointSlice{Name: "dns-1", Namespace: "default", ServiceName: "dns", AddressType: "IPv4",
		Ports: []*esmodel.Port{{Name: "dns", Protocol: "UDP", Port: extTarget}},
		Endpoints: []*esmodel.Endpoint{{Addresses: []string{pod1IP}, Ready: true, Serving: true, NodeName: "master",
			TargetRef: &esmodel.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod1"}}}}
	n.apply(t, svc)
	n.apply(t, slice)
	r.Committed(nil) // both events' stale ports, as if one transaction
	select {
	case <-purged:
	case <-time.After(testkit.DefaultTimeout):
		t.Fatalf("no stale UDP purge %v after the commit", testkit.DefaultTimeout)
	}

	want := client.String() + " -> " + pod1IP + ":" + fmt.Sprint(extTarget)
	sent = n.send(t, pod2NIC, protoUDP, 0, client, vip)
	if got := onNIC(pod1NIC, sent); len(got) != 1 || got[0] != want {
		t.Fatalf("the same socket once the Service has a backend: sent %q, want %q on the backend's TAP\n%s", sent, want,
			n.cli(t, "show nat44 sessions"))
	}
	answer := n.send(t, pod1NIC, protoUDP, 0, netip.MustParseAddrPort(pod1IP+":"+fmt.Sprint(extTarget)), client)
	if got := onNIC(pod2NIC, answer); len(got) != 1 || got[0] != vip.String()+" -> "+client.String() {
		t.Fatalf("the backend's answer: sent %q, want it from %s to the client", answer, vip)
	}
}
