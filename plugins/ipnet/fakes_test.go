package ipnet

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// thisNode is the name of the node under test; it gets node ID 1.
const thisNode = "node1"

// yamlLoader feeds a contiv.conf held in memory to contivconf.
type yamlLoader string

func (y yamlLoader) LoadConfig(out any) (bool, error) {
	return true, infra.ParseConfig([]byte(y), out, true, nil)
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// fakeNodeSync serves a fixed node map and records the published IPs.
type fakeNodeSync struct {
	id         uint32
	nodes      map[string]*nodesync.Node
	published  [][]*net.IPNet
	versions   []nodesync.IPVersion
	publishErr error
}

func (f *fakeNodeSync) GetNodeID() uint32 { return f.id }

func (f *fakeNodeSync) GetAllNodes() map[string]*nodesync.Node {
	out := make(map[string]*nodesync.Node, len(f.nodes))
	for k, v := range f.nodes {
		out[k] = v
	}
	return out
}

func (f *fakeNodeSync) PublishNodeIPs(addrs []*net.IPNet, version nodesync.IPVersion) error {
	f.published = append(f.published, addrs)
	f.versions = append(f.versions, version)
	return f.publishErr
}

// fakePodManager serves a fixed set of local pods.
type fakePodManager struct{ pods podmanager.LocalPods }

func (f *fakePodManager) GetLocalPods() podmanager.LocalPods { return f.pods }

// fakeVPPIf holds DHCP leases and lets the test announce new ones.
type fakeVPPIf struct {
	mu       sync.Mutex
	leases   map[string]*vppif.DHCPLease
	watchers []func(*vppif.DHCPLease)
}

func (f *fakeVPPIf) GetDHCPLease(ifName string) (*vppif.DHCPLease, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.leases[ifName]
	return l, ok
}

func (f *fakeVPPIf) WatchDHCPLeases(cb func(*vppif.DHCPLease)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchers = append(f.watchers, cb)
}

// announce stores the lease and calls the watchers from another goroutine, as the VPP
// interface plugin would.
func (f *fakeVPPIf) announce(lease *vppif.DHCPLease) {
	f.mu.Lock()
	if f.leases == nil {
		f.leases = make(map[string]*vppif.DHCPLease)
	}
	f.leases[lease.GetInterfaceName()] = lease
	watchers := append([]func(*vppif.DHCPLease){}, f.watchers...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range watchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w(lease)
		}()
	}
	wg.Wait()
}

// fakeLoop records pushed events.
type fakeLoop struct {
	mu     sync.Mutex
	events []api.Event
}

func (f *fakeLoop) PushEvent(ev api.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return nil
}

func (f *fakeLoop) pushed() []api.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Event(nil), f.events...)
}

// fakeHTTP records registered handlers.
type fakeHTTP map[string]func(http.ResponseWriter, *http.Request)

func (f fakeHTTP) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	f[pattern] = h
}

// txn records staged operations: a nil value is a delete.
type txn struct{ ops api.KeyValuePairs }

func newTxn() *txn { return &txn{ops: make(api.KeyValuePairs)} }

func (t *txn) Put(key string, value proto.Message) {
	if value == nil {
		panic("Put(nil) of " + key)
	}
	t.ops[key] = value
}

func (t *txn) Get(key string) proto.Message { return t.ops[key] }

func (t *txn) Delete(key string) { t.ops[key] = nil }

// env is ipnet wired to the real contivconf and IPAM and to fakes of the rest.
type env struct {
	t        *testing.T
	conf     *contivconf.Plugin
	ipam     *ipam.Plugin
	ns       *fakeNodeSync
	pm       *fakePodManager
	vppIf    *fakeVPPIf
	loop     *fakeLoop
	http     fakeHTTP
	n        *IPNet
	hostIPs  []net.IP
	ipv6Done []string
}

// envOptions vary the environment.
type envOptions struct {
	dpdk    []string                  // DPDK NICs found in VPP
	nodes   map[string]*nodesync.Node // GetAllNodes besides this node
	hostIPs []net.IP
	hostErr error
	stnInfo *contivconf.StolenInterfaceInfo
}

// defaultHostIPs are the host's link addresses: one IPv4 address and two IPv6 ones
// (a link-local and a global one), which an IPv4 cluster ignores.
func defaultHostIPs() []net.IP {
	return []net.IP{net.ParseIP("10.20.0.5").To4(), net.ParseIP("fe80::1"), net.ParseIP("2001:db8::5")}
}

func newEnv(t *testing.T, conf string, o envOptions) *env {
	t.Helper()
	e := &env{t: t, ns: &fakeNodeSync{id: 1}, pm: &fakePodManager{pods: podmanager.LocalPods{}},
		vppIf: &fakeVPPIf{}, loop: &fakeLoop{}, http: fakeHTTP{}, hostIPs: o.hostIPs}
	if e.hostIPs == nil {
		e.hostIPs = defaultHostIPs()
	}
	e.ns.nodes = map[string]*nodesync.Node{thisNode: {ID: 1, Name: thisNode}}
	for name, node := range o.nodes {
		e.ns.nodes[name] = node
	}
	e.conf = &contivconf.Plugin{Deps: contivconf.Deps{
		Log: quietLog(), Config: yamlLoader(conf), NodeName: thisNode,
		DumpDPDKInterfaces: func() ([]string, error) { return o.dpdk, nil },
		GetSTNInfo: func(string) (*contivconf.StolenInterfaceInfo, error) {
			if o.stnInfo == nil {
				return nil, errors.New("no STN daemon")
			}
			return o.stnInfo, nil
		},
	}}
	if err := e.conf.Init(); err != nil {
		t.Fatalf("contivconf Init: %v", err)
	}
	// As at the first resync, where contivconf runs before ipnet: VPP's NICs are known.
	if err := e.conf.ReloadNodeInterfaces(); err != nil {
		t.Fatalf("contivconf resolution: %v", err)
	}
	e.ipam = ipam.NewPlugin(ipam.Deps{
		Log: quietLog(), NodeName: thisNode, ContivConf: e.conf,
		NodeSync: ipam.NodeSyncFuncs{
			NodeID: func() uint32 { return 1 },
			AllNodes: func() map[string]*ipam.NodeInfo {
				out := make(map[string]*ipam.NodeInfo)
				for name, n := range e.ns.nodes {
					out[name] = &ipam.NodeInfo{ID: n.ID, Name: n.Name, PodCIDR: n.PodCIDR}
				}
				return out
			},
		},
	})
	if err := e.ipam.Init(); err != nil {
		t.Fatalf("ipam Init: %v", err)
	}
	if err := e.ipam.Resync(api.NewDBResync(), api.NewKubeStateData(podmodel.Keyword), 1, nil); err != nil {
		t.Fatalf("ipam Resync: %v", err)
	}
	e.n = NewPlugin(Deps{
		Log: quietLog(), NodeName: thisNode, EventLoop: e.loop, ContivConf: e.conf, IPAM: e.ipam,
		NodeSync: e.ns, PodManager: e.pm, VPPIfPlugin: e.vppIf, HTTPHandlers: e.http,
		GetHostLinkIPs: func() ([]net.IP, error) { return e.hostIPs, o.hostErr },
		EnablePodIPv6:  func(netns string) error { e.ipv6Done = append(e.ipv6Done, netns); return nil },
	})
	if err := e.n.Init(); err != nil {
		t.Fatalf("ipnet Init: %v", err)
	}
	return e
}

// resync runs a resync of the event and returns the staged values.
func (e *env) resync(ev api.Event, resyncCount int) (api.KeyValuePairs, error) {
	tx := newTxn()
	err := e.n.Resync(ev, api.NewKubeStateData(podmodel.Keyword), resyncCount, tx)
	return tx.ops, err
}

// mustResync is resync of a DBResync that must succeed.
func (e *env) mustResync() api.KeyValuePairs {
	e.t.Helper()
	kvs, err := e.resync(api.NewDBResync(), 1)
	if err != nil {
		e.t.Fatalf("Resync: %v", err)
	}
	return kvs
}

// update runs Update and returns the staged operations.
func (e *env) update(ev api.Event) (api.KeyValuePairs, string, error) {
	tx := newTxn()
	change, err := e.n.Update(ev, tx)
	return tx.ops, change, err
}

// addLocalPod makes the pod known to podmanager and allocates its IP in the IPAM, as
// after an agent restart.
func (e *env) addLocalPod(ns, name, cid, netns string) *net.IPNet {
	e.t.Helper()
	id := podmodel.ID{Name: name, Namespace: ns}
	e.pm.pods[id] = &podmanager.LocalPod{ID: id, ContainerID: cid, NetworkNamespace: netns}
	ip, err := e.ipam.AllocatePodIP(id, "", "")
	if err != nil {
		e.t.Fatalf("AllocatePodIP: %v", err)
	}
	return ip
}

// podID returns the ID of a pod.
func podID(namespace, name string) podmodel.ID { return podmodel.ID{Name: name, Namespace: namespace} }

// describe prints a staged value; nil is a delete.
func describe(m proto.Message) string {
	if m == nil {
		return "<delete>"
	}
	return fmt.Sprintf("%T{%s}", m, prototext.MarshalOptions{}.Format(m))
}

// diffKVs fails the test with every difference between the staged and the expected
// transaction: missing keys, unexpected keys and different values (nil = delete).
func diffKVs(t *testing.T, got, want api.KeyValuePairs) {
	t.Helper()
	keys := make(map[string]bool)
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "\n- missing %s\n    want %s", k, describe(w))
		case !wok:
			fmt.Fprintf(&b, "\n+ unexpected %s\n    got  %s", k, describe(g))
		case (g == nil) != (w == nil) || (g != nil && !proto.Equal(g, w)):
			fmt.Fprintf(&b, "\n~ different %s\n    got  %s\n    want %s", k, describe(g), describe(w))
		}
	}
	if b.Len() > 0 {
		t.Errorf("transaction differs (%d staged, %d expected):%s", len(got), len(want), b.String())
	}
}

// union returns one map with the pairs of all maps (later ones win).
func union(sets ...api.KeyValuePairs) api.KeyValuePairs {
	out := make(api.KeyValuePairs)
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

// deletes turns every value into a delete.
func deletes(kvs api.KeyValuePairs) api.KeyValuePairs {
	out := make(api.KeyValuePairs, len(kvs))
	for k := range kvs {
		out[k] = nil
	}
	return out
}

// cidr parses a CIDR keeping the host bits in IP.
func cidr(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	return &net.IPNet{IP: ip, Mask: n.Mask}
}
