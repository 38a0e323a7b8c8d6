// Package servicetest holds the test fixture shared by the service plugin's packages:
// the real ContivConf and IPAM configured from in-memory contiv.conf, fakes of nodesync,
// ipnet and podmanager, a staging transaction with a committed key-value store, builders
// of Kubernetes objects, a packet tracer over staged NAT configuration and a readable
// line diff. It is imported by tests only.
package servicetest

import (
	"io"
	"net"
	"sort"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// QuietLog returns a logger that discards everything.
func QuietLog() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// yamlLoader hands a contiv.conf held in memory to contivconf.
type yamlLoader string

// LoadConfig parses the YAML strictly into out.
func (y yamlLoader) LoadConfig(out any) (bool, error) {
	return true, infra.ParseConfig([]byte(y), out, true, nil)
}

// TB is the part of testing.TB the fixture needs (scenario scripts adapt to it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// ContivConf returns a real, initialised ContivConf of the node reading conf.
func ContivConf(tb TB, nodeName, conf string) *contivconf.Plugin {
	tb.Helper()
	c := &contivconf.Plugin{Deps: contivconf.Deps{Log: QuietLog(), Config: yamlLoader(conf), NodeName: nodeName}}
	if err := c.Init(); err != nil {
		tb.Fatalf("contivconf Init: %v", err)
	}
	return c
}

// IPAM returns a real IPAM of the node with the given ID, initialised and resynced.
func IPAM(tb TB, conf contivconf.API, nodeName string, nodeID uint32) *ipam.Plugin {
	tb.Helper()
	p := ipam.NewPlugin(ipam.Deps{
		Log: QuietLog(), NodeName: nodeName, ContivConf: conf,
		NodeSync: ipam.NodeSyncFuncs{NodeID: func() uint32 { return nodeID }},
	})
	if err := p.Init(); err != nil {
		tb.Fatalf("ipam Init: %v", err)
	}
	if err := p.Resync(controller.NewDBResync(), controller.NewKubeStateData(podmodel.Keyword), 1, nil); err != nil {
		tb.Fatalf("ipam Resync: %v", err)
	}
	return p
}

// IPNet is a fake of the ipnet plugin's API.
type IPNet struct {
	NodeIP           net.IP
	NodeNet          *net.IPNet
	HostIPs          []net.IP
	HostInterconnect string
	VxlanBVI         string
	// PodIfs maps the pods that ipnet wired to their VPP interface.
	PodIfs map[podmodel.ID]string
}

// GetPodIfNames returns the VPP interface of a wired pod.
func (f *IPNet) GetPodIfNames(podNamespace, podName string) (vppIfName, linuxIfName, loopIfName string, exists bool) {
	name, ok := f.PodIfs[podmodel.ID{Name: podName, Namespace: podNamespace}]
	return name, "", "", ok
}

// GetNodeIP returns NodeIP and NodeNet.
func (f *IPNet) GetNodeIP() (net.IP, *net.IPNet) { return f.NodeIP, f.NodeNet }

// GetHostIPs returns HostIPs.
func (f *IPNet) GetHostIPs() []net.IP { return f.HostIPs }

// GetHostInterconnectIfName returns HostInterconnect.
func (f *IPNet) GetHostInterconnectIfName() string { return f.HostInterconnect }

// GetVxlanBVIIfName returns VxlanBVI.
func (f *IPNet) GetVxlanBVIIfName() string { return f.VxlanBVI }

// WirePod records the pod's VPP interface, as ipnet does while handling AddPod.
func (f *IPNet) WirePod(ns, name, ifName string) {
	if f.PodIfs == nil {
		f.PodIfs = make(map[podmodel.ID]string)
	}
	f.PodIfs[podmodel.ID{Name: name, Namespace: ns}] = ifName
}

// NodeSync is a fake of nodesync.
type NodeSync struct {
	ThisNodeID uint32
	Nodes      map[string]*nodesync.Node
}

// GetNodeID returns ThisNodeID.
func (f *NodeSync) GetNodeID() uint32 { return f.ThisNodeID }

// GetAllNodes returns Nodes.
func (f *NodeSync) GetAllNodes() map[string]*nodesync.Node { return f.Nodes }

// PublishNodeIPs does nothing.
func (f *NodeSync) PublishNodeIPs([]*net.IPNet, nodesync.IPVersion) error { return nil }

// SetNode adds or replaces a node with its VPP IPs ("ip/prefix") and management IPs.
func (f *NodeSync) SetNode(id uint32, name string, vppIPs []string, mgmtIPs ...string) {
	if f.Nodes == nil {
		f.Nodes = make(map[string]*nodesync.Node)
	}
	n := &nodesync.Node{ID: id, Name: name}
	for _, s := range vppIPs {
		ip, network, err := net.ParseCIDR(s)
		if err != nil {
			panic(err)
		}
		network.IP = ip
		n.VppIPAddresses = append(n.VppIPAddresses, network)
	}
	for _, s := range mgmtIPs {
		n.MgmtIPAddresses = append(n.MgmtIPAddresses, net.ParseIP(s))
	}
	f.Nodes[name] = n
}

// PodManager is a fake of podmanager.
type PodManager struct {
	Pods podmanager.LocalPods
}

// GetLocalPods returns Pods.
func (f *PodManager) GetLocalPods() podmanager.LocalPods { return f.Pods }

// AddPod records a local pod.
func (f *PodManager) AddPod(ns, name string) {
	if f.Pods == nil {
		f.Pods = make(podmanager.LocalPods)
	}
	id := podmodel.ID{Name: name, Namespace: ns}
	f.Pods[id] = &podmanager.LocalPod{ID: id}
}

// Txn is a staging transaction: values by key, nil for a deletion.
type Txn struct {
	Values map[string]proto.Message
}

// NewTxn returns an empty transaction.
func NewTxn() *Txn { return &Txn{Values: make(map[string]proto.Message)} }

// Put stages a value; nil panics like the controller's transaction.
func (t *Txn) Put(key string, value proto.Message) {
	if value == nil {
		panic("Put of a nil value for " + key)
	}
	t.Values[key] = value
}

// Get returns the staged value.
func (t *Txn) Get(key string) proto.Message { return t.Values[key] }

// Delete stages the removal of key.
func (t *Txn) Delete(key string) { t.Values[key] = nil }

// Keys returns the staged keys in order.
func (t *Txn) Keys() []string {
	keys := make([]string, 0, len(t.Values))
	for k := range t.Values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Dataplane plays the controller and the scheduler for a renderer: it hands out the
// transaction of the current event through the two factories, records the change
// descriptions and commits into a key-value store (a resync replaces the store).
type Dataplane struct {
	// KVs is the committed configuration.
	KVs map[string]proto.Message
	// Changes are the change descriptions of the current event.
	Changes []string

	txn    *Txn
	resync bool
}

// NewDataplane returns an empty store.
func NewDataplane() *Dataplane { return &Dataplane{KVs: make(map[string]proto.Message)} }

// UpdateTxnFactory returns the current event's transaction, recording the change.
func (d *Dataplane) UpdateTxnFactory(change string) controller.UpdateOperations {
	if d.txn == nil {
		d.txn = NewTxn()
	}
	d.Changes = append(d.Changes, change)
	return d.txn
}

// ResyncTxnFactory returns the current resync's transaction.
func (d *Dataplane) ResyncTxnFactory() controller.ResyncOperations {
	if d.txn == nil {
		d.txn = NewTxn()
	}
	d.resync = true
	return d.txn
}

// Commit applies the current transaction and returns it (an empty one when nothing
// was staged).
func (d *Dataplane) Commit() *Txn {
	txn := d.txn
	if txn == nil {
		txn = NewTxn()
	}
	if d.resync {
		d.KVs = make(map[string]proto.Message)
	}
	for k, v := range txn.Values {
		if v == nil {
			delete(d.KVs, k)
		} else {
			d.KVs[k] = v
		}
	}
	d.txn, d.resync, d.Changes = nil, false, nil
	return txn
}

// UpdateTxn returns a renderer.UpdateTxn staging into the current event's transaction,
// its descriptions recorded as the event's changes (for a renderer.Renderer, which is
// handed the transaction instead of asking the factories).
func (d *Dataplane) UpdateTxn() renderer.UpdateTxn { return dataplaneTxn{d} }

// dataplaneTxn stages into the current transaction of a Dataplane.
type dataplaneTxn struct{ d *Dataplane }

func (t dataplaneTxn) current() *Txn {
	if t.d.txn == nil {
		t.d.txn = NewTxn()
	}
	return t.d.txn
}

// Put stages a value.
func (t dataplaneTxn) Put(key string, value proto.Message) { t.current().Put(key, value) }

// Get returns the staged value.
func (t dataplaneTxn) Get(key string) proto.Message { return t.current().Get(key) }

// Delete stages the removal of key.
func (t dataplaneTxn) Delete(key string) { t.current().Delete(key) }

// Describe records the change.
func (t dataplaneTxn) Describe(change string) { t.d.Changes = append(t.d.Changes, change) }

// Staged returns the transaction of the current event (nil when nothing was staged).
func (d *Dataplane) Staged() *Txn { return d.txn }
