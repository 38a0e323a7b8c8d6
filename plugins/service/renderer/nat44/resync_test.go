package nat44

import (
	"testing"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

func TestResyncRestagesUnchangedDNATsAndRendersChangedInputs(t *testing.T) {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 30080))
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = st.Endpoints("default", "web",
		// Two backends: a load-balanced mapping, installed on every node's IPs (a
		// single-backend one would skip the peers' node IPs, see isPeerOnNodeNetwork).
		st.Subset([]st.Addr{st.PodAddr("10.1.1.3", "default", "pod1"), st.PodAddr("10.1.1.4", "default", "pod2")}, st.EpPort("http", 8080, "")))
	e := newEnv(t, envOptions{kube: kube})
	key := vpp_nat.DNAT44Key("default/web")
	first := e.dp.KVs[key].(*vpp_nat.DNat44)
	if n := len(first.StMappings); n != 5 { // cluster IP + 2 nodes x 2 IPs
		t.Fatalf("%d mappings, want 5", n)
	}
	// The same Kubernetes objects: the same DNAT is staged again (complete resync).
	txn := e.resync(kube)
	if txn.Values[key] != first {
		t.Errorf("unchanged service rendered anew: %v", txn.Values[key])
	}
	// A node joins (node IPs change): every node-port DNAT is rendered with them.
	e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"})
	txn = e.resync(kube)
	got := txn.Values[key].(*vpp_nat.DNat44)
	if got == first || len(got.StMappings) != 6 {
		t.Errorf("after a node joined: %d mappings (same message: %v), want 6", len(got.StMappings), got == first)
	}
}
