package nat44

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// The static mappings of one service port share one locals slice and its LocalIP
// messages (a NodePort port has a mapping per node IP: copies would multiply the
// memory by the number of nodes). Sharing is safe only while nothing edits a staged
// message: every later change (Endpoints, node join, resync) must build new messages
// and leave the ones already staged as they were.
func TestMappingsOfAPortShareLocalsThatLaterChangesNeverEdit(t *testing.T) {
	web := st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 30080))
	eps := func(ips ...string) *epmodel.Endpoints {
		var addrs []st.Addr
		for i, ip := range ips {
			addrs = append(addrs, st.PodAddr(ip, "default", []string{"pod1", "pod2", "pod3"}[i]))
		}
		return st.Endpoints("default", "web", st.Subset(addrs, st.EpPort("http", 8080, "")))
	}
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = web
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = eps(pod1IP, remote1)
	e := newEnv(t, envOptions{kube: kube})
	key := vpp_nat.DNAT44Key("default/web")

	first := e.dp.KVs[key].(*vpp_nat.DNat44)
	if len(first.StMappings) != 5 { // cluster IP + 2 nodes x 2 IPs
		t.Fatalf("%d mappings, want 5", len(first.StMappings))
	}
	shared := first.StMappings[0].LocalIps
	for i, m := range first.StMappings {
		if len(m.LocalIps) != 2 || &m.LocalIps[0] != &shared[0] {
			t.Errorf("mapping %d (%s:%d) has locals of its own", i, m.ExternalIp, m.ExternalPort)
		}
	}
	snapshot := proto.Clone(first)
	// Encoders and copies see every mapping with its locals (the REST API and the
	// transaction records encode values to JSON).
	js, err := protojson.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	decoded := &vpp_nat.DNat44{}
	if err := protojson.Unmarshal(js, decoded); err != nil || !proto.Equal(decoded, first) || !proto.Equal(snapshot, first) {
		t.Fatalf("JSON round trip or clone of shared locals differs (%v):\n%v\n%v", err, decoded, snapshot)
	}
	if m := snapshot.(*vpp_nat.DNat44).StMappings; &m[0].LocalIps[0] == &m[1].LocalIps[0] {
		t.Error("a clone shares the locals of the original")
	}
	unchanged := func(after string) {
		t.Helper()
		if !proto.Equal(first, snapshot) {
			t.Fatalf("after %s the DNAT staged before was modified:\n%v\nwant\n%v", after, first, snapshot)
		}
	}

	// An Endpoints change: a backend replaced, another's weight changes (single local -> two).
	_, txn := e.update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key("web", "default"),
		NewValue: eps(pod1IP, pod2IP, remote2)})
	unchanged("an Endpoints change")
	second := txn.Values[key].(*vpp_nat.DNat44)
	if second == nil || len(second.StMappings[0].LocalIps) != 3 {
		t.Fatalf("Endpoints change staged %v", second)
	}
	snapshot2 := proto.Clone(second)

	// A node joins: the node-port mappings are added, nothing staged is edited.
	e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"})
	_, txn = e.nodeUpdate("worker2", nil, e.nodes.Nodes["worker2"])
	unchanged("a node join")
	if !proto.Equal(second, snapshot2) {
		t.Fatalf("a node join modified the DNAT staged before it")
	}
	third := txn.Values[key].(*vpp_nat.DNat44)
	if third == nil || third == second || len(third.StMappings) != 6 {
		t.Fatalf("node join staged %v, want a new DNAT with 6 mappings", third)
	}

	// A resync with new objects renders everything anew.
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = eps(remote1)
	e.resync(kube)
	unchanged("a resync")
	if !proto.Equal(second, snapshot2) {
		t.Fatalf("a resync modified the DNAT staged before it")
	}
}
