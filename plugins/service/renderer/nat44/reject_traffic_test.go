package nat44

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/nat44_ed"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
)

// icmpWire records the ICMP errors the client NIC transmits, as
// "src -> dst type/code".
type icmpWire struct {
	mu   sync.Mutex
	sent []string
	// nics are the NICs watched (clientNIC when empty).
	nics []string
}

func (w *icmpWire) hook(ifName string, frame []byte) {
	if (len(w.nics) == 0 && ifName != clientNIC) || (len(w.nics) > 0 && !slices.Contains(w.nics, ifName)) || len(frame) < 14+20+8 || binary.BigEndian.Uint16(frame[12:14]) != 0x0800 || frame[14+9] != 1 {
		return
	}
	ip := frame[14:]
	icmp := ip[int(ip[0]&0x0f)*4:]
	w.mu.Lock()
	w.sent = append(w.sent, fmt.Sprintf("%s -> %s %d/%d", netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])), icmp[0], icmp[1]))
	w.mu.Unlock()
}

func (w *icmpWire) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.sent
	w.sent = nil
	return out
}

// TestServiceWithoutEndpointsIsRejectedAtOnce: a client of a service without any
// endpoint gets an ICMP error at once, for TCP and UDP, instead of its packets
// leaving the node untranslated (Kubernetes e2e "should be rejected when no endpoints
// exist"). The routes are those the renderer stages, programmed by the l3 route
// descriptor into the simulator.
func TestServiceWithoutEndpointsIsRejectedAtOnce(t *testing.T) {
	n := newBareTrafficNode(t)
	n.do(t, &nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	w := &icmpWire{}
	n.sim.SetTxHook(w.hook)
	e := newEnv(t, envOptions{})
	svc := udpService()
	svc.Ports = append(svc.Ports, renderer.FlatPort{Name: "http", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: 80}})
	txn := st.NewTxn()
	if err := e.rndr.AddFlatService(&describedTxn{Txn: txn}, svc); err != nil {
		t.Fatal(err)
	}
	// The route of the main VRF, in the test node's only table.
	routes := l3plugin.NewRouteDescriptor(l3plugin.DescriptorDeps{Log: st.QuietLog(), Ch: n.ch})
	programmed := 0
	for key, v := range txn.Values {
		r, ok := v.(*l3.Route)
		if !ok || r.GetVrfId() != e.rndr.mainVRF {
			continue
		}
		r = &l3.Route{Type: r.GetType(), DstNetwork: r.GetDstNetwork()}
		if _, err := routes.Create(l3.RouteKey(0, r.GetDstNetwork(), ""), r); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		programmed++
	}
	if programmed != 1 {
		t.Fatalf("the renderer staged %d routes in the main VRF, want 1: %v", programmed, txn.Keys())
	}
	// VPP sources ICMP errors from an address of the receiving interface (ip_sas.c);
	// Linux matches them to the socket by the quoted header.
	want := "10.1.2.1 -> " + trafficClient + " 3/10"
	for _, proto := range []uint8{protoUDP, protoTCP} {
		n.fromClient(t, proto, 40000, trafficSvcIP, trafficSvc)
		if got := w.take(); len(got) != 1 || got[0] != want {
			t.Errorf("protocol %d to a service without endpoints: ICMP %q, want %q", proto, got, want)
		}
		n.clk.Step(time.Second) // past ip4-null's rate limit
	}
}

// TestServiceWithoutEndpointsObjectIsRejected: a Service of which no EndpointSlice
// (nor legacy Endpoints) is known has no endpoints, so kube-proxy rejects its traffic
// (a selector-less Service before anyone writes its slices, or a Service whose slices
// are not written yet). Its cluster IP (from a pod and from outside), external IP
// and load balancer IP answer ICMP 3/10 at once, TCP and UDP; upstream did not render
// such a service, so its packets left the node untranslated.
func TestServiceWithoutEndpointsObjectIsRejected(t *testing.T) {
	n := newExternalNode(t)
	w := &icmpWire{nics: []string{uplinkNIC, pod2NIC}}
	n.sim.SetTxHook(func(ifName string, frame []byte) { n.log.hook(ifName, frame); w.hook(ifName, frame) })
	svc, _ := webService("Cluster")
	n.apply(t, svc)
	outside := netip.MustParseAddr(outsideHost)
	pod := netip.MustParseAddr(pod2IP)
	for _, c := range []struct {
		nic    string
		client netip.Addr
		dst    string
	}{
		{pod2NIC, pod, "10.96.0.50"},
		{uplinkNIC, outside, "10.96.0.50"},
		{uplinkNIC, outside, extSvcIP},
		{uplinkNIC, outside, lbSvcIP},
		{pod2NIC, pod, extSvcIP},
	} {
		for _, proto := range []uint8{protoTCP, protoUDP} {
			client := netip.AddrPortFrom(c.client, 40000)
			dst := netip.AddrPortFrom(netip.MustParseAddr(c.dst), extSvcPort)
			if sent := n.send(t, c.nic, proto, flagSYN, client, dst); len(sent) != 0 {
				t.Errorf("%s -> %s (protocol %d) went on: %q", client, dst, proto, sent)
			}
			got := w.take()
			if len(got) != 1 || !strings.HasSuffix(got[0], " -> "+c.client.String()+" 3/10") {
				t.Errorf("%s -> %s (protocol %d): ICMP %q, want 3/10 to the client", client, dst, proto, got)
			}
			n.clk.Step(time.Second) // past ip4-null's rate limit
		}
	}
}
