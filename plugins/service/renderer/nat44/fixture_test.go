package nat44

import (
	"net"
	"net/netip"
	"slices"
	"sort"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/processor"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer/cnat"
)

// The node under test is "master" (node ID 1): pod subnet 10.1.1.0/24, NAT loopback
// 10.1.1.254, node IP 192.168.16.10 on GbE, default gateway 192.168.16.1, main VRF 1,
// pod VRF 2. The worker (ID 2) has pod subnet 10.1.2.0/24.
const (
	mainIf   = "GbE"
	otherIf  = "GbE2"
	bviIf    = "vxlanBVI"
	hostIf   = "tap-vpp2"
	pod1If   = "vpp-tap-pod1"
	pod2If   = "vpp-tap-pod2"
	pod3If   = "vpp-tap-pod3"
	mainVRF  = 1
	podVRF   = 2
	nodeIP   = "192.168.16.10"
	hostIP   = "10.3.1.10" // management IP of master (host stack)
	workerIP = "192.168.16.20"
	workerMg = "10.3.1.20"
	natLoop  = "10.1.1.254"
	pod1IP   = "10.1.1.3"
	pod2IP   = "10.1.1.4"
	pod3IP   = "10.1.1.5"
	remote1  = "10.1.2.3" // pod on the worker
	remote2  = "10.1.2.4"
)

// confVXLAN is the default setup: VXLAN overlay, static gateway on the main NIC's
// subnet, SNAT of external traffic.
const confVXLAN = `
mainVRFID: 1
podVRFID: 2
natExternalTraffic: true
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  gateway: 192.168.16.1
`

// env is one node: real ContivConf and IPAM, fake ipnet/nodesync/podmanager, the
// processor with the NAT44 renderer (or, with envOptions.cnat, the cnat renderer
// serving IPv4: serviceRenderer cnat) registered, and a dataplane committing the
// staged transactions.
type env struct {
	t     tb
	agent *agent // nil: nothing goes to VPP
	ipnet *servicetest.IPNet
	nodes *servicetest.NodeSync
	pods  *servicetest.PodManager
	dp    *servicetest.Dataplane
	proc  *processor.ServiceProcessor
	rndr  *Renderer      // nil with envOptions.cnat
	cnat  *cnat.Renderer // nil without envOptions.cnat
}

type envOptions struct {
	conf     string         // contiv.conf ("" = confVXLAN)
	svcConf  *config.Config // service.conf (nil = defaults)
	snatOnly bool           // Init(true)
	cnat     bool           // the cnat renderer for IPv4 instead of NAT44
	ipnet    func(*env)     // adjust the ipnet fake
	noPods   bool           // no local pods at start
	nodes    func(*env)     // adjust the cluster nodes
	kube     controller.KubeStateData
	vpp      bool // also commit everything through the scheduler into the simulator
	// failProbability makes that share of the state-changing VPP requests fail
	// (vppsim.Options.FailProbability); failed operations are retried by the
	// scheduler and every commit waits until the agent converged.
	failProbability float64
	failSeed        int64
}

// tb is the part of testing.TB the fixture uses; the scenario runner adapts
// testscript's TestScript to it.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

func newEnv(t tb, opts envOptions) *env {
	t.Helper()
	conf := opts.conf
	if conf == "" {
		conf = confVXLAN
	}
	cc := servicetest.ContivConf(t, "master", conf)
	ipamPlugin := servicetest.IPAM(t, cc, "master", 1)
	e := &env{
		t: t,
		ipnet: &servicetest.IPNet{
			NodeIP: net.ParseIP(nodeIP).To4(), NodeNet: mustCIDR(t, "192.168.16.0/24"),
			HostIPs: []net.IP{net.ParseIP(hostIP)}, HostInterconnect: hostIf, VxlanBVI: bviIf,
		},
		nodes: &servicetest.NodeSync{ThisNodeID: 1},
		pods:  &servicetest.PodManager{},
		dp:    servicetest.NewDataplane(),
	}
	e.nodes.SetNode(1, "master", []string{nodeIP + "/24"}, hostIP)
	e.nodes.SetNode(2, "worker", []string{workerIP + "/24"}, workerMg)
	if !opts.noPods {
		e.wirePod("pod1", pod1If)
		e.wirePod("pod2", pod2If)
	}
	if opts.ipnet != nil {
		opts.ipnet(e)
	}
	if opts.nodes != nil {
		opts.nodes(e)
	}
	if opts.vpp {
		e.agent = newAgent(t, opts.failProbability, opts.failSeed)
	}
	e.proc = &processor.ServiceProcessor{Deps: processor.Deps{
		Log: servicetest.QuietLog(), ContivConf: cc, NodeSync: e.nodes, PodManager: e.pods, IPAM: ipamPlugin, IPNet: e.ipnet,
	}}
	if c := opts.svcConf; c != nil {
		var err error
		if e.proc.NodePortFirst, e.proc.NodePortLast, err = c.NodePorts(); err != nil {
			t.Fatal(err)
		}
		e.proc.NodePortsOnThisNodeOnly = c.NodePortsOnThisNodeOnly
	}
	if err := e.proc.Init(); err != nil {
		t.Fatal(err)
	}
	if opts.cnat {
		e.registerCNAT(cc, ipamPlugin, opts)
	} else {
		e.rndr = &Renderer{Deps: Deps{
			Log: servicetest.QuietLog(), Config: opts.svcConf, ContivConf: cc, IPAM: ipamPlugin, IPNet: e.ipnet,
			UpdateTxnFactory: e.dp.UpdateTxnFactory, ResyncTxnFactory: e.dp.ResyncTxnFactory,
		}}
		if err := e.rndr.Init(opts.snatOnly); err != nil {
			t.Fatal(err)
		}
		if err := e.proc.RegisterRenderer(e.rndr); err != nil {
			t.Fatal(err)
		}
	}
	e.resync(opts.kube)
	return e
}

// registerCNAT registers the cnat renderer serving IPv4 (serviceRenderer cnat) with
// the processor, as the service plugin does.
func (e *env) registerCNAT(cc *contivconf.Plugin, ipamPlugin *ipam.Plugin, opts envOptions) {
	e.t.Helper()
	if opts.snatOnly {
		e.t.Fatal("the cnat renderer has no SNAT-only mode")
	}
	e.cnat = &cnat.Renderer{Deps: cnat.Deps{
		Log: servicetest.QuietLog(), ContivConf: cc, IPAM: ipamPlugin, IPNet: e.ipnet, IPv4: true, Maglev: opts.svcConf.Maglev(),
	}}
	if err := e.cnat.Init(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.proc.AddRenderer(e.cnat); err != nil {
		e.t.Fatal(err)
	}
}

func mustCIDR(t tb, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wirePod makes a local pod with a VPP interface (before the resync, or before an
// AddPod event).
func (e *env) wirePod(name, ifName string) {
	e.ipnet.WirePod("default", name, ifName)
	e.pods.AddPod("default", name)
}

// resync runs a full resync of the given Kubernetes state and commits it.
func (e *env) resync(kube controller.KubeStateData) *servicetest.Txn {
	e.t.Helper()
	if kube == nil {
		kube = controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	}
	var err error
	if e.cnat != nil { // a Renderer stages into the transaction it is given
		err = e.proc.ResyncInto(kube, e.dp.ResyncTxnFactory())
	} else {
		err = e.proc.Resync(kube)
	}
	if err != nil {
		e.t.Fatalf("resync: %v", err)
	}
	txn := e.dp.Commit()
	if e.agent != nil {
		e.agent.commit(txn.Values, e.agent.synced)
		e.agent.synced = true
	}
	return txn
}

// update processes one event and commits what it staged; it returns the change
// descriptions and the transaction.
func (e *env) update(ev controller.Event) ([]string, *servicetest.Txn) {
	e.t.Helper()
	var err error
	if e.cnat != nil {
		err = e.proc.UpdateInto(ev, e.dp.UpdateTxn())
	} else {
		err = e.proc.Update(ev)
	}
	if err != nil {
		e.t.Fatalf("%s: %v", ev, err)
	}
	changes := e.dp.Changes
	txn := e.dp.Commit()
	if e.agent != nil {
		e.agent.commit(txn.Values, false)
	}
	return changes, txn
}

func (e *env) deleteService(ns, name string) ([]string, *servicetest.Txn) {
	return e.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key(name, ns), PrevValue: &svcmodel.Service{}})
}

func (e *env) deleteEndpoints(ns, name string) ([]string, *servicetest.Txn) {
	return e.update(&controller.KubeStateChange{Resource: epmodel.Keyword, Key: epmodel.Key(name, ns), PrevValue: &epmodel.Endpoints{}})
}

func (e *env) addPod(name, ifName string) ([]string, *servicetest.Txn) {
	e.wirePod(name, ifName)
	return e.update(podmanager.NewAddPod(podmodel.ID{Name: name, Namespace: "default"}, "cid-"+name, "/proc/1/ns/net"))
}

func (e *env) nodeUpdate(name string, prev, next *nodesync.Node) ([]string, *servicetest.Txn) {
	return e.update(&nodesync.NodeUpdate{NodeName: name, PrevState: prev, NewState: next})
}

// nat returns the committed NAT configuration.
func (e *env) nat() servicetest.NAT { return servicetest.NATFrom(e.dp.KVs) }

// trace sends a packet through the committed configuration. With VPP, a translated
// packet must be translated the same way by the simulator.
func (e *env) trace(proto vpp_nat.DNat44_Protocol, src, dst, inIf string) ([]servicetest.Outcome, string) {
	e.t.Helper()
	outcomes, why := e.nat().Trace(servicetest.Packet{Proto: proto, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst), InIf: inIf})
	if e.agent != nil && why == "" {
		ipProto := uint8(6)
		if proto == vpp_nat.DNat44_UDP {
			ipProto = 17
		}
		var mine []string
		for _, o := range outcomes {
			mine = append(mine, o.Src.String()+" -> "+o.Dst.String())
		}
		sort.Strings(mine)
		if sim := e.agent.translate(ipProto, src, dst); !slices.Equal(mine, sim) {
			e.t.Errorf("%s -> %s: traced %q, the simulator says %q", src, dst, mine, sim)
		}
	}
	return outcomes, why
}

// Protocols of the trace command.
const (
	tcp = vpp_nat.DNat44_TCP
	udp = vpp_nat.DNat44_UDP
)
