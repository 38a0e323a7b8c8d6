package ifplugin

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	l3model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

const nic = "GigabitEthernet0/8/0"

func TestMain(m *testing.M) {
	core.SetLogLevel(logrus.PanicLevel) // govpp's package-global logger
	os.Exit(m.Run())
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// env is a simulator, a govppmux connected to it over the real socket client, a
// scheduler and the interface plugin registered in it.
type env struct {
	t    *testing.T
	sim  *vppsim.Sim
	sock string
	mux  *govppmux.Plugin
	kvs  *kvscheduler.Scheduler
	p    *Plugin
	raw  govppapi.Channel // for test set-up requests (VRF tables)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	sim, err := vppsim.New(vppsim.Options{SocketPath: e.sock, NICs: []string{nic}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	e.mux = govppmux.NewPlugin(govppmux.Deps{Log: quietLog(), Config: infra.StaticConfig{
		"binapi-socket-path": e.sock, "health-check-probe-interval": "100ms", "health-check-reply-timeout": "80ms",
		"retry-connect-timeout": "50ms", "reply-timeout": "2s"}})
	if err := e.mux.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mux.Close() })
	e.raw, err = e.mux.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.raw.Close)
	e.kvs, e.p = e.newAgent()
	if err := e.mux.AfterInit(); err != nil {
		t.Fatalf("message check: %v", err)
	}
	return e
}

// newAgent starts a fresh scheduler with a fresh interface plugin (an agent restart).
func (e *env) newAgent() (*kvscheduler.Scheduler, *Plugin) {
	e.t.Helper()
	kvs, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kvs.Close() })
	p := NewPlugin(Deps{Log: quietLog(), Scheduler: kvs, GoVPP: e.mux})
	if err := p.Init(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = p.Close() })
	if err := kvs.RegisterKVDescriptor(vrfTableDescriptor(e.raw)); err != nil {
		e.t.Fatal(err)
	}
	return kvs, p
}

// descriptor returns the plugin's descriptor of the given name.
func (e *env) descriptor(name string) *kvapi.KVDescriptor {
	for _, d := range e.p.Descriptors() {
		if d.Name == name {
			return d
		}
	}
	e.t.Fatalf("no descriptor %s", name)
	return nil
}

// commit commits the given values (nil = delete) in one transaction.
func (e *env) commit(kvs *kvscheduler.Scheduler, values map[string]proto.Message) error {
	txn := kvs.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	_, err := txn.Commit(context.Background())
	return err
}

func (e *env) mustCommit(values map[string]proto.Message) {
	e.t.Helper()
	if err := e.commit(e.kvs, values); err != nil {
		e.t.Fatalf("commit: %v", err)
	}
}

func (e *env) state(key string) kvapi.ValueState { return e.kvs.GetValueStatus(key).State }

func (e *env) simIface(tag string) vppsim.Interface {
	e.t.Helper()
	i, ok := e.sim.InterfaceByTag(tag)
	if !ok {
		e.t.Fatalf("no interface tagged %q in VPP", tag)
	}
	return i
}

// vrfTableDescriptor stands in for the l3plugin's VRF table descriptor: it creates
// the table in VPP so interfaces can be bound to it, and finds the tables NB wants
// in VPP's dump.
func vrfTableDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	set := func(v proto.Message, isAdd bool) error {
		t := v.(*l3model.VrfTable)
		return ch.SendRequest(&ip.IPTableAddDel{IsAdd: isAdd, Table: ip.IPTable{TableID: t.Id, IsIP6: t.Protocol == l3model.VrfTable_IPV6}}).
			ReceiveReply(&ip.IPTableAddDelReply{})
	}
	return &kvapi.KVDescriptor{
		Name:        "test-vrf-table",
		NBKeyPrefix: l3model.VrfTablePrefix,
		KeySelector: func(key string) bool { _, _, ok := l3model.ParseVrfTableKey(key); return ok },
		Create:      func(_ string, v proto.Message) (kvapi.Metadata, error) { return nil, set(v, true) },
		Delete:      func(_ string, v proto.Message, _ kvapi.Metadata) error { return set(v, false) },
		Retrieve: func(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			tables, err := govppmux.Dump[ip.IPTableDetails](ch, &ip.IPTableDump{})
			if err != nil {
				return nil, err
			}
			var out []kvapi.KVWithMetadata
			for _, kv := range correlate {
				want := kv.Value.(*l3model.VrfTable)
				for _, t := range tables {
					if t.Table.TableID == want.Id && t.Table.IsIP6 == (want.Protocol == l3model.VrfTable_IPV6) {
						out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: want, Origin: kvapi.FromNB})
					}
				}
			}
			return out, nil
		},
	}
}

// resync commits values as a full resync.
func (e *env) resync(values map[string]proto.Message) error {
	txn := e.kvs.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	_, err := txn.Commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true))
	return err
}
