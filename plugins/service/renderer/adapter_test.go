package renderer

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// stagingTxn is a transaction that keeps what is staged and the descriptions.
type stagingTxn struct {
	values  map[string]proto.Message
	changes []string
}

func newStagingTxn() *stagingTxn { return &stagingTxn{values: make(map[string]proto.Message)} }

func (t *stagingTxn) Put(key string, value proto.Message) { t.values[key] = value }
func (t *stagingTxn) Get(key string) proto.Message        { return t.values[key] }
func (t *stagingTxn) Delete(key string)                   { t.values[key] = nil }
func (t *stagingTxn) Describe(change string)              { t.changes = append(t.changes, change) }

// keys returns the staged keys in order.
func (t *stagingTxn) keys() []string {
	var keys []string
	for k := range t.values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// seedRecorder is a renderer of the seed API that gets its transaction from factories
// in its dependencies, as the seed NAT44 renderer does; every call stages a key named
// after it and is recorded with the ContivServices it received.
type seedRecorder struct {
	updateTxn func(change string) controller.UpdateOperations
	resyncTxn func() controller.ResyncOperations

	calls    []string
	received map[string][]*ContivService // by call, the services of its latest call
	err      error
}

func (r *seedRecorder) record(call string, svcs ...*ContivService) {
	r.calls = append(r.calls, call)
	if r.received == nil {
		r.received = make(map[string][]*ContivService)
	}
	r.received[strings.Fields(call)[0]] = svcs
}

func (r *seedRecorder) stage(call string) {
	r.updateTxn(call).Put("seed/"+call, wrapperspb.String(call))
}

func (r *seedRecorder) AddService(svc *ContivService) error {
	call := "add " + svc.ID.String()
	r.record(call, svc)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) UpdateService(oldSvc, newSvc *ContivService) error {
	call := "update " + newSvc.ID.String()
	r.record(call, oldSvc, newSvc)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) DeleteService(svc *ContivService) error {
	call := "delete " + svc.ID.String()
	r.record(call, svc)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) UpdateNodePortServices(nodeIPs *IPAddresses, np []*ContivService) error {
	call := "nodeports " + nodeIPs.String()
	r.record(call, np...)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) UpdateLocalFrontendIfs(oldIfs, newIfs Interfaces) error {
	call := fmt.Sprintf("frontends %s->%s", oldIfs, newIfs)
	r.record(call)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) UpdateLocalBackendIfs(oldIfs, newIfs Interfaces) error {
	call := fmt.Sprintf("backends %s->%s", oldIfs, newIfs)
	r.record(call)
	r.stage(call)
	return r.err
}

func (r *seedRecorder) Resync(ev *ResyncEventData) error {
	call := fmt.Sprintf("resync %s %s %s", ev.NodeIPs, ev.FrontendIfs, ev.BackendIfs)
	r.record(call, ev.Services...)
	r.resyncTxn().Put("seed/resync", wrapperspb.String(call))
	return r.err
}

// newWiredSeed returns a seed recorder whose factories are the adapter's.
func newWiredSeed() (*SeedAdapter, *seedRecorder) {
	a := &SeedAdapter{}
	seed := &seedRecorder{updateTxn: a.UpdateTxnFactory, resyncTxn: a.ResyncTxnFactory}
	a.Renderer = seed
	return a, seed
}

func adapterTestService(name, clusterIP string, backends ...string) *FlatService {
	cs := NewContivService()
	cs.ID = ServiceID{Namespace: "default", Name: name}
	cs.ClusterIPs.Add(net.ParseIP(clusterIP))
	cs.Ports["http"] = &ServicePort{Protocol: TCP, Port: 80, NodePort: 30080}
	for _, b := range backends {
		cs.Backends["http"] = append(cs.Backends["http"], &ServiceBackend{IP: net.ParseIP(b), Port: 8080})
	}
	return NewFlatService(cs)
}

// expectContiv checks that the seed renderer received, in order, the ContivService forms
// of the given FlatServices.
func expectContiv(t *testing.T, what string, got []*ContivService, want ...*FlatService) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: received %d services, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] == nil || got[i].String() != want[i].ContivService().String() {
			t.Errorf("%s: service %d received as\n%v\nwant\n%v", what, i, got[i], want[i].ContivService())
		}
	}
}

func TestSeedRendererReceivesContivServicesAndStagesIntoTheTransactionOfTheCall(t *testing.T) {
	a, seed := newWiredSeed()
	web := adapterTestService("web", "10.96.0.10", "10.1.1.3")
	db := adapterTestService("db", "10.96.0.11", "10.1.2.3")

	resync := newStagingTxn()
	ev := &FlatResyncEventData{NodeIPs: NewIPAddresses(net.ParseIP("192.168.16.10")), Services: []*FlatService{web, db},
		FrontendIfs: NewInterfaces("tap1"), BackendIfs: NewInterfaces("tap2")}
	if err := a.ResyncFlat(resync, ev); err != nil {
		t.Fatal(err)
	}
	expectContiv(t, "resync", seed.received["resync"], web, db)
	if got := resync.keys(); !slices.Equal(got, []string{"seed/resync"}) {
		t.Errorf("resync staged %v into the resync transaction", got)
	}
	if want := "resync {192.168.16.10} {tap1} {tap2}"; seed.calls[0] != want {
		t.Errorf("resync call %q, want %q", seed.calls[0], want)
	}
	webCS := seed.received["resync"][0]

	// Each update call stages into the transaction it is given, described.
	web2 := adapterTestService("web", "10.96.0.10", "10.1.1.3", "10.1.1.4")
	cache := adapterTestService("cache", "10.96.0.12", "10.1.1.5")
	steps := []struct {
		call string
		run  func(txn UpdateTxn) error
	}{
		{"add default/cache", func(txn UpdateTxn) error { return a.AddFlatService(txn, cache) }},
		{"update default/web", func(txn UpdateTxn) error { return a.UpdateFlatService(txn, web, web2) }},
		{"nodeports {192.168.16.10, 192.168.16.20}", func(txn UpdateTxn) error {
			return a.UpdateFlatNodePortServices(txn, NewIPAddresses(net.ParseIP("192.168.16.10"), net.ParseIP("192.168.16.20")),
				[]*FlatService{web2, cache})
		}},
		{"frontends {tap1}->{tap1, tap3}", func(txn UpdateTxn) error {
			return a.UpdateFrontendIfs(txn, NewInterfaces("tap1"), NewInterfaces("tap1", "tap3"))
		}},
		{"backends {tap2}->{}", func(txn UpdateTxn) error { return a.UpdateBackendIfs(txn, NewInterfaces("tap2"), NewInterfaces()) }},
		{"delete default/db", func(txn UpdateTxn) error { return a.DeleteFlatService(txn, db) }},
	}
	for _, step := range steps {
		txn := newStagingTxn()
		if err := step.run(txn); err != nil {
			t.Fatalf("%s: %v", step.call, err)
		}
		if got := txn.keys(); !slices.Equal(got, []string{"seed/" + step.call}) {
			t.Errorf("%s staged %v into its transaction", step.call, got)
		}
		if !slices.Equal(txn.changes, []string{step.call}) {
			t.Errorf("%s described as %q", step.call, txn.changes)
		}
	}
	if len(resync.values) != 1 {
		t.Errorf("updates staged into the resync transaction: %v", resync.keys())
	}
	expectContiv(t, "add", seed.received["add"], cache)
	expectContiv(t, "update", seed.received["update"], web, web2)
	expectContiv(t, "nodeports", seed.received["nodeports"], web2, cache)
	expectContiv(t, "delete", seed.received["delete"], db)

	// The seed renderer gets back the values it was given: the old service of an
	// update, and the service of a later call while it is unchanged.
	if seed.received["update"][0] != webCS {
		t.Error("UpdateService got a new ContivService as the old service, not the one Resync passed")
	}
	if seed.received["nodeports"][0] != seed.received["update"][1] || seed.received["nodeports"][1] != seed.received["add"][0] {
		t.Error("UpdateNodePortServices got new ContivServices for unchanged services")
	}

	// A resync passes the same ContivService for the same FlatService, a new one for a
	// new FlatService, and forgets the services it does not list.
	if err := a.ResyncFlat(newStagingTxn(), &FlatResyncEventData{NodeIPs: NewIPAddresses(), Services: []*FlatService{cache, web}}); err != nil {
		t.Fatal(err)
	}
	got := seed.received["resync"]
	if got[0] != seed.received["add"][0] {
		t.Error("resync passed a new ContivService for an unchanged service")
	}
	expectContiv(t, "second resync", got, cache, web)
	if got[1] == webCS {
		t.Error("resync passed the ContivService of a service removed by an update")
	}
	if _, kept := a.services[web2]; kept || len(a.services) != 2 {
		t.Errorf("adapter keeps %d ContivServices after a resync of 2 (web2 kept: %v)", len(a.services), kept)
	}
}

func TestSeedAdapterFactoriesOutsideACallDropWhatIsStaged(t *testing.T) {
	a, seed := newWiredSeed()
	if _, ok := a.UpdateTxnFactory("stray").(DiscardTxn); !ok {
		t.Error("update factory outside of a call: not a DiscardTxn")
	}
	if _, ok := a.ResyncTxnFactory().(DiscardTxn); !ok {
		t.Error("resync factory outside of a resync: not a DiscardTxn")
	}

	// During a resync, the update transaction is none; during an update, the resync one.
	txn := newStagingTxn()
	seed.resyncTxn = func() controller.ResyncOperations {
		a.UpdateTxnFactory("stray update").Put("stray", wrapperspb.String("update"))
		return a.ResyncTxnFactory()
	}
	if err := a.ResyncFlat(txn, &FlatResyncEventData{NodeIPs: NewIPAddresses()}); err != nil {
		t.Fatal(err)
	}
	seed.updateTxn = func(change string) controller.UpdateOperations {
		a.ResyncTxnFactory().Put("stray", wrapperspb.String("resync"))
		return a.UpdateTxnFactory(change)
	}
	if err := a.UpdateFrontendIfs(txn, NewInterfaces(), NewInterfaces("tap1")); err != nil {
		t.Fatal(err)
	}
	if txn.values["stray"] != nil || len(txn.values) != 2 || len(txn.changes) != 1 {
		t.Errorf("staged %v, described %q: want the resync and the frontends only", txn.keys(), txn.changes)
	}
	// After the call, the transaction is not handed out any more.
	if _, ok := a.UpdateTxnFactory("late").(DiscardTxn); !ok {
		t.Error("update factory after the call: not a DiscardTxn")
	}
}

func TestSeedRendererErrorsReachTheCaller(t *testing.T) {
	a, seed := newWiredSeed()
	seed.err = errors.New("boom")
	svc := adapterTestService("web", "10.96.0.10", "10.1.1.3")
	for name, err := range map[string]error{
		"resync":    a.ResyncFlat(newStagingTxn(), &FlatResyncEventData{NodeIPs: NewIPAddresses()}),
		"add":       a.AddFlatService(newStagingTxn(), svc),
		"update":    a.UpdateFlatService(newStagingTxn(), svc, svc),
		"delete":    a.DeleteFlatService(newStagingTxn(), svc),
		"nodeports": a.UpdateFlatNodePortServices(newStagingTxn(), NewIPAddresses(), nil),
		"frontends": a.UpdateFrontendIfs(newStagingTxn(), nil, nil),
		"backends":  a.UpdateBackendIfs(newStagingTxn(), nil, nil),
	} {
		if !errors.Is(err, seed.err) {
			t.Errorf("%s: error %v, want the seed renderer's", name, err)
		}
	}
}
