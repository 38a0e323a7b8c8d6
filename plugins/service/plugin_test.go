package service

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	cidrmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

const contivConf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  gateway: 192.168.16.1
`

type fixture struct {
	p     *Plugin
	ipnet *st.IPNet
	pods  *st.PodManager
}

func newFixture(tb testing.TB, loader infra.ConfigLoader) *fixture {
	tb.Helper()
	return newFixtureConf(tb, contivConf, loader)
}

// newFixtureConf is newFixture with the given contiv.conf.
func newFixtureConf(tb testing.TB, conf string, loader infra.ConfigLoader) *fixture {
	tb.Helper()
	cc := st.ContivConf(tb, "master", conf)
	f := &fixture{
		ipnet: &st.IPNet{NodeIP: net.ParseIP("192.168.16.10").To4(), NodeNet: &net.IPNet{IP: net.ParseIP("192.168.16.0").To4(), Mask: net.CIDRMask(24, 32)},
			HostInterconnect: "tap-vpp2", VxlanBVI: "vxlanBVI"},
		pods: &st.PodManager{},
	}
	nodes := &st.NodeSync{ThisNodeID: 1}
	nodes.SetNode(1, "master", []string{"192.168.16.10/24"})
	f.p = NewPlugin(Deps{
		Log: st.QuietLog(), Config: loader, ContivConf: cc, NodeSync: nodes, PodManager: f.pods,
		IPAM: st.IPAM(tb, cc, "master", 1), IPNet: f.ipnet, Registerer: prometheus.NewRegistry(),
	})
	if err := f.p.Init(); err != nil {
		tb.Fatal(err)
	}
	if err := f.p.AfterInit(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.p.Close() })
	return f
}

func TestServiceConfComesFromTheConfigLoader(t *testing.T) {
	f := newFixture(t, infra.StaticConfig{"serviceLocalEndpointWeight": 5, "disableNATVirtualReassembly": true, "tcpNATSessionTimeout": 60})
	got := f.p.GetConfig()
	want := config.Config{ServiceLocalEndpointWeight: 5, DisableNATVirtualReassembly: true, TCPNATSessionTimeout: 60}
	if *got != want {
		t.Errorf("config %+v, want %+v", *got, want)
	}
}

func TestServiceConfFromTheEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "service.conf")
	if err := os.WriteFile(path, []byte("cleanupIdleNATSessions: true\notherNATSessionTimeout: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVICE_CONFIG", path)
	f := newFixture(t, infra.NewConfigFile(nil, config.ConfigName))
	if c := f.p.GetConfig(); !c.CleanupIdleNATSessions || c.OtherNATSessionTimeout != 7 || c.ServiceLocalEndpointWeight != 1 {
		t.Errorf("config %+v", *c)
	}
}

func TestInvalidServiceConfFailsInit(t *testing.T) {
	cc := st.ContivConf(t, "master", contivConf)
	p := NewPlugin(Deps{Log: st.QuietLog(), Config: infra.StaticConfig{"serviceLocalEndpointWeight": 0}, ContivConf: cc,
		NodeSync: &st.NodeSync{}, PodManager: &st.PodManager{}, IPAM: st.IPAM(t, cc, "master", 1), IPNet: &st.IPNet{}})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), "serviceLocalEndpointWeight") {
		t.Errorf("Init = %v, want an error naming serviceLocalEndpointWeight", err)
	}
}

type namedEvent struct{ controller.KubeStateChange }

func (namedEvent) GetName() string { return "Node Update" }

func TestHandledEvents(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		ev   controller.Event
		want bool
	}{
		{controller.NewDBResync(), true},
		{&controller.HealingResync{Type: controller.AfterError}, true},
		{&ipam.PodCIDRChange{}, true},
		{&controller.KubeStateChange{Resource: svcmodel.Keyword}, true},
		{&controller.KubeStateChange{Resource: epmodel.Keyword}, true},
		{&controller.KubeStateChange{Resource: esmodel.Keyword}, true},
		{&controller.KubeStateChange{Resource: cidrmodel.Keyword}, true},
		{&controller.KubeStateChange{Resource: nodemodel.Keyword}, true},
		{&controller.KubeStateChange{Resource: podmodel.Keyword}, false},
		{podmanager.NewAddPod(podmodel.ID{}, "", ""), true},
		{podmanager.NewDeletePod(podmodel.ID{}), true},
		{&nodesync.NodeUpdate{}, true},
		{&namedEvent{}, true},
		{controller.NewShutdown(), false},
		{controller.NewExternalConfigChange("db", false), false},
	}
	for _, tc := range tests {
		if got := f.p.HandlesEvent(tc.ev); got != tc.want {
			t.Errorf("HandlesEvent(%s) = %v, want %v", tc.ev, got, tc.want)
		}
	}
}

func TestUpdateDescribesTheChange(t *testing.T) {
	f := newFixture(t, nil)
	resync := st.NewTxn()
	if err := f.p.Resync(controller.NewDBResync(), controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword), 1, resync); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(resync.Keys(), vpp_nat.GlobalNAT44Key) || !slices.Contains(resync.Keys(), vpp_nat.DNAT44Key("DNAT-identities")) {
		t.Errorf("resync staged %v", resync.Keys())
	}
	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	txn := st.NewTxn()
	change, err := f.p.Update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("nginx", "default"), NewValue: svc}, txn)
	// Without endpoints: rendered so that its cluster IP is rejected.
	rejects := []string{l3.RouteKey(0, "10.96.0.10/32", ""), l3.RouteKey(1, "10.96.0.10/32", "")}
	if err != nil || change != "add service 'default/nginx'" || !slices.Equal(txn.Keys(), append([]string{vpp_nat.DNAT44Key("default/nginx")}, rejects...)) {
		t.Errorf("service without endpoints: %q %v %v", change, err, txn.Keys())
	}
	eps := st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr("10.1.2.3", "default", "r")}, st.EpPort("http", 8080, "")))
	txn = st.NewTxn()
	change, err = f.p.Update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key("nginx", "default"), NewValue: eps}, txn)
	if err != nil || change != "update service 'default/nginx'" {
		t.Errorf("Update = %q, %v", change, err)
	}
	if !slices.Equal(txn.Keys(), append([]string{vpp_nat.DNAT44Key("default/nginx")}, rejects...)) || txn.Values[rejects[0]] != nil {
		t.Errorf("staged %v, want the DNAT and the rejects deleted", txn.Keys())
	}
	if change, _ := f.p.Update(controller.NewShutdown(), st.NewTxn()); change != "" {
		t.Errorf("shutdown changed %q", change)
	}
}

func TestRevertedAddPodLeavesNoTrace(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.p.Resync(controller.NewDBResync(), controller.NewKubeStateData(), 1, st.NewTxn()); err != nil {
		t.Fatal(err)
	}
	f.ipnet.WirePod("default", "pod1", "vpp-tap-pod1")
	add := podmanager.NewAddPod(podmodel.ID{Name: "pod1", Namespace: "default"}, "c1", "/netns")
	txn := st.NewTxn()
	change, err := f.p.Update(add, txn)
	if err != nil || change != "update NAT frontend interfaces" {
		t.Fatalf("AddPod: %q %v", change, err)
	}
	if err := f.p.Revert(add); err != nil {
		t.Fatal(err)
	}
	// The next event that rebuilds the global configuration does not know the pod.
	f.ipnet.WirePod("default", "pod2", "vpp-tap-pod2")
	txn = st.NewTxn()
	if _, err := f.p.Update(podmanager.NewAddPod(podmodel.ID{Name: "pod2", Namespace: "default"}, "c2", "/netns"), txn); err != nil {
		t.Fatal(err)
	}
	global := txn.Get(vpp_nat.GlobalNAT44Key).(*vpp_nat.Nat44Global)
	for _, i := range global.NatInterfaces {
		if i.Name == "vpp-tap-pod1" {
			t.Errorf("reverted pod still a NAT interface: %v", global.NatInterfaces)
		}
	}
}

// TestServiceRendererChoosesWhatIsStaged: with serviceRenderer cnat, a resync stages
// cnat translations of both families and nothing of NAT44 (so that a node switching
// renderer by a restart has the other's configuration removed by its first resync,
// which deletes every key nobody staged); with nat44 (the default) it stages NAT44 and
// no cnat value of IPv4.
func TestServiceRendererChoosesWhatIsStaged(t *testing.T) {
	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	eps := st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr("10.1.2.3", "default", "r")}, st.EpPort("http", 8080, "")))
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("nginx", "default")] = svc
	kube[epmodel.Keyword][epmodel.Key("nginx", "default")] = eps
	for _, renderer := range []string{"nat44", "cnat"} {
		f := newFixtureConf(t, contivConf+"serviceRenderer: "+renderer+"\n", nil)
		txn := st.NewTxn()
		if err := f.p.Resync(controller.NewDBResync(), kube, 1, txn); err != nil {
			t.Fatal(err)
		}
		var nat, cnatKeys []string
		for _, key := range txn.Keys() {
			switch {
			case strings.HasPrefix(key, "config/vpp/nat/"):
				nat = append(nat, key)
			case strings.HasPrefix(key, "config/vpp/cnat/"):
				cnatKeys = append(cnatKeys, key)
			}
		}
		switch renderer {
		case "cnat":
			if len(nat) != 0 || !slices.Contains(cnatKeys, vpp_cnat.TranslationSetKey("default/nginx")) ||
				st.Translation(txn.Values, "10.96.0.10", 80, vpp_cnat.Protocol_TCP) == nil {
				t.Errorf("serviceRenderer cnat: NAT44 keys %q, cnat keys %q (want the service's set with the cluster IP's translation)", nat, cnatKeys)
			}
		default:
			if len(cnatKeys) != 0 || !slices.Contains(nat, vpp_nat.DNAT44Key("default/nginx")) {
				t.Errorf("serviceRenderer nat44 on an IPv4 cluster: cnat keys %q, NAT44 keys %q", cnatKeys, nat)
			}
		}
	}
}

// TestBothRenderersReachTheSameBackends: the same Services rendered by NAT44 and by
// cnat (serviceRenderer) send the same packets to the same backends: a cluster IP to
// every endpoint, a node port of a Cluster policy to every endpoint, a node port of a
// Local policy to this node's endpoint only, and a port without endpoints nowhere.
func TestBothRenderersReachTheSameBackends(t *testing.T) {
	web := st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	local := st.Service("default", "local", "10.96.0.11", st.Port("http", "TCP", 80, 30081))
	local.ExternalTrafficPolicy = "Local"
	empty := st.Service("default", "empty", "10.96.0.12", st.Port("http", "UDP", 53, 0))
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	for _, svc := range []*svcmodel.Service{web, local, empty} {
		kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
	}
	for _, name := range []string{"web", "local"} {
		kube[epmodel.Keyword][epmodel.Key(name, "default")] = st.Endpoints("default", name, st.Subset(
			[]st.Addr{st.IPAddr("10.1.2.3"), st.IPAddr("10.1.1.3")}, st.EpPort("http", 8080, "")))
	}
	type tracer interface {
		Trace(st.Packet) ([]st.Outcome, string)
	}
	packets := []st.Packet{
		{Proto: vpp_nat.DNat44_TCP, Src: netip.MustParseAddrPort("10.1.1.9:40000"), Dst: netip.MustParseAddrPort("10.96.0.10:80"), InIf: "GbE"},
		{Proto: vpp_nat.DNat44_TCP, Src: netip.MustParseAddrPort("8.8.8.8:40000"), Dst: netip.MustParseAddrPort("192.168.16.10:30080"), InIf: "GbE"},
		{Proto: vpp_nat.DNat44_TCP, Src: netip.MustParseAddrPort("8.8.8.8:40000"), Dst: netip.MustParseAddrPort("192.168.16.10:30081"), InIf: "GbE"},
		{Proto: vpp_nat.DNat44_UDP, Src: netip.MustParseAddrPort("10.1.1.9:40000"), Dst: netip.MustParseAddrPort("10.96.0.12:53"), InIf: "GbE"},
	}
	reached := make(map[string][]string)
	for _, rndr := range []string{"nat44", "cnat"} {
		f := newFixtureConf(t, contivConf+"serviceRenderer: "+rndr+"\n", nil)
		txn := st.NewTxn()
		if err := f.p.Resync(controller.NewDBResync(), kube, 1, txn); err != nil {
			t.Fatal(err)
		}
		var tr tracer = st.NATFrom(txn.Values)
		if rndr == "cnat" {
			tr = st.CNATFrom(txn.Values)
		}
		for _, p := range packets {
			outcomes, why := tr.Trace(p)
			got := strings.Join(st.Destinations(outcomes), ",")
			if why != "" {
				got = "untranslated"
			}
			reached[p.Dst.String()] = append(reached[p.Dst.String()], got)
		}
	}
	for dst, got := range reached {
		if len(got) != 2 || got[0] != got[1] {
			t.Errorf("%s: NAT44 reaches %q, cnat %q", dst, got[0], got[1])
		}
	}
	if got := reached["192.168.16.10:30081"][0]; got != "10.1.1.3:8080" {
		t.Errorf("externalTrafficPolicy Local node port reaches %q, want this node's endpoint only", got)
	}
}

// TestServiceLoadBalancingMaglevReachesTheCNATRenderer: service.conf
// serviceLoadBalancing: maglev makes the node port's cnat translation lb_type MAGLEV
// (the cluster IP's stays DEFAULT); without the key both are DEFAULT.
func TestServiceLoadBalancingMaglevReachesTheCNATRenderer(t *testing.T) {
	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	eps := st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr("10.1.2.3", "default", "r")}, st.EpPort("http", 8080, "")))
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("nginx", "default")] = svc
	kube[epmodel.Keyword][epmodel.Key("nginx", "default")] = eps
	for _, lb := range []string{"", "maglev"} {
		var loader infra.ConfigLoader
		want := vpp_cnat.Translation_DEFAULT
		if lb != "" {
			loader, want = infra.StaticConfig{"serviceLoadBalancing": lb}, vpp_cnat.Translation_MAGLEV
		}
		f := newFixtureConf(t, contivConf+"serviceRenderer: cnat\n", loader)
		txn := st.NewTxn()
		if err := f.p.Resync(controller.NewDBResync(), kube, 1, txn); err != nil {
			t.Fatal(err)
		}
		np := st.Translation(txn.Values, "192.168.16.10", 30080, vpp_cnat.Protocol_TCP)
		cip := st.Translation(txn.Values, "10.96.0.10", 80, vpp_cnat.Protocol_TCP)
		if np == nil || cip == nil || np.GetLbType() != want || cip.GetLbType() != vpp_cnat.Translation_DEFAULT {
			t.Errorf("serviceLoadBalancing %q: node port %v, cluster IP %v; want the node port's lb_type %v, the cluster IP's DEFAULT", lb, np, cip, want)
		}
	}
	cc := st.ContivConf(t, "master", contivConf)
	p := NewPlugin(Deps{Log: st.QuietLog(), Config: infra.StaticConfig{"serviceLoadBalancing": "random"}, ContivConf: cc,
		NodeSync: &st.NodeSync{}, PodManager: &st.PodManager{}, IPAM: st.IPAM(t, cc, "master", 1), IPNet: &st.IPNet{}})
	if err := p.Init(); err == nil || !strings.Contains(err.Error(), `serviceLoadBalancing: "random"`) {
		t.Errorf("Init with serviceLoadBalancing random: %v, want an error naming the key and the value", err)
	}
}
