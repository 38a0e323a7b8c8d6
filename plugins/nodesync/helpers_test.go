package nodesync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// thisNode is the name of the node the plugin under test runs on.
const thisNode = "node1"

// fakeLoop is an api.EventLoop that records the pushed events; err, when set, refuses
// them.
type fakeLoop struct {
	mu     sync.Mutex
	events []api.Event
	err    error
}

func (f *fakeLoop) PushEvent(ev api.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.events = append(f.events, ev)
	return nil
}

// take returns the events pushed since the last call.
func (f *fakeLoop) take() []api.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := f.events
	f.events = nil
	return evs
}

// clientDB is a DB over an etcd client.
type clientDB struct{ c *clientv3.Client }

func (d clientDB) KV() (clientv3.KV, error) { return d.c.KV, nil }

// startedDB is a DB that closes started when the plugin makes its first request.
type startedDB struct {
	clientDB
	started chan struct{}
	once    *sync.Once
}

func (d startedDB) KV() (clientv3.KV, error) { return startedKV{d.c.KV, d}, nil }

// startedKV is the KV of a startedDB.
type startedKV struct {
	clientv3.KV
	db startedDB
}

func (k startedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.db.once.Do(func() { close(k.db.started) })
	return k.KV.Get(ctx, key, opts...)
}

func (k startedKV) Txn(ctx context.Context) clientv3.Txn {
	k.db.once.Do(func() { close(k.db.started) })
	return k.KV.Txn(ctx)
}

// downDB is a DB whose database is not connected.
type downDB struct{}

func (downDB) KV() (clientv3.KV, error) {
	return nil, errors.New("database is not connected: etcd is disabled")
}

// newPlugin returns an initialised plugin for nodeName with a fake loop; db may be nil.
func newPlugin(t *testing.T, nodeName string, db DB) (*NodeSync, *fakeLoop, *test.Hook) {
	t.Helper()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	loop := &fakeLoop{}
	ns := NewNodeSync(Deps{Log: log, NodeName: nodeName, DB: db, EventLoop: loop})
	if err := ns.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ns, loop, hook
}

// vppNode returns a VppNode record.
func vppNode(id uint32, name string, ips ...string) *vppnode.VppNode {
	return &vppnode.VppNode{Id: id, Name: name, IpAddresses: ips}
}

// k8sNode returns a Kubernetes node; addresses are "internal:IP", "external:IP" or
// "hostname:NAME".
func k8sNode(name, podCIDR string, addresses ...string) *node.Node {
	n := &node.Node{Name: name, Pod_CIDR: podCIDR}
	types := map[string]node.NodeAddress_NodeAddressType{
		"internal": node.NodeAddress_NodeInternalIP,
		"external": node.NodeAddress_NodeExternalIP,
		"hostname": node.NodeAddress_NodeHostName,
	}
	for _, a := range addresses {
		typ, addr, _ := strings.Cut(a, ":")
		n.Addresses = append(n.Addresses, &node.NodeAddress{Type: types[typ], Address: addr})
	}
	return n
}

// kubeState builds the Kubernetes state of a resync from VppNodes and Kubernetes nodes.
func kubeState(records ...proto.Message) api.KubeStateData {
	ks := api.NewKubeStateData(vppnode.Keyword, node.Keyword)
	for _, r := range records {
		switch v := r.(type) {
		case *vppnode.VppNode:
			ks[vppnode.Keyword][vppnode.Key(v.GetId())] = v
		case *node.Node:
			ks[node.Keyword][node.Key(v.GetName())] = v
		default:
			panic(fmt.Sprintf("kubeState: %T", r))
		}
	}
	return ks
}

// resync runs a resync of the given state.
func resync(ns *NodeSync, count int, ks api.KubeStateData) error {
	return ns.Resync(api.NewDBResync(), ks, count, nil)
}

// describeNodes renders nodes as sorted lines, for comparisons.
func describeNodes(nodes map[string]*Node) string {
	lines := make([]string, 0, len(nodes))
	for name, n := range nodes {
		lines = append(lines, name+": "+n.String())
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// describeUpdates renders NodeUpdate events as "name prevID->newID" (- for nil).
func describeUpdates(t *testing.T, evs []api.Event) []string {
	t.Helper()
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		upd, ok := ev.(*NodeUpdate)
		if !ok {
			t.Fatalf("pushed %T, want *NodeUpdate", ev)
		}
		id := func(n *Node) string {
			if n == nil {
				return "-"
			}
			return fmt.Sprint(n.ID)
		}
		out = append(out, fmt.Sprintf("%s %s->%s", upd.NodeName, id(upd.PrevState), id(upd.NewState)))
	}
	return out
}
