package nat44

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/processor"
)

// describedTxn is an update transaction that collects the change descriptions.
type describedTxn struct {
	*st.Txn
	changes []string
}

func (t *describedTxn) Describe(change string) { t.changes = append(t.changes, change) }

// sameStaged reports the differences between two staged transactions.
func sameStaged(t *testing.T, what string, seed, direct *st.Txn) {
	t.Helper()
	if !slices.Equal(seed.Keys(), direct.Keys()) {
		t.Fatalf("%s: keys staged through the seed API %v, through Renderer %v", what, seed.Keys(), direct.Keys())
	}
	for _, k := range seed.Keys() {
		if a, b := seed.Values[k], direct.Values[k]; (a == nil) != (b == nil) || (a != nil && !proto.Equal(a, b)) {
			t.Errorf("%s: %s staged through the seed API\n%v\nthrough Renderer\n%v", what, k, a, b)
		}
	}
}

// The renderer has two faces: the seed API (ContivServices, its transaction from the
// Deps factories; the fixture registers it so, through the processor's SeedAdapter) and
// renderer.Renderer (FlatServices, the transaction passed; the service plugin adds it
// so). Driven by the same events, both stage the same values with the same
// descriptions.
func TestSeedAPIAndRendererStageTheSame(t *testing.T) {
	web := st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 30080))
	webEps := func(addrs ...st.Addr) *epmodel.Endpoints {
		return st.Endpoints("default", "web", st.Subset(addrs, st.EpPort("http", 8080, "")))
	}
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = web
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = webEps(st.PodAddr(pod1IP, "default", "pod1"))
	e := newEnv(t, envOptions{kube: kube}) // the seed face, resynced and committed

	direct := &processor.ServiceProcessor{Deps: e.proc.Deps}
	if err := direct.Init(); err != nil {
		t.Fatal(err)
	}
	deps := e.rndr.Deps
	deps.UpdateTxnFactory, deps.ResyncTxnFactory = nil, nil // not needed by the Renderer face
	rndr := &Renderer{Deps: deps}
	if err := rndr.Init(false); err != nil {
		t.Fatal(err)
	}
	if err := direct.AddRenderer(rndr); err != nil {
		t.Fatal(err)
	}

	resync := st.NewTxn()
	if err := direct.ResyncInto(kube, resync); err != nil {
		t.Fatal(err)
	}
	sameStaged(t, "resync", e.resync(kube), resync)

	kubeChange := func(res, key string, v proto.Message) controller.Event {
		return &controller.KubeStateChange{Resource: res, Key: key, NewValue: v}
	}
	e.wirePod("pod3", pod3If)
	steps := []struct {
		what    string
		prepare func()
		ev      controller.Event
		none    bool // the step stages nothing
	}{
		{what: "endpoints change", ev: kubeChange(epmodel.Keyword, epmodel.Key("web", "default"),
			webEps(st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(pod2IP, "default", "pod2"), st.PodAddr(remote1, "default", "r1")))},
		{what: "new service without endpoints (rejected)", ev: kubeChange(svcmodel.Keyword, svcmodel.Key("dns", "default"),
			st.Service("default", "dns", "10.96.0.10", st.Port("dns", "UDP", 53, 0)))},
		{what: "its endpoints", ev: kubeChange(epmodel.Keyword, epmodel.Key("dns", "default"),
			st.Endpoints("default", "dns", st.Subset([]st.Addr{st.PodAddr(pod3IP, "default", "pod3")}, st.EpPort("dns", 5353, "UDP"))))},
		{what: "new pod", ev: podmanager.NewAddPod(podmodel.ID{Name: "pod3", Namespace: "default"}, "cid-pod3", "/proc/1/ns/net")},
		{what: "node join", prepare: func() { e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"}) },
			ev: &nodesync.NodeUpdate{NodeName: "worker2"}},
		{what: "service deleted", ev: &controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("web", "default"), PrevValue: web}},
		{what: "pod deleted", ev: podmanager.NewDeletePod(podmodel.ID{Name: "pod3", Namespace: "default"})},
	}
	for _, step := range steps {
		if step.prepare != nil {
			step.prepare()
		}
		changes, seedTxn := e.update(step.ev)
		txn := &describedTxn{Txn: st.NewTxn()}
		if err := direct.UpdateInto(step.ev, txn); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		if (len(seedTxn.Values) == 0) != step.none {
			t.Fatalf("%s: staged %v", step.what, seedTxn.Keys())
		}
		sameStaged(t, step.what, seedTxn, txn.Txn)
		if !slices.Equal(changes, txn.changes) {
			t.Errorf("%s: described %q through the seed API, %q through Renderer", step.what, changes, txn.changes)
		}
	}
	if got := e.dp.KVs[vpp_nat.DNAT44Key("default/dns")]; got == nil {
		t.Error("the dns service was never committed")
	}
}
