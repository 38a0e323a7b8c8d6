package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// storeDescriptor is a descriptor of every key under prefix over a shared map, the
// dataplane that outlives the agent: Retrieve gives what it holds.
func storeDescriptor(name, prefix string, store map[string]proto.Message) *kvapi.KVDescriptor {
	return &kvapi.KVDescriptor{
		Name:        name,
		NBKeyPrefix: prefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, prefix) },
		Create: func(key string, v proto.Message) (kvapi.Metadata, error) {
			store[key] = v
			return nil, nil
		},
		Delete: func(key string, _ proto.Message, _ kvapi.Metadata) error {
			delete(store, key)
			return nil
		},
		Retrieve: func([]kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			var out []kvapi.KVWithMetadata
			for k, v := range store {
				if strings.HasPrefix(k, prefix) {
					out = append(out, kvapi.KVWithMetadata{Key: k, Value: v, Origin: kvapi.FromNB})
				}
			}
			return out, nil
		},
	}
}

// startAgentOn resyncs a fresh scheduler and service plugin with contiv.conf conf
// into the dataplane store, as an agent (re)started on the node does.
func startAgentOn(t *testing.T, store map[string]proto.Message, conf string, kube controller.KubeStateData) {
	t.Helper()
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: st.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for name, prefix := range map[string]string{"nat": "config/vpp/nat/", "cnat": "config/vpp/cnat/", "route": "config/vpp/v2/route/"} {
		if err := s.RegisterKVDescriptor(storeDescriptor(name, prefix, store)); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixtureConf(t, conf, nil)
	staged := st.NewTxn()
	if err := f.p.Resync(controller.NewDBResync(), kube, 1, staged); err != nil {
		t.Fatal(err)
	}
	txn := s.StartNBTransaction()
	for k, v := range staged.Values {
		txn.SetValue(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := txn.Commit(kvapi.WithResync(ctx, kvapi.FullResync, false)); err != nil {
		t.Fatalf("resync commit: %v", err)
	}
}

// TestSwitchingRendererLeavesNothingOfTheOther: a node restarted with another
// serviceRenderer keeps nothing of the renderer it had: the agent's first resync
// stages only the chosen renderer's values, and the scheduler's full resync deletes
// whatever the dataplane holds under keys nobody staged (Retrieve finds them,
// planResync drops their NB value, reconcile deletes them). Both ways.
func TestSwitchingRendererLeavesNothingOfTheOther(t *testing.T) {
	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	eps := st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr("10.1.2.3", "default", "r")}, st.EpPort("http", 8080, "")))
	empty := st.Service("default", "empty", "10.96.0.11", st.Port("http", "TCP", 80, 0))
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("nginx", "default")] = svc
	kube[svcmodel.Keyword][svcmodel.Key("empty", "default")] = empty
	kube[epmodel.Keyword][epmodel.Key("nginx", "default")] = eps
	store := make(map[string]proto.Message)
	count := func(prefix string) int {
		n := 0
		for k := range store {
			if strings.HasPrefix(k, prefix) {
				n++
			}
		}
		return n
	}
	for i, rndr := range []string{"nat44", "cnat", "nat44"} {
		startAgentOn(t, store, contivConf+"serviceRenderer: "+rndr+"\n", kube)
		nat, cnat := count("config/vpp/nat/"), count("config/vpp/cnat/")
		if rndr == "cnat" && (nat != 0 || cnat == 0) || rndr == "nat44" && (cnat != 0 || nat == 0) {
			t.Errorf("start %d with %s: %d NAT44 values, %d cnat values left in the dataplane", i+1, rndr, nat, cnat)
		}
		if count("config/vpp/v2/route/") != 2 { // the reject of 10.96.0.11 in the main and pod VRF
			t.Errorf("start %d with %s: routes %d, want the 2 rejects of the Service without endpoints", i+1, rndr, count("config/vpp/v2/route/"))
		}
	}
}
