package natplugin

import (
	"io"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// fakeIfaces is a metadata map of the interface descriptor filled by tests.
type fakeIfaces map[string]kvapi.Metadata

func (m fakeIfaces) GetValue(label string) (kvapi.Metadata, bool) { v, ok := m[label]; return v, ok }
func (m fakeIfaces) ListAllNames() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// env is a running simulator with a real govpp client (socket client +
// core) and the interface metadata the descriptors see.
type env struct {
	t    testing.TB
	sim  *vppsim.Sim
	sock string
	conn *core.Connection
	ch   govppapi.Channel
	ifs  fakeIfaces
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, sock: filepath.Join(t.TempDir(), "api.sock"), ifs: fakeIfaces{}}
	sim, err := vppsim.New(vppsim.Options{SocketPath: e.sock, NICs: []string{"GigabitEthernet0/8/0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e.sim = sim
	e.conn, e.ch = connect(t, e.sock)
	return e
}

// connect opens a new govpp connection (as a restarted agent would) with a
// channel.
func connect(t testing.TB, sock string) (*core.Connection, govppapi.Channel) {
	t.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(conn.Disconnect)
	// A channel as govppmux hands them to the agent's descriptors (pipelines over a
	// stream of the connection).
	ch, err := govppmux.NewChannel(conn, 5*time.Second)
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	t.Cleanup(ch.Close)
	return conn, ch
}

// deps returns descriptor deps over the env's connection.
func (e *env) deps() DescriptorDeps {
	return DescriptorDeps{Log: quietLog(), Ch: e.ch, Conn: e.conn, Ifaces: func() kvapi.MetadataMap { return e.ifs }}
}

// freshDeps returns deps over a new connection: what a restarted agent has.
func (e *env) freshDeps() DescriptorDeps {
	d := e.deps()
	d.Conn, d.Ch = connect(e.t, e.sock)
	return d
}

// loopback creates a tagged loopback in VPP through the API and records it
// in the interface metadata.
func (e *env) loopback(name string) uint32 {
	e.t.Helper()
	rep := &interfaces.CreateLoopbackReply{}
	if err := vppbase.Call(e.ch, &interfaces.CreateLoopback{}, rep); err != nil {
		e.t.Fatal(err)
	}
	if err := vppbase.Call(e.ch, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: rep.SwIfIndex, Tag: name},
		&interfaces.SwInterfaceTagAddDelReply{}); err != nil {
		e.t.Fatal(err)
	}
	e.ifs[name] = &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex)}
	return uint32(rep.SwIfIndex)
}

// enableNAT enables the NAT44-ED plugin directly.
func (e *env) enableNAT() {
	e.t.Helper()
	if err := EnableNAT44(e.ch); err != nil {
		e.t.Fatal(err)
	}
}

func sortedKeys(m map[string]proto.Message) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// correlate turns values into Retrieve's correlate argument.
func correlate(values map[string]proto.Message) []kvapi.KVWithMetadata {
	var out []kvapi.KVWithMetadata
	for _, k := range sortedKeys(values) {
		out = append(out, kvapi.KVWithMetadata{Key: k, Value: values[k], Origin: kvapi.FromNB})
	}
	return out
}

// retrieved calls Retrieve and indexes the result by key.
func retrieved(t *testing.T, d *kvapi.KVDescriptor, corr []kvapi.KVWithMetadata) map[string]kvapi.KVWithMetadata {
	t.Helper()
	list, err := d.Retrieve(corr)
	if err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	out := map[string]kvapi.KVWithMetadata{}
	for _, kv := range list {
		if _, dup := out[kv.Key]; dup {
			t.Errorf("retrieve listed %s twice", kv.Key)
		}
		out[kv.Key] = kv
	}
	return out
}

// expectRetrieved checks that Retrieve, given NB's values, returns exactly
// them.
func expectRetrieved(t *testing.T, d *kvapi.KVDescriptor, want map[string]proto.Message) {
	t.Helper()
	got := retrieved(t, d, correlate(want))
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("retrieve: %s missing", k)
		} else if !proto.Equal(g.Value, w) {
			t.Errorf("retrieve %s:\n got %v\nwant %v", k, g.Value, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("retrieve: unexpected %s = %v", k, g.Value)
		}
	}
}

// dnatDescriptor44 returns the descriptor of DNat44 mapping sets (the plugin builds
// it with newDNat44, keeping its state).
func dnatDescriptor44(deps DescriptorDeps) *kvapi.KVDescriptor {
	desc, _ := newDNat44(deps)
	return desc
}
