package processor

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// eventTxn is an event's transaction: what is staged, and the descriptions.
type eventTxn struct {
	values  map[string]proto.Message
	changes []string
}

func newEventTxn() *eventTxn { return &eventTxn{values: make(map[string]proto.Message)} }

func (t *eventTxn) Put(key string, value proto.Message) { t.values[key] = value }
func (t *eventTxn) Get(key string) proto.Message        { return t.values[key] }
func (t *eventTxn) Delete(key string)                   { t.values[key] = nil }
func (t *eventTxn) Describe(change string)              { t.changes = append(t.changes, change) }

func (t *eventTxn) keys() []string {
	var keys []string
	for k := range t.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flatStager is a Renderer: each call stages "flat/<call>" into the transaction it
// is given, describes it, and records the transaction.
type flatStager struct {
	txns []any
}

func (f *flatStager) stage(txn renderer.UpdateTxn, call string) error {
	f.txns = append(f.txns, txn)
	txn.Describe(call)
	txn.Put("flat/"+call, wrapperspb.String(call))
	return nil
}

func (f *flatStager) AddFlatService(txn renderer.UpdateTxn, s *renderer.FlatService) error {
	return f.stage(txn, "add "+s.ID.String())
}

func (f *flatStager) UpdateFlatService(txn renderer.UpdateTxn, _, s *renderer.FlatService) error {
	return f.stage(txn, "update "+s.ID.String())
}

func (f *flatStager) DeleteFlatService(txn renderer.UpdateTxn, s *renderer.FlatService) error {
	return f.stage(txn, "delete "+s.ID.String())
}

func (f *flatStager) UpdateFlatNodePortServices(txn renderer.UpdateTxn, ips *renderer.IPAddresses, _ []*renderer.FlatService) error {
	return f.stage(txn, "nodeports "+ips.String())
}

func (f *flatStager) UpdateFrontendIfs(txn renderer.UpdateTxn, _, ifs renderer.Interfaces) error {
	return f.stage(txn, "frontends "+ifs.String())
}

func (f *flatStager) UpdateBackendIfs(txn renderer.UpdateTxn, _, ifs renderer.Interfaces) error {
	return f.stage(txn, "backends "+ifs.String())
}

func (f *flatStager) ResyncFlat(txn controller.ResyncOperations, ev *renderer.FlatResyncEventData) error {
	f.txns = append(f.txns, txn)
	txn.Put("flat/resync", wrapperspb.String(fmt.Sprint(len(ev.Services))))
	return nil
}

// seedStager is a renderer of the seed API that gets its transaction from factories in
// its dependencies: each call stages "seed/<call>" into the transaction they give.
type seedStager struct {
	updateTxn func(change string) controller.UpdateOperations
	resyncTxn func() controller.ResyncOperations
	last      map[string]*renderer.ContivService
}

func (s *seedStager) stage(call string) error {
	s.updateTxn(call).Put("seed/"+call, wrapperspb.String(call))
	return nil
}

func (s *seedStager) AddService(svc *renderer.ContivService) error {
	s.last[svc.ID.String()] = svc
	return s.stage("add " + svc.ID.String())
}

func (s *seedStager) UpdateService(_, svc *renderer.ContivService) error {
	s.last[svc.ID.String()] = svc
	return s.stage("update " + svc.ID.String())
}

func (s *seedStager) DeleteService(svc *renderer.ContivService) error {
	delete(s.last, svc.ID.String())
	return s.stage("delete " + svc.ID.String())
}

func (s *seedStager) UpdateNodePortServices(ips *renderer.IPAddresses, _ []*renderer.ContivService) error {
	return s.stage("nodeports " + ips.String())
}

func (s *seedStager) UpdateLocalFrontendIfs(_, ifs renderer.Interfaces) error {
	return s.stage("frontends " + ifs.String())
}

func (s *seedStager) UpdateLocalBackendIfs(_, ifs renderer.Interfaces) error {
	return s.stage("backends " + ifs.String())
}

func (s *seedStager) Resync(ev *renderer.ResyncEventData) error {
	clear(s.last)
	for _, svc := range ev.Services {
		s.last[svc.ID.String()] = svc
	}
	s.resyncTxn().Put("seed/resync", wrapperspb.String(fmt.Sprint(len(ev.Services))))
	return nil
}

// TestEveryRendererStagesIntoTheTransactionOfTheEvent: a Renderer and a seed renderer
// whose factories are wired to a SeedAdapter both stage into the transaction given to
// ResyncInto and UpdateInto, in the order they were added; Revert, and the calls without
// a transaction, hand them a DiscardTxn.
func TestEveryRendererStagesIntoTheTransactionOfTheEvent(t *testing.T) {
	e := newEnv(t, "")
	a := &renderer.SeedAdapter{}
	seed := &seedStager{updateTxn: a.UpdateTxnFactory, resyncTxn: a.ResyncTxnFactory, last: make(map[string]*renderer.ContivService)}
	a.Renderer = seed
	flat := &flatStager{}
	if err := e.sp.AddRenderer(a); err != nil {
		t.Fatal(err)
	}
	if err := e.sp.AddRenderer(flat); err != nil {
		t.Fatal(err)
	}

	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = st.Service("default", "web", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = webEndpoints(st.PodAddr(remoteIP, "default", "r"))
	resync := newEventTxn()
	if err := e.sp.ResyncInto(kube, resync); err != nil {
		t.Fatal(err)
	}
	if got := resync.keys(); !slices.Equal(got, []string{"flat/resync", "seed/resync"}) {
		t.Errorf("resync staged %v", got)
	}
	if got := backends(seed.last["default/web"], "http"); !slices.Equal(got, []string{remoteIP + ":8080"}) {
		t.Errorf("seed renderer got web with backends %v", got)
	}

	txn := newEventTxn()
	ev := &controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key("web", "default"),
		NewValue: webEndpoints(st.PodAddr(remoteIP, "default", "r"), st.IPAddr("192.168.16.30"))}
	if err := e.sp.UpdateInto(ev, txn); err != nil {
		t.Fatal(err)
	}
	if got := txn.keys(); !slices.Equal(got, []string{"flat/update default/web", "seed/update default/web"}) {
		t.Errorf("update staged %v", got)
	}
	if want := []string{"update default/web", "update default/web"}; !slices.Equal(txn.changes, want) {
		t.Errorf("update described %q, want %q", txn.changes, want)
	}
	if got := backends(seed.last["default/web"], "http"); !slices.Equal(got, []string{remoteIP + ":8080", "192.168.16.30:8080 host-network"}) {
		t.Errorf("seed renderer got web with backends %v", got)
	}
	if flat.txns[len(flat.txns)-1] != renderer.UpdateTxn(txn) {
		t.Error("the Renderer was not handed the event's transaction")
	}

	// A failed AddPod reverted: the renderers stage into a DiscardTxn.
	e.ipnet.WirePod("default", "pod3", "vpp-tap-pod3")
	add := podmanager.NewAddPod(podmodel.ID{Name: "pod3", Namespace: "default"}, "c-pod3", "/netns")
	if err := e.sp.UpdateInto(add, txn); err != nil {
		t.Fatal(err)
	}
	if err := e.sp.Revert(add); err != nil {
		t.Fatal(err)
	}
	if _, ok := flat.txns[len(flat.txns)-1].(renderer.DiscardTxn); !ok {
		t.Errorf("Revert handed the Renderer %T, want a DiscardTxn", flat.txns[len(flat.txns)-1])
	}
	// The seed form of Update: no transaction either.
	if err := e.sp.Update(podmanager.NewAddPod(podmodel.ID{Name: "pod3", Namespace: "default"}, "c-pod3", "/netns")); err != nil {
		t.Fatal(err)
	}
	if _, ok := flat.txns[len(flat.txns)-1].(renderer.DiscardTxn); !ok {
		t.Errorf("Update handed the Renderer %T, want a DiscardTxn", flat.txns[len(flat.txns)-1])
	}
	want := []string{"flat/frontends {GbE, GbE2, tap-vpp2, vpp-tap-pod3, vxlanBVI}", "flat/update default/web",
		"seed/frontends {GbE, GbE2, tap-vpp2, vpp-tap-pod3, vxlanBVI}", "seed/update default/web"}
	if got := txn.keys(); !slices.Equal(got, want) {
		t.Errorf("after Revert and Update, the event's transaction holds\n%q\nwant\n%q", got, want)
	}
}
