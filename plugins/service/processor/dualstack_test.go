package processor

import (
	"net"
	"slices"
	"strings"
	"testing"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// dualConf is testConf on a dual-stack cluster: node 1 ("master") has the IPv6 pod
// subnet fd00:10:1:1::/64 (the worker fd00:10:1:2::/64), the IPv6 node IP
// fd00:192:168:16::1 and the IPv6 service range fd00:10:96::/108.
var dualConf = strings.Replace(testConf, "\nnodeConfig:", "\n  ipv6: {podSubnetCIDR: 'fd00:10:1::/48', "+
	"vppHostSubnetCIDR: 'fd00:172:30::/96', vxlanCIDR: 'fd00:192:168:30::/112', "+
	"nodeInterconnectCIDR: 'fd00:192:168:16::/112', serviceCIDR: 'fd00:10:96::/108'}\nnodeConfig:", 1)

// IPv6 addresses of the dual-stack fixture.
const (
	pod1IP6   = "fd00:10:1:1::3"
	remoteIP6 = "fd00:10:1:2::3"
	nodeIP6   = "fd00:192:168:16::1"
)

// dualService is default/web with an IPv4 and an IPv6 cluster IP, port "http" 80/TCP.
func dualService() *svcmodel.Service {
	svc := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	svc.ClusterIps = []string{"10.96.0.10", "fd00:10:96::a"}
	svc.IpFamilies = []string{"IPv4", "IPv6"}
	svc.IpFamilyPolicy = "RequireDualStack"
	return svc
}

// v6Slice is webSlice of address type IPv6.
func v6Slice(name string, ips ...string) *esmodel.EndpointSlice {
	es := webSlice(name, ips...)
	es.AddressType = "IPv6"
	return es
}

// terminating makes the endpoint i of the slice serving and terminating, not ready.
func terminating(es *esmodel.EndpointSlice, i int) *esmodel.EndpointSlice {
	es.Endpoints[i].Ready, es.Endpoints[i].Serving, es.Endpoints[i].Terminating = false, true, true
	return es
}

// podRefs names a pod behind every endpoint of the slice (pod0, pod1, ...).
func podRefs(es *esmodel.EndpointSlice) *esmodel.EndpointSlice {
	for i, ep := range es.Endpoints {
		ep.TargetRef = &esmodel.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pod" + string(rune('0'+i))}
	}
	return es
}

// TestEndpointSelectionIsPerFamily: kube-proxy runs one proxier per IP family, each
// fed the EndpointSlices of its address type only (pkg/proxy/endpointschangetracker.go);
// the ready / serving-and-terminating fallback, the topology hints and the traffic
// policies are decided for each family on its own endpoints. A ready IPv6 endpoint
// must not take the IPv4 cluster IP's fallback away, nor the hints of one family
// switch those of the other off.
func TestEndpointSelectionIsPerFamily(t *testing.T) {
	tests := []struct {
		name    string
		itp     string // internalTrafficPolicy
		zone    string // this node's zone
		v4, v6  *esmodel.EndpointSlice
		want    []string
		wantHas bool
	}{{
		name:    "IPv4 falls back to terminating while IPv6 is ready",
		v4:      terminating(webSlice("w4", remoteIP), 0),
		v6:      v6Slice("w6", remoteIP6),
		want:    []string{remoteIP + ":8080", "[" + remoteIP6 + "]:8080"},
		wantHas: true,
	}, {
		name:    "IPv6 falls back to terminating while IPv4 is ready",
		v4:      webSlice("w4", remoteIP),
		v6:      terminating(v6Slice("w6", remoteIP6), 0),
		want:    []string{remoteIP + ":8080", "[" + remoteIP6 + "]:8080"},
		wantHas: true,
	}, {
		name: "zone hints of IPv4 hold though IPv6 has none",
		zone: "z1",
		v4: func() *esmodel.EndpointSlice {
			es := webSlice("w4", remoteIP, "10.1.2.4")
			es.Endpoints[0].HintsForZones = []string{"z1"}
			es.Endpoints[1].HintsForZones = []string{"z2"}
			return es
		}(),
		v6:      v6Slice("w6", remoteIP6, "fd00:10:1:2::4"),
		want:    []string{remoteIP + ":8080", "[" + remoteIP6 + "]:8080", "[fd00:10:1:2::4]:8080"},
		wantHas: true,
	}, {
		name:    "internalTrafficPolicy Local: the local fallback of IPv6 while IPv4 has a ready local endpoint",
		itp:     "Local",
		v4:      webSlice("w4", pod1IP, remoteIP),
		v6:      terminating(v6Slice("w6", pod1IP6, remoteIP6), 0),
		want:    []string{pod1IP + ":8080 local", "[" + pod1IP6 + "]:8080 local"},
		wantHas: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, dualConf)
			if tc.zone != "" {
				e.update(&controller.KubeStateChange{Resource: nodemodel.Keyword, Key: nodemodel.Key("master"),
					NewValue: &nodemodel.Node{Name: "master", Zone: tc.zone}})
			}
			svc := dualService()
			svc.InternalTrafficPolicy = tc.itp
			e.putService(svc)
			e.putSlice(tc.v4)
			e.putSlice(tc.v6)
			cs := e.svc("default", "web")
			got := backends(cs, "http")
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("backends %q, want %q", got, want)
			}
			if cs != nil && cs.HasEndpoints["http"] != tc.wantHas {
				t.Errorf("HasEndpoints %v, want %v", cs.HasEndpoints["http"], tc.wantHas)
			}
			// The flat form keeps each family's groups apart, IPv4 first: a renderer
			// of one family reads its own.
			fs := e.sp.services[serviceKeyOf("web", "default")].GetFlatService()
			seen6 := false
			for _, g := range fs.Ports[0].Backends {
				fam := g.Endpoints[0].IsIPv4()
				for _, ep := range g.Endpoints {
					if ep.IsIPv4() != fam {
						t.Errorf("group mixes families: %v", g.Endpoints)
					}
				}
				if fam && seen6 {
					t.Errorf("IPv4 group after an IPv6 group: %v", fs.Ports[0].Backends)
				}
				seen6 = seen6 || !fam
			}
		})
	}
}

// TestIPv6EndpointsAreClassifiedAgainstTheIPv6PodSubnet: an IPv6 pod of this node is
// local and in the pod network, one of another node is remote and in the pod network,
// and this node's IPv6 node address is a local host-network endpoint, as their IPv4
// counterparts are.
func TestIPv6EndpointsAreClassifiedAgainstTheIPv6PodSubnet(t *testing.T) {
	e := newEnv(t, dualConf)
	e.putService(dualService())
	e.putSlice(podRefs(v6Slice("w6", pod1IP6, remoteIP6, nodeIP6, "2001:db8::7")))
	got := backends(e.svc("default", "web"), "http")
	want := []string{"[" + pod1IP6 + "]:8080 local", "[" + remoteIP6 + "]:8080",
		"[" + nodeIP6 + "]:8080 local host-network", "[2001:db8::7]:8080 host-network"}
	if !slices.Equal(got, want) {
		t.Errorf("backends %q, want %q", got, want)
	}
}

// TestIPv6ClusterIPIsCheckedAgainstTheIPv6ServiceRange: the cluster IPs of a
// dual-stack service are each checked against the service range of their family.
func TestIPv6ClusterIPIsCheckedAgainstTheIPv6ServiceRange(t *testing.T) {
	e := newEnv(t, dualConf)
	e.putService(dualService())
	cs := e.svc("default", "web")
	if cs == nil || !cs.ClusterIPs.Has(net.ParseIP("10.96.0.10")) || !cs.ClusterIPs.Has(net.ParseIP("fd00:10:96::a")) {
		t.Fatalf("cluster IPs %v, want both families", cs)
	}
	outside := dualService()
	outside.ClusterIps[1] = "fd00:10:97::a"
	e.putService(outside)
	if cs := e.svc("default", "web"); cs.ClusterIPs.Has(net.ParseIP("fd00:10:97::a")) || cs.ClusterIPs.Len() != 1 {
		t.Errorf("cluster IPs %v: an IPv6 cluster IP outside fd00:10:96::/108 rendered", cs.ClusterIPs)
	}
}

// TestLegacyEndpointsOfBothFamiliesAreSelectedPerFamily: a legacy Endpoints
// subset holding addresses of both families is parsed into one subset per
// family, so that each family's backends form groups of their own (a renderer
// of one family reads its groups only) and each is classified against its
// family's pod subnet.
func TestLegacyEndpointsOfBothFamiliesAreSelectedPerFamily(t *testing.T) {
	e := newEnv(t, dualConf)
	e.putService(dualService())
	e.putEndpoints(st.Endpoints("default", "web", st.Subset([]st.Addr{st.IPAddr(remoteIP), st.IPAddr(pod1IP6), st.IPAddr(pod1IP)},
		st.EpPort("http", 8080, "TCP"))))
	got := backends(e.svc("default", "web"), "http")
	want := []string{remoteIP + ":8080", pod1IP + ":8080 local", "[" + pod1IP6 + "]:8080 local"}
	if !slices.Equal(got, want) {
		t.Errorf("backends %q, want %q (IPv4 first, then IPv6)", got, want)
	}
	fs := e.sp.services[serviceKeyOf("web", "default")].GetFlatService()
	if groups := fs.Ports[0].Backends; len(groups) != 2 || len(groups[0].Endpoints) != 2 || groups[1].Endpoints[0].IsIPv4() {
		t.Errorf("backend groups %v, want the IPv4 pair then the IPv6 address", groups)
	}
}

// TestHasEndpointsIsPerFamily: a dual-stack Service whose endpoints are all IPv6 has
// none for the IPv4 proxier (kube-proxy's proxiers each see their own address type), so
// its IPv4 cluster IP must be rejected while the IPv6 one is served: the flat port says
// so per family.
func TestHasEndpointsIsPerFamily(t *testing.T) {
	for _, tc := range []struct {
		name           string
		slices         []*esmodel.EndpointSlice
		want4, want6   bool
		wantEitherSide bool
	}{
		{name: "IPv6 endpoints only", slices: []*esmodel.EndpointSlice{v6Slice("w6", remoteIP6)}, want6: true, wantEitherSide: true},
		{name: "IPv4 endpoints only", slices: []*esmodel.EndpointSlice{webSlice("w4", remoteIP)}, want4: true, wantEitherSide: true},
		{name: "both", slices: []*esmodel.EndpointSlice{webSlice("w4", remoteIP), v6Slice("w6", remoteIP6)}, want4: true, want6: true, wantEitherSide: true},
		{name: "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, dualConf)
			e.putService(dualService())
			for _, es := range tc.slices {
				e.putSlice(es)
			}
			fs := e.sp.services[serviceKeyOf("web", "default")].GetFlatService()
			p := &fs.Ports[0]
			if p.HasEndpointsOf(true) != tc.want4 || p.HasEndpointsOf(false) != tc.want6 || p.HasEndpoints != tc.wantEitherSide {
				t.Errorf("HasEndpoints IPv4 %v, IPv6 %v, either %v; want %v, %v, %v",
					p.HasEndpointsOf(true), p.HasEndpointsOf(false), p.HasEndpoints, tc.want4, tc.want6, tc.wantEitherSide)
			}
		})
	}
}
