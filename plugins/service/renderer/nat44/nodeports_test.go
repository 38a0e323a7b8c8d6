package nat44

import (
	"fmt"
	"sort"
	"testing"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// mappingSet is the static mappings of a DNAT by identity.
type mappingSet map[*vpp_nat.DNat44_StaticMapping]bool

func mappingsOf(d *vpp_nat.DNat44) mappingSet {
	set := mappingSet{}
	for _, m := range d.StMappings {
		set[m] = true
	}
	return set
}

// minus returns the mappings of a that are not in b, as "ip:port".
func (a mappingSet) minus(b mappingSet) []string {
	var out []string
	for m := range a {
		if !b[m] {
			out = append(out, fmt.Sprintf("%s:%d", m.ExternalIp, m.ExternalPort))
		}
	}
	sort.Strings(out)
	return out
}

// A node joining adds to each node-port DNAT exactly the mappings of the new node's IPs
// (the other mappings are the very messages staged before), and leaving removes exactly
// those. A single-backend port gets no mapping on a peer's address on the node network
// (isPeerOnNodeNetwork), so it gains only the management IP.
func TestNodeJoinAndLeaveChangeOnlyTheMappingsOfThatNode(t *testing.T) {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = st.Service("default", "web", "10.96.0.20",
		st.Port("http", "TCP", 80, 30080), st.Port("metrics", "TCP", 9090, 0))
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = st.Endpoints("default", "web",
		st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")},
			st.EpPort("http", 8080, ""), st.EpPort("metrics", 9090, "")))
	kube[svcmodel.Keyword][svcmodel.Key("single", "default")] = st.Service("default", "single", "10.96.0.21", st.Port("dns", "UDP", 53, 30053))
	kube[epmodel.Keyword][epmodel.Key("single", "default")] = st.Endpoints("default", "single",
		st.Subset([]st.Addr{st.PodAddr(pod2IP, "default", "pod2")}, st.EpPort("dns", 5353, "UDP")))
	e := newEnv(t, envOptions{kube: kube})
	webKey, singleKey := vpp_nat.DNAT44Key("default/web"), vpp_nat.DNAT44Key("default/single")
	web0 := mappingsOf(e.dp.KVs[webKey].(*vpp_nat.DNat44))
	single0 := mappingsOf(e.dp.KVs[singleKey].(*vpp_nat.DNat44))

	e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"}, "10.3.1.30")
	_, txn := e.nodeUpdate("worker2", nil, e.nodes.Nodes["worker2"])
	web1 := mappingsOf(txn.Values[webKey].(*vpp_nat.DNat44))
	single1 := mappingsOf(txn.Values[singleKey].(*vpp_nat.DNat44))
	if got := web0.minus(web1); got != nil {
		t.Errorf("join: web mappings replaced or removed: %v", got)
	}
	if got, want := fmt.Sprint(web1.minus(web0)), "[10.3.1.30:30080 192.168.16.30:30080]"; got != want {
		t.Errorf("join: web gained %s, want %s", got, want)
	}
	if got := single0.minus(single1); got != nil {
		t.Errorf("join: single mappings replaced or removed: %v", got)
	}
	if got, want := fmt.Sprint(single1.minus(single0)), "[10.3.1.30:30053]"; got != want {
		t.Errorf("join: single gained %s, want %s", got, want)
	}

	delete(e.nodes.Nodes, "worker2")
	_, txn = e.nodeUpdate("worker2", e.nodes.Nodes["worker2"], nil)
	web2 := mappingsOf(txn.Values[webKey].(*vpp_nat.DNat44))
	single2 := mappingsOf(txn.Values[singleKey].(*vpp_nat.DNat44))
	if got, want := fmt.Sprint(web1.minus(web2)), "[10.3.1.30:30080 192.168.16.30:30080]"; got != want {
		t.Errorf("leave: web lost %s, want %s", got, want)
	}
	if got := web2.minus(web0); got != nil {
		t.Errorf("leave: web has mappings that were not there before the join: %v", got)
	}
	if got := single2.minus(single0); got != nil || len(single2) != len(single0) {
		t.Errorf("leave: single has %d mappings (new: %v), want the %d from before the join", len(single2), got, len(single0))
	}

	// What the incremental path built is what a fresh rendering builds.
	fresh := newEnv(t, envOptions{kube: kube})
	if d := diffKVs(fresh.dp.KVs, e.dp.KVs); d != "" {
		t.Errorf("after join and leave, the NAT configuration differs from a fresh node's:\n%s", d)
	}
}
