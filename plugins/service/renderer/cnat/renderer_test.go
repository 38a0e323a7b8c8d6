package cnat

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// The node under test: "master" (ID 1) of a dual-stack cluster, node IPs 192.168.16.10
// and fd00:192:168:16::1 on GbE, main VRF 0, pod VRF 1.
const (
	mainIf  = "GbE"
	hostIf  = "tap-vpp2"
	bviIf   = "vxlanBVI"
	podIf   = "vpp-tap-pod1"
	nodeIP4 = "192.168.16.10"
	nodeIP6 = "fd00:192:168:16::1"
	peerIP4 = "192.168.16.20"
)

const dualConf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
  ipv6: {podSubnetCIDR: 'fd00:10:1::/48', vppHostSubnetCIDR: 'fd00:172:30::/96', vxlanCIDR: 'fd00:192:168:30::/112', nodeInterconnectCIDR: 'fd00:192:168:16::/112', serviceCIDR: 'fd00:10:96::/108'}
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  gateway: 192.168.16.1
`

// describedTxn is a test transaction that keeps the change descriptions.
type describedTxn struct {
	*st.Txn
	changes []string
}

func (d *describedTxn) Describe(change string) { d.changes = append(d.changes, change) }

// newRenderer returns a resynced renderer of the node (ipv4: serviceRenderer cnat)
// with the node IPs of master and a peer, and the given services.
func newRenderer(t *testing.T, ipv4 bool, services ...*renderer.FlatService) (*Renderer, *st.Txn) {
	t.Helper()
	return newRendererConf(t, dualConf, ipv4, services...)
}

// newRendererConf is newRenderer with the given contiv.conf.
func newRendererConf(t *testing.T, conf string, ipv4 bool, services ...*renderer.FlatService) (*Renderer, *st.Txn) {
	t.Helper()
	return newRendererWith(t, conf, ipv4, false, services...)
}

// newRendererWith is newRendererConf with Maglev for external traffic or not.
func newRendererWith(t testing.TB, conf string, ipv4, maglev bool, services ...*renderer.FlatService) (*Renderer, *st.Txn) {
	t.Helper()
	cc := st.ContivConf(t, "master", conf)
	ipamPlugin := st.IPAM(t, cc, "master", 1)
	_, nodeNet, _ := net.ParseCIDR("192.168.16.0/24")
	r := &Renderer{Deps: Deps{Log: st.QuietLog(), ContivConf: cc, IPAM: ipamPlugin, IPv4: ipv4, Maglev: maglev,
		IPNet: &st.IPNet{NodeIP: net.ParseIP(nodeIP4).To4(), NodeNet: nodeNet, HostInterconnect: hostIf, VxlanBVI: bviIf}}}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	txn := st.NewTxn()
	ev := &renderer.FlatResyncEventData{
		NodeIPs:     renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4)),
		Services:    services,
		FrontendIfs: renderer.NewInterfaces(mainIf, hostIf, bviIf, podIf),
		BackendIfs:  renderer.NewInterfaces(hostIf, bviIf, podIf),
	}
	if err := r.ResyncFlat(txn, ev); err != nil {
		t.Fatal(err)
	}
	return r, txn
}

func addr(s string) renderer.Address { return renderer.NewAddress(netip.MustParseAddr(s).AsSlice()) }

// webService is default/web: cluster IPs 10.96.0.10 and fd00:10:96::a, port "http"
// 80/TCP (node port 30080) to target 8080 of the given endpoints.
func webService(endpoints ...string) *renderer.FlatService {
	fs := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: "web"},
		ClusterIPs: []renderer.Address{addr("10.96.0.10"), addr("fd00:10:96::a")},
		Ports:      []renderer.FlatPort{{Name: "http", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: 80, NodePort: 30080}}}}
	p := &fs.Ports[0]
	var has4, has6 bool
	for _, e := range endpoints {
		a := addr(e)
		has4, has6 = has4 || a.IsIPv4(), has6 || !a.IsIPv4()
		if len(p.Backends) == 0 {
			p.Backends = []renderer.BackendGroup{{TargetPort: 8080}}
		}
		p.Backends[0].Endpoints = append(p.Backends[0].Endpoints, renderer.Endpoint{Address: a})
	}
	p.ExternalBackends = p.Backends
	p.HasEndpoints = has4 || has6
	p.NoIPv4Endpoints, p.NoIPv6Endpoints = p.HasEndpoints && !has4, p.HasEndpoints && !has6
	return fs
}

// translation returns the translation of (vip, port, TCP) in the sets staged.
func translation(txn *st.Txn, vip string, port uint32) *vpp_cnat.Translation {
	return st.Translation(txn.Values, vip, port, vpp_cnat.Protocol_TCP)
}

// dsts returns the destinations of a translation's paths as "ip:port".
func dsts(t *vpp_cnat.Translation) []string {
	var out []string
	for _, p := range t.GetPaths() {
		out = append(out, netip.AddrPortFrom(netip.MustParseAddr(p.GetDst().GetAddress()), uint16(p.GetDst().GetPort())).String())
	}
	return out
}

// TestServesIPv6OnlyUnlessChosenForIPv4: with serviceRenderer nat44 the cnat renderer
// translates the IPv6 cluster IP only (the IPv4 one is NAT44's); with cnat both, each
// to the backends of its own family.
func TestServesIPv6OnlyUnlessChosenForIPv4(t *testing.T) {
	svc := webService("10.1.2.3", "fd00:10:1:2::3")
	for _, ipv4 := range []bool{false, true} {
		_, txn := newRenderer(t, ipv4, svc)
		if got := dsts(translation(txn, "fd00:10:96::a", 80)); !slices.Equal(got, []string{"[fd00:10:1:2::3]:8080"}) {
			t.Errorf("ipv4=%v: IPv6 cluster IP to %q, want the IPv6 backend", ipv4, got)
		}
		got4 := translation(txn, "10.96.0.10", 80)
		switch {
		case ipv4 && !slices.Equal(dsts(got4), []string{"10.1.2.3:8080"}):
			t.Errorf("serviceRenderer cnat: IPv4 cluster IP to %q, want the IPv4 backend", dsts(got4))
		case !ipv4 && got4 != nil:
			t.Errorf("serviceRenderer nat44: the IPv4 cluster IP has a cnat translation %v", got4)
		}
		if got4 != nil && (got4.GetIsRealIp() || got4.GetAllocPort() || got4.GetPaths()[0].GetSrc() != nil) {
			t.Errorf("cluster IP translation %v: want cnat's own VIP, no source NAT", got4)
		}
		for _, key := range txn.Keys() {
			if v, ok := txn.Values[key].(*vpp_cnat.SnatFeature); ok && !ipv4 && v.GetFamily() == vpp_cnat.AddressFamily_IPV4 {
				t.Errorf("serviceRenderer nat44: cnat-snat-ip4 enabled on %s", v.GetInterface())
			}
		}
	}
}

// TestNodePortIsInterposedOnEveryNodeIPAndMasqueraded: the node port is translated on
// every node IP of the families served (the node's real addresses: is_real_ip), its
// flows source-NATed to this node's IP of the family (kube-proxy masquerades external
// traffic of a Cluster policy); with externalTrafficPolicy Local the client's address
// is kept and only the external backends are used.
func TestNodePortIsInterposedOnEveryNodeIPAndMasqueraded(t *testing.T) {
	svc := webService("10.1.2.3", "10.1.1.3", "fd00:10:1:2::3")
	_, txn := newRenderer(t, true, svc)
	for _, c := range []struct{ vip, src string }{{nodeIP4, nodeIP4}, {peerIP4, nodeIP4}, {nodeIP6, nodeIP6}} {
		tr := translation(txn, c.vip, 30080)
		if tr == nil || !tr.GetIsRealIp() || !tr.GetAllocPort() {
			t.Fatalf("node port on %s: %v, want an interposed translation allocating source ports", c.vip, tr)
		}
		for _, p := range tr.GetPaths() {
			if p.GetSrc().GetAddress() != c.src {
				t.Errorf("node port on %s: path %v, want source %s", c.vip, p, c.src)
			}
		}
	}
	local := webService("10.1.2.3", "10.1.1.3")
	local.TrafficPolicy = renderer.NodeLocal
	local.Ports[0].ExternalBackends = []renderer.BackendGroup{{TargetPort: 8080, Endpoints: []renderer.Endpoint{{Address: addr("10.1.1.3"), Local: true}}}}
	_, txn = newRenderer(t, true, local)
	tr := translation(txn, nodeIP4, 30080)
	if got := dsts(tr); !slices.Equal(got, []string{"10.1.1.3:8080"}) || tr.GetAllocPort() || tr.GetPaths()[0].GetSrc() != nil {
		t.Errorf("externalTrafficPolicy Local: %v, want the local backend only, client address kept", tr)
	}
	if got := dsts(translation(txn, "10.96.0.10", 80)); len(got) != 2 {
		t.Errorf("externalTrafficPolicy Local: cluster IP to %q, want every backend (internal traffic)", got)
	}
}

// TestClientIPAffinityHashesOnTheSourceAddress: ClientIP affinity makes the flow hash
// cover the source address only, so a client's flows take one path.
func TestClientIPAffinityHashesOnTheSourceAddress(t *testing.T) {
	svc := webService("10.1.2.3", "10.1.2.4")
	svc.SessionAffinityTimeout = 10800
	_, txn := newRenderer(t, true, svc)
	if got := translation(txn, "10.96.0.10", 80).GetFlowHashConfig(); got != flowHashSrcIP {
		t.Errorf("flow_hash_config %#x, want %#x (source IP only)", got, flowHashSrcIP)
	}
	_, txn = newRenderer(t, true, webService("10.1.2.3"))
	if got := translation(txn, "10.96.0.10", 80).GetFlowHashConfig(); got != 0 {
		t.Errorf("no affinity: flow_hash_config %#x, want 0 (VPP's default)", got)
	}
}

// TestAddressWithoutEndpointsOfItsFamilyIsRejected: a family without endpoints gets a
// reject route on its cluster IP (/32 or /128, main and pod VRF) and no translation;
// the other family is translated and has no route.
func TestAddressWithoutEndpointsOfItsFamilyIsRejected(t *testing.T) {
	_, txn := newRenderer(t, true, webService("fd00:10:1:2::3"))
	for _, vrf := range []uint32{0, 1} {
		r, _ := txn.Values[l3.RouteKey(vrf, "10.96.0.10/32", "")].(*l3.Route)
		if r.GetType() != l3.Route_ICMP_PROHIBIT {
			t.Errorf("IPv4 cluster IP without IPv4 endpoints, VRF %d: route %v, want ICMP_PROHIBIT", vrf, r)
		}
		if r := txn.Values[l3.RouteKey(vrf, "fd00:10:96::a/128", "")]; r != nil {
			t.Errorf("IPv6 cluster IP with endpoints, VRF %d: route %v", vrf, r)
		}
	}
	if tr := translation(txn, "10.96.0.10", 80); tr != nil {
		t.Errorf("IPv4 cluster IP without IPv4 endpoints translated: %v", tr)
	}
	_, txn = newRenderer(t, false, webService())
	if r, _ := txn.Values[l3.RouteKey(0, "fd00:10:96::a/128", "")].(*l3.Route); r.GetType() != l3.Route_ICMP_PROHIBIT {
		t.Errorf("IPv6 cluster IP without endpoints: route %v, want ICMP_PROHIBIT", r)
	}
	if r := txn.Values[l3.RouteKey(0, "10.96.0.10/32", "")]; r != nil {
		t.Errorf("serviceRenderer nat44: cnat staged the IPv4 route %v (NAT44's)", r)
	}
}

// TestUpdateStagesOnlyTheChange: a service losing a port stages its set without that
// port's translation, the unchanged ones the very messages of the previous set; an
// address that keeps no translation gets its reject route; delete removes everything.
func TestUpdateStagesOnlyTheChange(t *testing.T) {
	two := webService("10.1.2.3")
	two.Ports = append(two.Ports, renderer.FlatPort{Name: "https", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: 443},
		Backends: two.Ports[0].Backends, ExternalBackends: two.Ports[0].Backends, HasEndpoints: true, NoIPv6Endpoints: true})
	r, resync := newRenderer(t, true, two)
	one := webService("10.1.2.3")
	txn := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatService(txn, two, one); err != nil {
		t.Fatal(err)
	}
	key := vpp_cnat.TranslationSetKey("default/web")
	prev, next := setOf(resync, two.ID), setOf(txn.Txn, one.ID)
	want := without(ids(prev), "10.96.0.10/443/TCP")
	if got := txn.Keys(); !slices.Equal(got, []string{key}) || !slices.Equal(ids(next), want) {
		t.Errorf("update staged %q with %q, want only %s with %q", got, ids(next), key, want)
	}
	if got := shared(prev, next); !slices.Equal(got, want) {
		t.Errorf("update: %q are the previous messages, want every unchanged translation %q", got, want)
	}
	none := webService()
	txn = &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatService(txn, one, none); err != nil {
		t.Fatal(err)
	}
	if rt, _ := txn.Values[l3.RouteKey(0, "10.96.0.10/32", "")].(*l3.Route); rt.GetType() != l3.Route_ICMP_PROHIBIT {
		t.Errorf("last endpoint gone: route %v, want ICMP_PROHIBIT", rt)
	}
	txn = &describedTxn{Txn: st.NewTxn()}
	if err := r.DeleteFlatService(txn, none); err != nil {
		t.Fatal(err)
	}
	for _, key := range txn.Keys() {
		if txn.Values[key] != nil {
			t.Errorf("delete staged %s = %v", key, txn.Values[key])
		}
	}
	if len(r.ownership.owners) != 0 || len(r.ownership.vips) != 0 || len(r.ownership.nodePorts) != 0 || len(r.ownership.byPort) != 0 {
		t.Errorf("after delete: ownership %+v", r.ownership)
	}
}

// TestSourceNATOfPodsLeavingTheCluster: the K8S policy, the SNAT addresses, the
// cluster's ranges excluded, the cnat-snat feature and POD table on every frontend and
// backend interface, the include table on pods' interfaces only, HOST on the host
// interconnect; a pod interface joining adds its values, leaving deletes them.
func TestSourceNATOfPodsLeavingTheCluster(t *testing.T) {
	r, txn := newRenderer(t, true)
	wantValues := map[string]proto.Message{
		vpp_cnat.SnatPolicyKey:                                                                  &vpp_cnat.SnatPolicy{Policy: vpp_cnat.SnatPolicy_K8S},
		vpp_cnat.SnatAddressesKey:                                                               &vpp_cnat.SnatAddresses{Ip4: nodeIP4, Ip6: nodeIP6},
		vpp_cnat.SnatExcludePrefixKey("10.1.0.0/16"):                                            &vpp_cnat.SnatExcludePrefix{Prefix: "10.1.0.0/16"},
		vpp_cnat.SnatExcludePrefixKey("10.96.0.0/12"):                                           &vpp_cnat.SnatExcludePrefix{Prefix: "10.96.0.0/12"},
		vpp_cnat.SnatExcludePrefixKey("fd00:10:96::/108"):                                       &vpp_cnat.SnatExcludePrefix{Prefix: "fd00:10:96::/108"},
		vpp_cnat.SnatFeatureKey(mainIf, vpp_cnat.SnatFeature_SNAT, vpp_cnat.AddressFamily_IPV6): &vpp_cnat.SnatFeature{Interface: mainIf, Family: vpp_cnat.AddressFamily_IPV6},
		vpp_cnat.SnatPolicyInterfaceKey(mainIf, vpp_cnat.SnatPolicyInterface_POD):               &vpp_cnat.SnatPolicyInterface{Interface: mainIf, Table: vpp_cnat.SnatPolicyInterface_POD},
		vpp_cnat.SnatPolicyInterfaceKey(hostIf, vpp_cnat.SnatPolicyInterface_HOST):              &vpp_cnat.SnatPolicyInterface{Interface: hostIf, Table: vpp_cnat.SnatPolicyInterface_HOST},
		vpp_cnat.SnatPolicyInterfaceKey(podIf, vpp_cnat.SnatPolicyInterface_INCLUDE_V4):         &vpp_cnat.SnatPolicyInterface{Interface: podIf, Table: vpp_cnat.SnatPolicyInterface_INCLUDE_V4},
	}
	for key, want := range wantValues {
		if got := txn.Values[key]; !proto.Equal(got, want) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	for _, key := range []string{
		vpp_cnat.SnatPolicyInterfaceKey(mainIf, vpp_cnat.SnatPolicyInterface_INCLUDE_V4),
		vpp_cnat.SnatPolicyInterfaceKey(bviIf, vpp_cnat.SnatPolicyInterface_INCLUDE_V6),
	} {
		if v, ok := txn.Values[key]; ok {
			t.Errorf("%s staged (%v): only pods' interfaces are included", key, v)
		}
	}
	const newPod = "vpp-tap-pod2"
	upd := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFrontendIfs(upd, r.frontendIfs, unionOf(r.frontendIfs, renderer.NewInterfaces(newPod))); err != nil {
		t.Fatal(err)
	}
	if got := len(upd.Keys()); got != 9 { // 6 features (SNAT, INPUT, OUTPUT per family), POD, INCLUDE_V4, INCLUDE_V6
		t.Errorf("a pod joining staged %q, want its 9 values", upd.Keys())
	}
	upd = &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFrontendIfs(upd, r.frontendIfs, renderer.NewInterfaces(mainIf, hostIf, bviIf, podIf)); err != nil {
		t.Fatal(err)
	}
	for _, key := range upd.Keys() {
		if upd.Values[key] != nil {
			t.Errorf("a pod leaving: %s put", key)
		}
	}
	if got := len(upd.Keys()); got != 9 {
		t.Errorf("a pod leaving staged %q, want the deletion of its 9 values", upd.Keys())
	}
}

// TestNoRouteOnAnAddressThatHasATranslation: two services share a load balancer IP on
// other ports, one without endpoints: the address gets no reject route while the other
// has a translation on it (a route in the pod VRF would take every port of the address
// away from cnat, which drops the unmatched port itself), and the reject once the
// translation goes.
func TestNoRouteOnAnAddressThatHasATranslation(t *testing.T) {
	lb := func(name string, port uint16, endpoints ...string) *renderer.FlatService {
		fs := webService(endpoints...)
		fs.ID.Name, fs.ClusterIPs, fs.ExternalIPs = name, nil, []renderer.Address{addr("20.0.0.9")}
		fs.Ports[0].Port = renderer.ServicePort{Protocol: renderer.TCP, Port: port}
		return fs
	}
	a, b := lb("a", 80), lb("b", 443, "10.1.2.3")
	r, txn := newRenderer(t, true, a, b)
	key := l3.RouteKey(0, "20.0.0.9/32", "")
	if rt, staged := txn.Values[key]; staged {
		t.Errorf("address with a translation: route %v", rt)
	}
	upd := &describedTxn{Txn: st.NewTxn()}
	if err := r.DeleteFlatService(upd, b); err != nil {
		t.Fatal(err)
	}
	if rt, _ := upd.Values[key].(*l3.Route); rt.GetType() != l3.Route_ICMP_PROHIBIT {
		t.Errorf("translation gone, a port without endpoints left: route %v, want ICMP_PROHIBIT", rt)
	}
}

// TestStagedValuesAreValid: every cnat value a resync stages passes the model's
// validation (what the cnat descriptors check before programming VPP), with and
// without natExternalTraffic.
func TestStagedValuesAreValid(t *testing.T) {
	svc := webService("10.1.2.3", "fd00:10:1:2::3")
	svc.SessionAffinityTimeout = 60
	_, txn := newRenderer(t, true, svc, webService())
	for key, v := range txn.Values {
		var err error
		switch m := v.(type) {
		case *vpp_cnat.TranslationSet:
			err = vpp_cnat.ValidateTranslationSet(m)
		case *vpp_cnat.SnatAddresses:
			err = vpp_cnat.ValidateSnatAddresses(m)
		case *vpp_cnat.SnatPolicy:
			err = vpp_cnat.ValidateSnatPolicy(m)
		case *vpp_cnat.SnatExcludePrefix:
			err = vpp_cnat.ValidateSnatExcludePrefix(m)
		case *vpp_cnat.SnatPolicyInterface:
			err = vpp_cnat.ValidateSnatPolicyInterface(m)
		case *vpp_cnat.SnatFeature:
			err = vpp_cnat.ValidateSnatFeature(m)
		}
		if err != nil {
			t.Errorf("%s: %v", key, err)
		}
		if k, kerr := vpp_cnat.ModelKey(v); kerr == nil && k != key {
			t.Errorf("%s staged under a key other than its own %s", key, k)
		}
	}
}

// TestWithoutNATOfExternalTrafficPodsKeepTheirAddress: natExternalTraffic false leaves
// pods' interfaces out of the include tables (no SNAT of traffic leaving the cluster),
// but the SNAT addresses are the node IPs still: the cnat-snat feature needs one for
// hairpin traffic, and the descriptors enable a family's feature only once it has one.
func TestWithoutNATOfExternalTrafficPodsKeepTheirAddress(t *testing.T) {
	_, txn := newRendererConf(t, dualConf+"natExternalTraffic: false\n", true)
	for key, v := range txn.Values {
		if pi, ok := v.(*vpp_cnat.SnatPolicyInterface); ok && (pi.GetTable() == vpp_cnat.SnatPolicyInterface_INCLUDE_V4 ||
			pi.GetTable() == vpp_cnat.SnatPolicyInterface_INCLUDE_V6) {
			t.Errorf("natExternalTraffic false: %s staged", key)
		}
	}
	want := &vpp_cnat.SnatAddresses{Ip4: nodeIP4, Ip6: nodeIP6}
	if got := txn.Values[vpp_cnat.SnatAddressesKey]; !proto.Equal(got, want) {
		t.Errorf("SNAT addresses %v, want %v", got, want)
	}
}

// TestNoSNATFeatureOfAFamilyWithoutSNATAddress: on an IPv4-only cluster
// (serviceRenderer cnat) no cnat-snat-ip6 feature is staged, and without a node IP no
// cnat-snat-ip4 either: the descriptor enables a family's feature only once the family
// has a SNAT address, so such a value would stay pending for ever.
func TestNoSNATFeatureOfAFamilyWithoutSNATAddress(t *testing.T) {
	const ipv4Conf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  gateway: 192.168.16.1
`
	_, txn := newRendererConf(t, ipv4Conf, true, webService(pod1))
	if txn.Values[vpp_cnat.SnatFeatureKey(podIf, vpp_cnat.SnatFeature_SNAT, vpp_cnat.AddressFamily_IPV4)] == nil {
		t.Error("no cnat-snat-ip4 on the pod's interface")
	}
	for _, k := range txn.Keys() {
		if f, ok := txn.Values[k].(*vpp_cnat.SnatFeature); ok && f.GetFamily() == vpp_cnat.AddressFamily_IPV6 {
			t.Errorf("%s staged on an IPv4-only cluster", k)
		}
	}
}

// TestNodePortTranslationsShareTheirPaths: an Endpoints change of a node-port service
// renders one translation per node IP; what each further node IP costs does not
// include building the backends' paths again (10 backends: 20 allocations per node IP
// when each translation had its own paths).
func TestNodePortTranslationsShareTheirPaths(t *testing.T) {
	eps := make([]string, 10)
	for i := range eps {
		eps[i] = fmt.Sprintf("10.1.2.%d", i+10)
	}
	allocsWith := func(nodeIPs int) float64 {
		a, b := webService(eps...), webService(append(eps[1:], "10.1.3.10")...)
		r, _ := newRenderer(t, true, a)
		ips := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6))
		for i := 0; i < nodeIPs-2; i++ {
			ips.Add(net.ParseIP(fmt.Sprintf("192.168.17.%d", i+1)))
		}
		if err := r.UpdateFlatNodePortServices(&describedTxn{Txn: st.NewTxn()}, ips, []*renderer.FlatService{a}); err != nil {
			t.Fatal(err)
		}
		cur, next := a, b
		return testing.AllocsPerRun(20, func() {
			if err := r.UpdateFlatService(&describedTxn{Txn: st.NewTxn()}, cur, next); err != nil {
				t.Fatal(err)
			}
			cur, next = next, cur
		})
	}
	few, many := allocsWith(2), allocsWith(42)
	if perIP := (many - few) / 40; perIP >= 10 {
		t.Errorf("an Endpoints change allocates %.0f times more per node IP (%.0f with 2 node IPs, %.0f with 42), want under 10: "+
			"the node IPs' translations build their paths each", perIP, few, many)
	}
}
