package ipam

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// defaultConf is the contiv.conf of the deployment ConfigMap as far as the IPAM is
// concerned: the code defaults plus nodeInterconnectCIDR 192.168.16.0/24.
const defaultConf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
`

// ipv6Conf is an IPv6 cluster.
const ipv6Conf = `
ipamConfig:
  podSubnetCIDR: 2001::/48
  podSubnetOneNodePrefixLen: 64
  vppHostSubnetCIDR: 2002::/64
  vppHostSubnetOneNodePrefixLen: 112
  nodeInterconnectCIDR: fe10::/64
  vxlanCIDR: 2005::/112
  serviceCIDR: 2096::/110
`

// yamlLoader feeds a contiv.conf to contivconf.
type yamlLoader string

func (y yamlLoader) LoadConfig(out any) (bool, error) {
	return true, infra.ParseConfig([]byte(y), out, true, nil)
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// contivConf returns an initialised contivconf for node "node1" reading conf.
func contivConf(t testing.TB, conf string) *contivconf.Plugin {
	t.Helper()
	c := &contivconf.Plugin{Deps: contivconf.Deps{Log: quietLog(), Config: yamlLoader(conf), NodeName: "node1"}}
	if err := c.Init(); err != nil {
		t.Fatalf("contivconf Init: %v", err)
	}
	return c
}

// ipamConfig returns the effective ipamConfig of conf.
func ipamConfig(t testing.TB, conf string) *contivconf.IPAMConfig {
	t.Helper()
	return contivConf(t, conf).GetIPAMConfig()
}

// fakeNodeSync is a NodeSync whose answers the test sets; the zero value knows nothing.
type fakeNodeSync struct {
	mu    sync.Mutex
	id    uint32
	nodes map[string]*NodeInfo
}

func (f *fakeNodeSync) GetNodeID() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id
}

func (f *fakeNodeSync) GetAllNodes() map[string]*NodeInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]*NodeInfo, len(f.nodes))
	for k, v := range f.nodes {
		c := *v
		out[k] = &c
	}
	return out
}

func (f *fakeNodeSync) setPodCIDR(name, cidr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[name].PodCIDR = cidr
}

// fakeEventLoop records pushed events.
type fakeEventLoop struct {
	mu     sync.Mutex
	events []api.Event
	err    error
}

func (f *fakeEventLoop) PushEvent(ev api.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.events = append(f.events, ev)
	return nil
}

func (f *fakeEventLoop) pushed() []api.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Event(nil), f.events...)
}

// nodeUpdate stands in for nodesync's NodeUpdate event.
type nodeUpdate struct{}

func (nodeUpdate) GetName() string                            { return NodeUpdateEventName }
func (nodeUpdate) String() string                             { return "Node Update node1" }
func (nodeUpdate) Method() api.EventMethodType                { return api.Update }
func (nodeUpdate) IsBlocking() bool                           { return false }
func (nodeUpdate) Done(error)                                 {}
func (nodeUpdate) TransactionType() api.UpdateTransactionType { return api.BestEffort }
func (nodeUpdate) Direction() api.UpdateDirectionType         { return api.Forward }

// testPlugin returns an initialised plugin for node1 with the given node ID and conf.
func testPlugin(t testing.TB, conf string, nodeID uint32, tweak ...func(*Deps)) (*Plugin, *fakeNodeSync) {
	t.Helper()
	ns := &fakeNodeSync{id: nodeID, nodes: map[string]*NodeInfo{"node1": {ID: nodeID, Name: "node1"}}}
	p := NewPlugin(Deps{Log: quietLog(), NodeName: "node1", ContivConf: contivConf(t, conf), NodeSync: ns})
	for _, f := range tweak {
		f(&p.Deps)
	}
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return p, ns
}

// resynced is testPlugin followed by a start-up resync over the given pods.
func resynced(t testing.TB, conf string, nodeID uint32, pods ...*podmodel.Pod) *Plugin {
	t.Helper()
	p, _ := testPlugin(t, conf, nodeID)
	if err := p.Resync(api.NewDBResync(), kubeState(pods...), 1, nil); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	return p
}

// kubeState returns Kubernetes state holding the given pods.
func kubeState(pods ...*podmodel.Pod) api.KubeStateData {
	ks := api.NewKubeStateData(podmodel.Keyword, "node")
	for _, pd := range pods {
		ks[podmodel.Keyword][podmodel.Key(pd.Name, pd.Namespace)] = pd
	}
	return ks
}

// kubePod returns a pod "ns/name" with the given IP.
func kubePod(nsName, ip string) *podmodel.Pod {
	ns, name, _ := strings.Cut(nsName, "/")
	return &podmodel.Pod{Name: name, Namespace: ns, IpAddress: ip}
}

// pid returns the PodID of "ns/name".
func pid(nsName string) PodID {
	ns, name, _ := strings.Cut(nsName, "/")
	return PodID{Name: name, Namespace: ns}
}

// mustCIDR parses a CIDR.
func mustCIDR(t testing.TB, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkErr fails unless err's message contains want ("" = no error expected).
func checkErr(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

var errPushRefused = errors.New("event queue full")

// dualConf is a dual-stack cluster: the IPv4 defaults and an IPv6 plan.
const dualConf = `
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
    nodeInterconnectCIDR: fd00:192:168:16::/112
    serviceCIDR: fd00:10:96::/108
`

// ipv6OnlyConf is a single-stack IPv6 cluster written with ipamConfig.ipv6 only.
const ipv6OnlyConf = `
ipamConfig:
  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
    nodeInterconnectCIDR: fd00:192:168:16::/112
`
