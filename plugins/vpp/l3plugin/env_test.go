package l3plugin

import (
	"io"
	"net/netip"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
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

// env is a running simulator with a real govpp client and the interface
// metadata the descriptors see.
type env struct {
	t    *testing.T
	sim  *vppsim.Sim
	sock string
	ch   govppapi.Channel
	ifs  fakeIfaces
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func newEnv(t *testing.T) *env {
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
	e.ch = e.channel()
	return e
}

// channel connects a new govpp client (as a restarted agent would) and
// opens a channel on it.
func (e *env) channel() govppapi.Channel {
	e.t.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(e.sock))
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannel()
	if err != nil {
		e.t.Fatalf("channel: %v", err)
	}
	ch.SetReplyTimeout(2 * time.Second)
	e.t.Cleanup(ch.Close)
	return ch
}

// deps returns descriptor deps over the env's channel.
func (e *env) deps() DescriptorDeps {
	return DescriptorDeps{Log: quietLog(), Ch: e.ch, Ifaces: func() kvapi.MetadataMap { return e.ifs }}
}

// freshDeps returns deps over a new connection: what a restarted agent has.
func (e *env) freshDeps() DescriptorDeps {
	d := e.deps()
	d.Ch = e.channel()
	return d
}

// loopback creates a tagged loopback with addresses in VPP through the API
// and records it in the interface metadata.
func (e *env) loopback(name string, addrs ...string) uint32 {
	e.t.Helper()
	rep := &interfaces.CreateLoopbackReply{}
	if err := vppbase.Call(e.ch, &interfaces.CreateLoopback{}, rep); err != nil {
		e.t.Fatal(err)
	}
	if err := vppbase.Call(e.ch, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: rep.SwIfIndex, Tag: name},
		&interfaces.SwInterfaceTagAddDelReply{}); err != nil {
		e.t.Fatal(err)
	}
	for _, a := range addrs {
		p := netip.MustParsePrefix(a)
		req := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: rep.SwIfIndex, IsAdd: true,
			Prefix: ip_types.AddressWithPrefix{Address: vppbase.AddrToAPI(p.Addr()), Len: uint8(p.Bits())}}
		if err := vppbase.Call(e.ch, req, &interfaces.SwInterfaceAddDelAddressReply{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.ifs[name] = &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex), IPAddresses: addrs}
	return uint32(rep.SwIfIndex)
}

// create calls Create of d for every value, failing the test on error.
func create(t *testing.T, d *kvapi.KVDescriptor, values map[string]proto.Message) {
	t.Helper()
	for _, k := range sortedKeys(values) {
		if err := d.Validate(k, values[k]); err != nil {
			t.Fatalf("validate %s: %v", k, err)
		}
		if _, err := d.Create(k, values[k]); err != nil {
			t.Fatalf("create %s: %v", k, err)
		}
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
func retrieved(t *testing.T, d *kvapi.KVDescriptor, corr []kvapi.KVWithMetadata) map[string]proto.Message {
	t.Helper()
	list, err := d.Retrieve(corr)
	if err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	out := map[string]proto.Message{}
	for _, kv := range list {
		if _, dup := out[kv.Key]; dup {
			t.Errorf("retrieve listed %s twice", kv.Key)
		}
		out[kv.Key] = kv.Value
	}
	return out
}

// expectRetrieved checks that Retrieve of a fresh descriptor instance (new
// connection), given NB's values, returns exactly them.
func expectRetrieved(t *testing.T, d *kvapi.KVDescriptor, want map[string]proto.Message) {
	t.Helper()
	got := retrieved(t, d, correlate(want))
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("retrieve: %s missing", k)
		} else if !proto.Equal(g, w) {
			t.Errorf("retrieve %s:\n got %v\nwant %v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("retrieve: unexpected %s = %v", k, g)
		}
	}
}
