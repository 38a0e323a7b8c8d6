package nat44

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// TestExternalIPsThatGetIdentityAndPoolValues: only IPv4 external IPs that are no
// node IP and no address of the NAT pool already (VPP refuses an address twice) get
// the values, each once, and none without a default interface (no output feature).
func TestExternalIPsThatGetIdentityAndPoolValues(t *testing.T) {
	addrs := func(texts ...string) []renderer.Address {
		var out []renderer.Address
		for _, s := range texts {
			out = append(out, renderer.NewAddress(netip.MustParseAddr(s).AsSlice()))
		}
		return out
	}
	svc := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: "web"},
		ExternalIPs: addrs("20.0.0.2", nodeIP, workerIP, natLoop, "2001:db8::2", "20.0.0.3", "20.0.0.2")}
	e := newEnv(t, envOptions{})
	if got := e.rndr.wantedExternalIPs(svc); !slices.Equal(got, []string{"20.0.0.2", "20.0.0.3"}) {
		t.Errorf("with a default interface: %q", got)
	}
	noGateway := newEnv(t, envOptions{conf: strings.Replace(confVXLAN, "  gateway: 192.168.16.1\n", "", 1)})
	if got := noGateway.rndr.wantedExternalIPs(svc); got != nil {
		t.Errorf("without a default interface: %q", got)
	}
}

// TestExternalIPThatBecomesANodeIPLosesItsValuesAndRoute: a Service's external IP may
// be a node's address (a common way to expose a Service). When a node joins with such
// an IP, the IP must lose the identity and pool values and the reject route it had as
// a plain external IP (a reject route there would cut pods off the node; VPP refuses a
// pool address twice), and get them back when the node leaves: the node's update
// leaves exactly what a fresh rendering of the same cluster has.
func TestExternalIPThatBecomesANodeIPLosesItsValuesAndRoute(t *testing.T) {
	const joinerIP, joinerMg = "192.168.16.30", "10.3.1.30"
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	served := st.Service("default", "served", "10.96.0.30", st.Port("http", "TCP", 80, 0))
	served.ExternalIps = []string{joinerIP}
	kube[svcmodel.Keyword][svcmodel.Key("served", "default")] = served
	kube[epmodel.Keyword][epmodel.Key("served", "default")] = st.Endpoints("default", "served",
		st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1")}, st.EpPort("http", 8080, "")))
	empty := st.Service("default", "empty", "10.96.0.31", st.Port("dns", "UDP", 53, 0))
	empty.ExternalIps = []string{joinerMg}
	kube[svcmodel.Keyword][svcmodel.Key("empty", "default")] = empty
	withJoiner := func(e *env) { e.nodes.SetNode(3, "worker2", []string{joinerIP + "/24"}, joinerMg) }

	e := newEnv(t, envOptions{kube: kube})
	if _, ok := e.dp.KVs[vpp_nat.DNAT44Key(externalDNATLabelPrefix+joinerIP)]; !ok {
		t.Fatalf("before the join, %s has no identity values: %v", joinerIP, slices.Sorted(maps.Keys(e.dp.KVs)))
	}
	withJoiner(e)
	e.nodeUpdate("worker2", nil, e.nodes.Nodes["worker2"])
	if d := diffKVs(newEnv(t, envOptions{kube: kube, nodes: withJoiner}).dp.KVs, e.dp.KVs); d != "" {
		t.Errorf("after the node with %s and %s joined, the configuration differs from a fresh node's:\n%s", joinerIP, joinerMg, d)
	}
	delete(e.nodes.Nodes, "worker2")
	e.nodeUpdate("worker2", nil, nil)
	if d := diffKVs(newEnv(t, envOptions{kube: kube}).dp.KVs, e.dp.KVs); d != "" {
		t.Errorf("after the node left, the configuration differs from a fresh node's:\n%s", d)
	}
}
