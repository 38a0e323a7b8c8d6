package nat44

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// The external traffic tests run a node laid out as ipnet lays one out: the uplink
// GbE (node IP, default gateway: NAT output feature) in the main VRF 0, the pods'
// TAPs in the pod VRF 1, unnumbered to the pod gateway loopback, and routes
// between the two VRFs. The simulator's NICs stand for the uplink and the two pod
// TAPs; every value the processor and the renderer commit goes through the real
// KV scheduler and the NAT and L3 descriptors into the simulator, and frames enter
// on the NICs.

// confMainVRF0 is confVXLAN with the VRFs of a default contiv.conf.
var confMainVRF0 = strings.Replace(confVXLAN, "mainVRFID: 1\npodVRFID: 2\n", "mainVRFID: 0\npodVRFID: 1\n", 1)

const (
	uplinkNIC   = "GigabitEthernet0/8/0"
	pod1NIC     = "GigabitEthernet0/9/0"
	pod2NIC     = "GigabitEthernet0/a/0"
	hostNIC     = "GigabitEthernet0/b/0" // the host interconnect (tap-vpp2)
	hostPeer    = "172.30.1.2"           // the host's end of it
	gatewayIP   = "192.168.16.1"
	outsideHost = "198.51.100.7" // a client outside the cluster, behind the gateway
	extSvcIP    = "20.0.0.2"     // the service's external IP
	lbSvcIP     = "20.0.0.3"     // its load balancer ingress IP
	extSvcPort  = 80
	extTarget   = 8080
	extNodePort = 30080
)

var (
	gatewayMAC = [6]byte{0x02, 0, 0, 0, 0x16, 1}
	pod1MAC    = [6]byte{0x02, 0, 0, 0, 1, 3}
	pod2MAC    = [6]byte{0x02, 0, 0, 0, 1, 4}
	hostMAC    = [6]byte{0x02, 0, 0, 0, 0x30, 2}
)

// externalNode is the node above with the service processor and the NAT44
// renderer of node "master" (env) committing into it.
type externalNode struct {
	env   *env
	agent *agent
	sim   *vppsim.Sim
	conn  *core.Connection // opens channels of their own (a govpp channel serves one goroutine)
	ch    govppapi.Channel
	log   *wire
	clk   *testkit.Clock
	macs  map[string][6]byte // VPP-side MAC by NIC
}

// newExternalNode starts the simulator, wires the node's L3 layout and commits the
// renderer's startup resync into it.
func newExternalNode(t *testing.T) *externalNode {
	t.Helper()
	clk := testkit.NewClockAt(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	v := startVPPWith(t, false, vppsim.Options{NICs: []string{uplinkNIC, pod1NIC, pod2NIC, hostNIC}, Clock: clk})
	n := &externalNode{sim: v.sim, conn: v.conn, ch: v.ch, clk: clk, log: &wire{withIf: true}, macs: make(map[string][6]byte)}
	nics := make(map[string]uint32)
	for name, nic := range map[string]string{mainIf: uplinkNIC, pod1If: pod1NIC, pod2If: pod2NIC, hostIf: hostNIC} {
		i, ok := v.sim.InterfaceByName(nic)
		if !ok {
			t.Fatalf("no NIC %s", nic)
		}
		nics[name] = i.SwIfIndex
		n.macs[nic] = [6]byte(i.MAC)
	}
	n.agent = newAgentOver(t, v, nicIfDescriptor(v.ch, nics), []string{mainIf, pod1If, pod2If, hostIf, bviIf},
		map[uint32]string{podVRF0: "podVRF"})
	n.wireL3(t, v.ch, nics)
	n.env = newEnv(t, envOptions{conf: confMainVRF0})
	if n.env.rndr.mainVRF != 0 || n.env.rndr.podVRF != podVRF0 {
		t.Fatalf("VRFs %d and %d, want 0 and %d", n.env.rndr.mainVRF, n.env.rndr.podVRF, podVRF0)
	}
	n.commit(t)
	v.sim.SetTxHook(n.log.hook)
	return n
}

// podVRF0 is the pod VRF of confMainVRF0.
const podVRF0 = 1

// nicIfDescriptor stands in for the VPP interface descriptor: the named NICs exist
// already (their index is the metadata), other interfaces are tagged loopbacks.
func nicIfDescriptor(ch govppapi.Channel, nics map[string]uint32) *kvapi.KVDescriptor {
	d := loopbackIfDescriptor(ch)
	create, del := d.Create, d.Delete
	d.Create = func(key string, v proto.Message) (kvapi.Metadata, error) {
		if sw, ok := nics[v.(*ifmodel.Interface).GetName()]; ok {
			return &ifaceidx.Metadata{SwIfIndex: sw}, nil
		}
		return create(key, v)
	}
	d.Delete = func(key string, v proto.Message, md kvapi.Metadata) error {
		if _, ok := nics[v.(*ifmodel.Interface).GetName()]; ok {
			return nil
		}
		return del(key, v, md)
	}
	return d
}

// wireL3 configures what ipnet would: addresses, VRFs, neighbours and routes.
func (n *externalNode) wireL3(t *testing.T, ch govppapi.Channel, nics map[string]uint32) {
	t.Helper()
	call := func(req, reply govppapi.Message) {
		t.Helper()
		if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
			t.Fatalf("%s: %v", req.GetMessageName(), err)
		}
	}
	sw := func(name string) interface_types.InterfaceIndex { return interface_types.InterfaceIndex(nics[name]) }
	up := func(i interface_types.InterfaceIndex) {
		call(&interfaces.SwInterfaceSetFlags{SwIfIndex: i, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
	}
	neighbor := func(i interface_types.InterfaceIndex, addr string, mac [6]byte) {
		call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: i,
			Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: ipAddress(addr)}}, &ip_neighbor.IPNeighborAddDelReply{})
	}
	route := func(vrf uint32, prefix string, path fib_types.FibPath) {
		p, err := ip_types.ParsePrefix(prefix)
		if err != nil {
			t.Fatal(err)
		}
		call(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{TableID: vrf, Prefix: p, NPaths: 1, Paths: []fib_types.FibPath{path}}},
			&ip.IPRouteAddDelReply{})
	}
	via := func(i interface_types.InterfaceIndex, nh string) fib_types.FibPath {
		p := fib_types.FibPath{SwIfIndex: uint32(i), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}
		p.Nh.Address = ipAddress(nh).Un
		return p
	}
	lookup := func(vrf uint32) fib_types.FibPath {
		return fib_types.FibPath{SwIfIndex: ^uint32(0), TableID: vrf, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}
	}

	gw := &interfaces.CreateLoopbackReply{}
	call(&interfaces.CreateLoopback{}, gw)
	call(&interfaces.SwInterfaceSetTable{SwIfIndex: gw.SwIfIndex, VrfID: podVRF0}, &interfaces.SwInterfaceSetTableReply{})
	call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: gw.SwIfIndex, IsAdd: true, Prefix: mustPrefix(t, "10.1.1.1/24")},
		&interfaces.SwInterfaceAddDelAddressReply{})
	up(gw.SwIfIndex)
	for _, pod := range []struct {
		ifName, ip string
		mac        [6]byte
	}{{pod1If, pod1IP, pod1MAC}, {pod2If, pod2IP, pod2MAC}} {
		i := sw(pod.ifName)
		call(&interfaces.SwInterfaceSetTable{SwIfIndex: i, VrfID: podVRF0}, &interfaces.SwInterfaceSetTableReply{})
		call(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: gw.SwIfIndex, UnnumberedSwIfIndex: i, IsAdd: true},
			&interfaces.SwInterfaceSetUnnumberedReply{})
		up(i)
		neighbor(i, pod.ip, pod.mac)
		route(podVRF0, pod.ip+"/32", via(i, pod.ip))
	}
	uplink := sw(mainIf)
	call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: uplink, IsAdd: true, Prefix: mustPrefix(t, nodeIP+"/24")},
		&interfaces.SwInterfaceAddDelAddressReply{})
	up(uplink)
	neighbor(uplink, gatewayIP, gatewayMAC)
	route(0, "0.0.0.0/0", via(uplink, gatewayIP))
	// The host stack behind the host interconnect, with this node's management IP.
	host := sw(hostIf)
	call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: host, IsAdd: true, Prefix: mustPrefix(t, "172.30.1.1/24")},
		&interfaces.SwInterfaceAddDelAddressReply{})
	up(host)
	neighbor(host, hostPeer, hostMAC)
	route(0, hostIP+"/32", via(host, hostPeer))
	route(podVRF0, "0.0.0.0/0", lookup(0))
	route(0, "10.1.0.0/16", lookup(podVRF0))
}

// commit sends everything the env committed so far through the scheduler.
func (n *externalNode) commit(t *testing.T) {
	t.Helper()
	values := make(map[string]proto.Message, len(n.env.dp.KVs))
	for k, v := range n.env.dp.KVs {
		values[k] = v
	}
	for k := range n.agent.desired {
		if _, ok := values[k]; !ok {
			if _, infra := n.agent.infra[k]; !infra {
				values[k] = nil
			}
		}
	}
	n.agent.commit(values, false)
}

// apply hands one Kubernetes object to the processor and commits the result.
func (n *externalNode) apply(t *testing.T, obj proto.Message) {
	t.Helper()
	switch o := obj.(type) {
	case *svcmodel.Service:
		n.env.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(o.Name, o.Namespace), NewValue: o})
	case *esmodel.EndpointSlice:
		n.env.update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: esmodel.Key(o.Name, o.Namespace), NewValue: o})
	default:
		t.Fatalf("cannot apply %T", obj)
	}
	n.commit(t)
}

// send injects a TCP segment or UDP datagram into a NIC, from the host behind it
// (the gateway for the uplink, the pod for a pod TAP), and returns the frames the
// node transmits in response.
func (n *externalNode) send(t *testing.T, nic string, proto uint8, flags byte, src netip.AddrPort, dst netip.AddrPort) []string {
	t.Helper()
	peer := map[string][6]byte{uplinkNIC: gatewayMAC, pod1NIC: pod1MAC, pod2NIC: pod2MAC, hostNIC: hostMAC}[nic]
	f := l4Frame(proto, n.macs[nic], peer, src.Addr().String(), src.Port(), dst.Addr().String(), dst.Port())
	if proto == protoTCP {
		f[14+20+13] = flags
	}
	if err := n.sim.InjectFrame(nic, f); err != nil {
		t.Fatal(err)
	}
	return n.log.take()
}

// cli returns the simulator's answer to a CLI command.
func (n *externalNode) cli(t *testing.T, cmd string) string {
	t.Helper()
	reply := &vlib.CliInbandReply{}
	if err := n.ch.SendRequest(&vlib.CliInband{Cmd: cmd}).ReceiveReply(reply); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return reply.Reply
}

// Flags of the TCP segments sent.
const (
	flagSYN    = 0x02
	flagSYNACK = 0x12
)

// nicOfBackend returns the NIC standing for the TAP of a local pod, or the host
// interconnect for this node's host IP.
func nicOfBackend(addr netip.Addr) string {
	switch addr.String() {
	case pod1IP:
		return pod1NIC
	case hostIP:
		return hostNIC
	}
	return pod2NIC
}

// webService is a LoadBalancer service with an external IP, a node port and an
// ingress IP on port 80 (TCP and UDP), and its slice of the two local pods on 8080.
func webService(policy string) (*svcmodel.Service, *esmodel.EndpointSlice) {
	svc := st.Service("default", "web", "10.96.0.50", st.Port("http", "TCP", extSvcPort, extNodePort), st.Port("dns", "UDP", extSvcPort, 0))
	svc.ServiceType, svc.ExternalTrafficPolicy = "LoadBalancer", policy
	svc.ExternalIps, svc.LbIngressIps = []string{extSvcIP}, []string{lbSvcIP}
	ep := func(ip, pod string) *esmodel.Endpoint {
		return &esmodel.Endpoint{Addresses: []string{ip}, Ready: true, Serving: true, NodeName: "master",
			TargetRef: &esmodel.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod}}
	}
	slice := &esmodel.EndpointSlice{Name: "web-1", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
		Ports:     []*esmodel.Port{{Name: "http", Protocol: "TCP", Port: extTarget}, {Name: "dns", Protocol: "UDP", Port: extTarget}},
		Endpoints: []*esmodel.Endpoint{ep(pod1IP, "pod1"), ep(pod2IP, "pod2")}}
	return svc, slice
}

// roundTrip sends a connection's first packet from a client on one NIC to dst and
// the backend's answer; it returns the packet the backend got (as "SRC -> DST") and
// the answer the client got ("" when nothing reached it).
func (n *externalNode) roundTrip(t *testing.T, clientNIC string, proto uint8, client, dst netip.AddrPort) (atBackend, atClient string) {
	t.Helper()
	flags := byte(flagSYN)
	var got []string
	for _, f := range n.send(t, clientNIC, proto, flags, client, dst) {
		if ifName, pkt, _ := strings.Cut(f, " "); ifName == pod1NIC || ifName == pod2NIC || ifName == hostNIC {
			got = append(got, pkt)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%s -> %s (protocol %d): the backends got %q, want one packet", client, dst, proto, got)
	}
	srcText, dstText, _ := strings.Cut(got[0], " -> ")
	src, backend := netip.MustParseAddrPort(srcText), netip.MustParseAddrPort(dstText)
	for _, f := range n.send(t, nicOfBackend(backend.Addr()), proto, flagSYNACK, backend, src) {
		if ifName, pkt, _ := strings.Cut(f, " "); ifName == clientNIC {
			atClient = pkt
		}
	}
	return got[0], atClient
}

// TestExternalAndLoadBalancerIPsAnswerOutsideClients: a client outside the cluster
// (frames entering on the uplink, through the default gateway) reaches a Service on
// its external IP and its load balancer ingress IP, TCP and UDP, and gets the
// backend's answer from the address it connected to (issue #26 item 7: the NAT
// output feature of the uplink dropped the answer). With externalTrafficPolicy
// Local the backend sees the client's own address. Pods still reach the external
// IP, and the node port of the same Service is unaffected.
func TestExternalAndLoadBalancerIPsAnswerOutsideClients(t *testing.T) {
	for _, policy := range []string{"Cluster", "Local"} {
		t.Run(policy, func(t *testing.T) {
			n := newExternalNode(t)
			svc, slice := webService(policy)
			n.apply(t, svc)
			n.apply(t, slice)
			cport := uint16(40000)
			for _, vip := range []string{extSvcIP, lbSvcIP} {
				for _, proto := range []uint8{protoTCP, protoUDP} {
					cport++
					client := netip.AddrPortFrom(netip.MustParseAddr(outsideHost), cport)
					dst := netip.AddrPortFrom(netip.MustParseAddr(vip), extSvcPort)
					atBackend, atClient := n.roundTrip(t, uplinkNIC, proto, client, dst)
					if policy == "Local" && !strings.HasPrefix(atBackend, client.String()+" -> ") {
						t.Errorf("%s -> %s (protocol %d): the backend got %s, want the client's address", client, dst, proto, atBackend)
					}
					if want := dst.String() + " -> " + client.String(); atClient != want {
						t.Errorf("%s -> %s (protocol %d): the client got %q, want %q\n%s", client, dst, proto, atClient, want,
							n.cli(t, "show errors"))
					}
				}
			}
			// A pod reaches the external IP, load-balanced like a client outside.
			pod := netip.AddrPortFrom(netip.MustParseAddr(pod2IP), 41000)
			dst := netip.AddrPortFrom(netip.MustParseAddr(extSvcIP), extSvcPort)
			if _, atClient := n.roundTrip(t, pod2NIC, protoTCP, pod, dst); atClient != dst.String()+" -> "+pod.String() {
				t.Errorf("pod %s -> %s: the pod got %q", pod, dst, atClient)
			}
			// The node port of the same service.
			client := netip.AddrPortFrom(netip.MustParseAddr(outsideHost), 42000)
			np := netip.AddrPortFrom(netip.MustParseAddr(nodeIP), extNodePort)
			if _, atClient := n.roundTrip(t, uplinkNIC, protoTCP, client, np); atClient != np.String()+" -> "+client.String() {
				t.Errorf("%s -> %s: the client got %q", client, np, atClient)
			}
		})
	}
}

// TestExternalIPSharedByServicesKeepsAnsweringUntilTheLast: two services on one
// external IP (other ports) share its identity and pool values; deleting one leaves
// the other answering clients outside the cluster, and deleting the last removes
// them (and the pool's VRF table).
func TestExternalIPSharedByServicesKeepsAnsweringUntilTheLast(t *testing.T) {
	n := newExternalNode(t)
	web, webSlice := webService("Cluster")
	api, apiSlice := webService("Cluster")
	api.Name, api.ClusterIp, api.LbIngressIps, api.ServiceType = "api", "10.96.0.51", nil, "ClusterIP"
	api.Port = []*svcmodel.Service_ServicePort{st.Port("http", "TCP", extSvcPort+1, 0)}
	apiSlice.Name, apiSlice.ServiceName = "api-1", "api"
	for _, obj := range []proto.Message{web, webSlice, api, apiSlice} {
		n.apply(t, obj)
	}
	client := netip.AddrPortFrom(netip.MustParseAddr(outsideHost), 40000)
	dst := netip.AddrPortFrom(netip.MustParseAddr(extSvcIP), extSvcPort+1)
	n.env.deleteService("default", "web")
	n.commit(t)
	if _, atClient := n.roundTrip(t, uplinkNIC, protoTCP, client, dst); atClient != dst.String()+" -> "+client.String() {
		t.Errorf("after deleting the other service, %s -> %s: the client got %q\n%s", client, dst, atClient, n.cli(t, "show errors"))
	}
	n.env.deleteService("default", "api")
	n.commit(t)
	for key, v := range n.env.dp.KVs {
		switch v := v.(type) {
		case *vpp_nat.Nat44Global:
			for _, a := range v.GetAddressPool() {
				if a.GetAddress() == extSvcIP || a.GetAddress() == lbSvcIP {
					t.Errorf("no service left on %s, the NAT pool still has it", a.GetAddress())
				}
			}
		case *vpp_nat.DNat44:
			if strings.HasPrefix(v.GetLabel(), externalDNATLabelPrefix) {
				t.Errorf("no service left, %s is still committed", key)
			}
		case *l3.VrfTable:
			if v.GetId() == externalPoolVRF {
				t.Errorf("no external IP left, %s is still committed", key)
			}
		}
	}
}

// TestExternalIPOfAHostNetworkBackendAnswersOutsideClients: the backend is this
// node's host stack (host network, reached through the host interconnect in the main
// VRF); its answer to a client outside the cluster leaves the uplink from the
// external IP, for both traffic policies.
func TestExternalIPOfAHostNetworkBackendAnswersOutsideClients(t *testing.T) {
	for _, policy := range []string{"Cluster", "Local"} {
		t.Run(policy, func(t *testing.T) {
			n := newExternalNode(t)
			svc, slice := webService(policy)
			// A host-network pod: its endpoint names it (the processor accepts a node's
			// address from such an endpoint only).
			slice.Endpoints = []*esmodel.Endpoint{{Addresses: []string{hostIP}, Ready: true, Serving: true, NodeName: "master",
				TargetRef: &esmodel.ObjectReference{Kind: "Pod", Namespace: "default", Name: "host-web"}}}
			n.apply(t, svc)
			n.apply(t, slice)
			for k, proto := range []uint8{protoTCP, protoUDP} {
				client := netip.AddrPortFrom(netip.MustParseAddr(outsideHost), uint16(40000+k))
				dst := netip.AddrPortFrom(netip.MustParseAddr(extSvcIP), extSvcPort)
				atBackend, atClient := n.roundTrip(t, uplinkNIC, proto, client, dst)
				if !strings.HasSuffix(atBackend, " -> "+hostIP+":8080") {
					t.Errorf("%s -> %s (protocol %d): the backend got %s, want the host", client, dst, proto, atBackend)
				}
				if want := dst.String() + " -> " + client.String(); atClient != want {
					t.Errorf("%s -> %s (protocol %d): the client got %q, want %q\n%s", client, dst, proto, atClient, want, n.cli(t, "show errors"))
				}
			}
		})
	}
}
