package nat44

import (
	"net/netip"
	"strings"
	"testing"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// TestClusterIPOfALocalPolicyServiceReachesEveryEndpoint: externalTrafficPolicy Local
// concerns external traffic only. On a node without a local endpoint, a pod still
// reaches the cluster IP, load-balanced over every endpoint (upstream applied Local
// to the cluster IP: no mapping, the connection left the node untranslated). The
// DNAT is the one the processor and the renderer stage for the Service and its
// EndpointSlice; its cluster IP mapping is programmed into the simulator as VPP's NAT
// descriptor does (an LB static mapping), and a pod's SYNs go through it.
func TestClusterIPOfALocalPolicyServiceReachesEveryEndpoint(t *testing.T) {
	const clusterIP, remote1, remote2 = "10.96.0.40", "10.1.3.5", "10.1.3.6"
	e := newEnv(t, envOptions{})
	svc := st.Service("default", "ingress", clusterIP, st.Port("http", "TCP", 80, 30000))
	svc.ServiceType, svc.ExternalTrafficPolicy, svc.ExternalIps = "NodePort", "Local", []string{"20.0.0.2"}
	slice := &esmodel.EndpointSlice{Name: "ingress-1", Namespace: "default", ServiceName: "ingress", AddressType: "IPv4",
		Ports: []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: 8080}},
		Endpoints: []*esmodel.Endpoint{{Addresses: []string{remote1}, Ready: true, Serving: true},
			{Addresses: []string{remote2}, Ready: true, Serving: true}}}
	e.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(svc.Name, svc.Namespace), NewValue: svc})
	e.update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: esmodel.Key(slice.Name, slice.Namespace), NewValue: slice})
	var mapping *vpp_nat.DNat44_StaticMapping
	for _, m := range e.nat().DNATs["default/ingress"].GetStMappings() {
		if m.GetExternalIp() == clusterIP {
			mapping = m
		}
		if m.GetExternalIp() != clusterIP && len(m.GetLocalIps()) > 0 {
			t.Errorf("external traffic to %s:%d has backends on a node without a local endpoint: %v",
				m.GetExternalIp(), m.GetExternalPort(), m.GetLocalIps())
		}
	}
	if mapping == nil || len(mapping.GetLocalIps()) != 2 {
		t.Fatalf("cluster IP mapping %v, want both endpoints", mapping)
	}

	// The node: the remote endpoints behind the pods' NIC (standing for the VXLAN BVI),
	// the client pod on the client NIC.
	n := newBareTrafficNode(t)
	nic, _ := n.sim.InterfaceByName(podsNIC)
	sw := interface_types.InterfaceIndex(nic.SwIfIndex)
	neighbor := func(ip string, last byte) govppapi.Message {
		return &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
			Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: [6]byte{2, 0, 0, 0, 3, last}, IPAddress: ipAddress(ip)}}
	}
	lb := &nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY | nat_types.NAT_IS_SELF_TWICE_NAT,
		ExternalAddr: ip4Address(clusterIP), ExternalPort: uint16(mapping.GetExternalPort()), Protocol: protoTCP,
		LocalNum: uint32(len(mapping.GetLocalIps()))}
	for _, l := range mapping.GetLocalIps() {
		lb.Locals = append(lb.Locals, nat44_ed.Nat44LbAddrPort{Addr: ip4Address(l.GetLocalIp()), Port: uint16(l.GetLocalPort()),
			Probability: uint8(l.GetProbability())})
	}
	n.do(t,
		&nat44_ed.Nat44ForwardingEnableDisable{Enable: true},
		&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: mustPrefix(t, "10.1.3.1/24")},
		neighbor(remote1, 5), neighbor(remote2, 6), lb)
	w := &wire{}
	n.sim.SetTxHook(w.hook)
	reached := map[string]bool{}
	for port := uint16(40000); port < 40064 && len(reached) < 2; port++ {
		n.fromClient(t, protoTCP, port, clusterIP, 80)
		for _, sent := range w.take() {
			_, dst, _ := strings.Cut(sent, " -> ")
			if ap := netip.MustParseAddrPort(dst); ap.Port() == 8080 {
				reached[ap.Addr().String()] = true
			}
		}
	}
	if !reached[remote1] || !reached[remote2] {
		t.Errorf("64 connections to the cluster IP reached %v, want both endpoints", reached)
	}
}
