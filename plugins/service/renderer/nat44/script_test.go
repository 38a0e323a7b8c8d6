//lint:file-ignore SA1019 the scenarios use the Endpoints API, which the agent's model follows (contiv-ksr merges EndpointSlices into it).

package nat44

import (
	"flag"
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// The Services scenarios are data: plugins/service/testdata/scenarios/*.txtar, run
// by testscript (the format of Go's own cmd/go tests and of Cilium's load-balancer
// script tests). A file holds the Kubernetes objects (YAML, converted by contiv-ksr's
// converters), the commands below that apply them to one node's service processor
// and NAT44 renderer, and the expected configuration, packet traces and VPP dumps
// inline. A new case is a new file; see docs/dev-guide/SERVICES.md.
//
// Every scenario runs with both IPv4 renderers (nat44: the NAT44 renderer; cnat: the
// cnat renderer serving IPv4, contiv.conf serviceRenderer cnat), and with each three
// times:
//   - staged: the transactions are committed into a key-value store only;
//   - vpp: every transaction also goes through the real KV scheduler and the NAT and
//     L3 descriptors into the VPP simulator; every value must end up configured and
//     every traced packet must be translated by the simulator as the trace says;
//   - vpp-faults: as vpp, with 10% of the state-changing VPP requests failing
//     (VNET_API_ERROR_BUSY); the scheduler retries, every command waits until the
//     agent converged, and the VPP dumps must equal those of the vpp run.
//
// Conditions: [vpp] holds in both VPP runs, [faults] in the last one, [nat44] and
// [cnat] in the runs of that renderer. The commands that print one renderer's
// configuration (nat, trace, snat, vpp nat|translate|features|state, the keys printed
// by apply and the other events) are that renderer's; reach and routes are compared
// between the two: both renderers must reach the same backends.
//
// Commands (each fails the script on an error; "!" is not supported):
//
//	start [-conf F] [-service-conf F] [-snat-only] [-no-node-ip] [-no-vxlan] [-zone Z]
//	      [-node ID,NAME,VPPCIDR[,MGMTIP]]... [OBJECTS.yaml...]
//	    Creates the node "master" (ID 1; the worker is ID 2) with contiv.conf F
//	    (default: VXLAN, gateway 192.168.16.1, see fixture_test.go), service.conf F,
//	    the renderer in SNAT-only mode, ipnet without node IP or without VXLAN BVI,
//	    its zone label Z, extra nodes, and runs the startup resync with the given objects.
//	apply OBJECTS.yaml...   one event per object (Service, EndpointSlice or Endpoints), in order;
//	    prints the change descriptions ("change: ...") and staged keys
//	    ("put: KEY" / "delete: KEY", sorted) of each event.
//	delete service|endpointslice|endpoints NAMESPACE/NAME   one delete event, printed like apply.
//	add-pod NAME IFNAME     wires a local pod and sends its AddPod event.
//	node-join ID NAME VPPCIDR [MGMTIP]   a node joins (NodeUpdate without previous state).
//	node-touch NAME         a NodeUpdate of NAME that changes nothing.
//	nat [global|dnat [LABEL]]   prints the committed NAT44 configuration.
//	routes                  prints the committed routes (reject and drop routes of
//	    services), one per line: "vrf N DST TYPE", sorted.
//	trace tcp|udp SRC:PORT DST:PORT INIF   prints where the packet goes, one line per
//	    backend ("SRC -> DST vrf N", sorted) or "untranslated: WHY".
//	snat SRCIP OUTIF        prints the source a packet from SRCIP leaving OUTIF gets.
//	reach SRC:PORT DST:PORT/tcp|udp [INIF]   renderer-neutral: prints "backend IP:PORT"
//	    for each backend a new flow entering on INIF (default GbE) may reach, sorted,
//	    or refused, dropped or "not a service" (env.reach); with VPP the simulator's
//	    NAT44 mappings or cnat translations must hold the same backends.
//	resync                  a full resync of the objects applied so far (and not
//	    deleted) must leave the committed configuration as it is.
//	fresh                   a fresh node started with the same options, the current
//	    nodes and those objects must hold the same configuration.
//	vpp nat                 prints the simulator's NAT44 state (canonical order,
//	    interfaces by tag).
//	vpp translate tcp|udp SRC:PORT DST:PORT   prints the simulator's translations.
//	vpp features IFNAME     prints the NAT features of the interface in VPP.
//	vpp reset-counts        zeroes the simulator's message counters.
//	vpp count SUBSTRING     prints the number of requests whose name contains it.
//	vpp state KEY           prints the scheduler's state of the key.

// scenarioDir holds the scenario files.
const scenarioDir = "../../testdata/scenarios"

// scenarioFailProbability is the share of failing VPP requests of the vpp-faults run.
const scenarioFailProbability = 0.1

func TestScenarios(t *testing.T) {
	modes := []struct {
		name   string
		vpp    bool
		faults bool
	}{{"staged", false, false}, {"vpp", true, false}, {"vpp-faults", true, true}}
	for _, rndr := range []string{rendererNAT44, rendererCNAT} {
		for _, m := range modes {
			t.Run(rndr+"/"+m.name, func(t *testing.T) {
				var failures atomic.Int64 // random VPP failures over all scenarios
				t.Cleanup(func() {
					if m.faults {
						t.Logf("%d VPP requests failed at random", failures.Load())
						if failures.Load() == 0 {
							t.Error("no VPP request failed: the faults run tested nothing")
						}
					}
				})
				testscript.Run(t, testscript.Params{
					Dir:           scenarioDir,
					UpdateScripts: os.Getenv("UPDATE_SCENARIOS") == "1" && m.name == "vpp" && rndr == rendererNAT44,
					Setup: func(e *testscript.Env) error {
						e.Values[scriptKey{}] = &scriptState{vpp: m.vpp, faults: m.faults, failures: &failures, cnat: rndr == rendererCNAT}
						return nil
					},
					Condition: func(cond string) (bool, error) {
						switch cond {
						case "vpp":
							return m.vpp, nil
						case "faults":
							return m.faults, nil
						case rendererNAT44, rendererCNAT:
							return cond == rndr, nil
						}
						return false, fmt.Errorf("unknown condition %q (want vpp, faults, nat44 or cnat)", cond)
					},
					Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
						"start":      cmdStart,
						"apply":      cmdApply,
						"delete":     cmdDelete,
						"add-pod":    cmdAddPod,
						"node-join":  cmdNodeJoin,
						"node-touch": cmdNodeTouch,
						"nat":        cmdNAT,
						"routes":     cmdRoutes,
						"trace":      cmdTrace,
						"reach":      cmdReach,
						"snat":       cmdSNAT,
						"resync":     cmdResync,
						"fresh":      cmdFresh,
						"vpp":        cmdVPP,
					},
				})
			})
		}
	}
}

// The renderers the scenarios run with (and their conditions).
const (
	rendererNAT44 = "nat44"
	rendererCNAT  = "cnat"
)

type scriptKey struct{}

// scriptState is one scenario run.
type scriptState struct {
	vpp, faults bool
	cnat        bool // the cnat renderer serves IPv4 (serviceRenderer cnat)
	failures    *atomic.Int64
	opts        envOptions
	extraNodes  []string // -node values of start
	e           *env
	kube        controller.KubeStateData // objects applied and not deleted
}

// state returns the scenario's state; with needEnv, start must have run.
func state(ts *testscript.TestScript, neg bool, needEnv bool) *scriptState {
	if neg {
		ts.Fatalf("negation is not supported")
	}
	ts.Stdout() // every command sets stdout, also to nothing
	s := ts.Value(scriptKey{}).(*scriptState)
	if needEnv && s.e == nil {
		ts.Fatalf("no node: run start first")
	}
	return s
}

// scriptTB adapts a script to the fixture: every error ends the script.
type scriptTB struct{ ts *testscript.TestScript }

func (s scriptTB) Helper()                      {}
func (s scriptTB) Fatal(args ...any)            { s.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (s scriptTB) Fatalf(f string, args ...any) { s.ts.Fatalf(f, args...) }
func (s scriptTB) Errorf(f string, args ...any) { s.ts.Fatalf(f, args...) }
func (s scriptTB) Cleanup(fn func())            { s.ts.Defer(fn) }

// TempDir returns a new directory in the script's work directory.
func (s scriptTB) TempDir() string {
	d, err := os.MkdirTemp(s.ts.Getenv("WORK"), "n")
	s.ts.Check(err)
	return d
}

// readObjects reads the Kubernetes objects of YAML files of the archive (documents
// separated by "---") and converts them as contiv-ksr does.
func readObjects(ts *testscript.TestScript, files []string) []proto.Message {
	var out []proto.Message
	for _, f := range files {
		data := ts.ReadFile(f)
		for i, doc := range strings.Split(data, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var meta struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				ts.Fatalf("%s document %d: %v", f, i+1, err)
			}
			var obj runtime.Object
			switch meta.Kind {
			case "Service":
				obj = &corev1.Service{}
			case "Endpoints":
				obj = &corev1.Endpoints{}
			case "EndpointSlice":
				obj = &discoveryv1.EndpointSlice{}
			default:
				ts.Fatalf("%s document %d: kind %q: want Service, EndpointSlice or Endpoints", f, i+1, meta.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				ts.Fatalf("%s document %d: %v", f, i+1, err)
			}
			if es, ok := obj.(*discoveryv1.EndpointSlice); ok {
				out = append(out, sliceModel(es))
				continue
			}
			_, v, err := convert.Object(obj)
			if err != nil {
				ts.Fatalf("%s document %d: %v", f, i+1, err)
			}
			if svc, ok := obj.(*corev1.Service); ok {
				addV134Fields(svc, v.(*svcmodel.Service))
			}
			out = append(out, v)
		}
	}
	return out
}

// track records an object in the scenario's Kubernetes state and returns its event.
func (s *scriptState) track(obj proto.Message) controller.Event {
	switch o := obj.(type) {
	case *svcmodel.Service:
		key := svcmodel.Key(o.Name, o.Namespace)
		s.kube[svcmodel.Keyword][key] = o
		return &controller.KubeStateChange{Resource: svcmodel.Keyword, Key: key, NewValue: o}
	case *epmodel.Endpoints:
		key := epmodel.Key(o.Name, o.Namespace)
		s.kube[epmodel.Keyword][key] = o
		return &controller.KubeStateChange{Resource: epmodel.Keyword, Key: key, NewValue: o}
	case *esmodel.EndpointSlice:
		key := esmodel.Key(o.Name, o.Namespace)
		s.kube[esmodel.Keyword][key] = o
		return &controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, NewValue: o}
	}
	panic(fmt.Sprintf("unexpected object %T", obj))
}

func cmdStart(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, false)
	if s.e != nil {
		ts.Fatalf("start: the node is already started")
	}
	fs := flag.NewFlagSet("start", flag.ContinueOnError)
	conf := fs.String("conf", "", "contiv.conf file of the archive")
	svcConf := fs.String("service-conf", "", "service.conf file of the archive")
	snatOnly := fs.Bool("snat-only", false, "renderer in SNAT-only mode")
	noNodeIP := fs.Bool("no-node-ip", false, "ipnet has no node IP")
	noVXLAN := fs.Bool("no-vxlan", false, "ipnet has no VXLAN BVI")
	zone := fs.String("zone", "", "topology.kubernetes.io/zone of this node (master)")
	var nodes []string
	fs.Func("node", "extra node ID,NAME,VPPCIDR[,MGMTIP]", func(v string) error { nodes = append(nodes, v); return nil })
	ts.Check(fs.Parse(args))
	opts := envOptions{vpp: s.vpp, snatOnly: *snatOnly, cnat: s.cnat}
	if s.faults {
		h := fnv.New64a()
		h.Write([]byte(filepath.Base(ts.Getenv("WORK")))) // the script's name
		opts.failProbability, opts.failSeed = scenarioFailProbability, int64(h.Sum64())
	}
	if *conf != "" {
		opts.conf = ts.ReadFile(*conf)
	}
	if *svcConf != "" {
		c := config.DefaultConfig()
		ts.Check(yaml.UnmarshalStrict([]byte(ts.ReadFile(*svcConf)), c))
		ts.Check(c.Validate())
		opts.svcConf = c
	}
	if *noNodeIP || *noVXLAN {
		opts.ipnet = func(e *env) {
			if *noNodeIP {
				e.ipnet.NodeIP, e.ipnet.NodeNet = nil, nil
			}
			if *noVXLAN {
				e.ipnet.VxlanBVI = ""
			}
		}
	}
	s.extraNodes = nodes
	s.kube = controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword, esmodel.Keyword, nodemodel.Keyword)
	if *zone != "" {
		s.kube[nodemodel.Keyword][nodemodel.Key("master")] = &nodemodel.Node{Name: "master", Zone: *zone}
	}
	for _, obj := range readObjects(ts, fs.Args()) {
		s.track(obj)
	}
	s.opts = opts
	s.e = s.newEnv(ts)
}

// newEnv starts a node with the scenario's options, nodes and objects.
func (s *scriptState) newEnv(ts *testscript.TestScript) *env {
	opts := s.opts
	opts.kube = s.kube
	opts.nodes = func(e *env) {
		for _, n := range s.extraNodes {
			f := strings.Split(n, ",")
			if len(f) < 3 {
				ts.Fatalf("-node %q: want ID,NAME,VPPCIDR[,MGMTIP]", n)
			}
			id, err := strconv.ParseUint(f[0], 10, 32)
			ts.Check(err)
			e.nodes.SetNode(uint32(id), f[1], []string{f[2]}, f[3:]...)
		}
	}
	e := newEnv(scriptTB{ts}, opts)
	if e.agent != nil {
		sim := e.agent.vpp.sim
		ts.Defer(func() { s.failures.Add(sim.RandomFailureCount()) }) // runs before the simulator closes
	}
	return e
}

// printEvent prints what one event changed.
func printEvent(ts *testscript.TestScript, changes []string, txn *st.Txn) {
	for _, c := range changes {
		fmt.Fprintf(ts.Stdout(), "change: %s\n", c)
	}
	for _, k := range txn.Keys() {
		op := "put"
		if txn.Values[k] == nil {
			op = "delete"
		}
		fmt.Fprintf(ts.Stdout(), "%s: %s\n", op, k)
	}
}

func cmdApply(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) == 0 {
		ts.Fatalf("usage: apply OBJECTS.yaml...")
	}
	for _, obj := range readObjects(ts, args) {
		changes, txn := s.e.update(s.track(obj))
		printEvent(ts, changes, txn)
	}
}

func cmdDelete(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 2 {
		ts.Fatalf("usage: delete service|endpointslice|endpoints NAMESPACE/NAME")
	}
	ns, name, ok := strings.Cut(args[1], "/")
	if !ok {
		ts.Fatalf("delete: %q is not NAMESPACE/NAME", args[1])
	}
	var changes []string
	var txn *st.Txn
	switch args[0] {
	case "service":
		delete(s.kube[svcmodel.Keyword], svcmodel.Key(name, ns))
		changes, txn = s.e.deleteService(ns, name)
	case "endpoints":
		delete(s.kube[epmodel.Keyword], epmodel.Key(name, ns))
		changes, txn = s.e.deleteEndpoints(ns, name)
	case "endpointslice":
		key := esmodel.Key(name, ns)
		delete(s.kube[esmodel.Keyword], key)
		changes, txn = s.e.update(&controller.KubeStateChange{Resource: esmodel.Keyword, Key: key, PrevValue: &esmodel.EndpointSlice{}})
	default:
		ts.Fatalf("delete: kind %q: want service, endpointslice or endpoints", args[0])
	}
	printEvent(ts, changes, txn)
}

func cmdAddPod(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 2 {
		ts.Fatalf("usage: add-pod NAME IFNAME")
	}
	changes, txn := s.e.addPod(args[0], args[1])
	printEvent(ts, changes, txn)
}

func cmdNodeJoin(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) < 3 {
		ts.Fatalf("usage: node-join ID NAME VPPCIDR [MGMTIP]")
	}
	id, err := strconv.ParseUint(args[0], 10, 32)
	ts.Check(err)
	s.e.nodes.SetNode(uint32(id), args[1], []string{args[2]}, args[3:]...)
	s.extraNodes = append(s.extraNodes, strings.Join(args, ","))
	changes, txn := s.e.nodeUpdate(args[1], nil, s.e.nodes.Nodes[args[1]])
	printEvent(ts, changes, txn)
}

func cmdNodeTouch(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 1 {
		ts.Fatalf("usage: node-touch NAME")
	}
	n := s.e.nodes.Nodes[args[0]]
	if n == nil {
		ts.Fatalf("node-touch: no node %q", args[0])
	}
	changes, txn := s.e.nodeUpdate(args[0], n, n)
	printEvent(ts, changes, txn)
}

func cmdNAT(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	nat := s.e.nat()
	what := "all"
	if len(args) > 0 {
		what = args[0]
	}
	switch {
	case what == "all" && len(args) <= 1:
		ts.Stdout().Write([]byte(formatGlobal(nat.Global) + formatDNATs(nat.DNATs, "")))
	case what == "global" && len(args) == 1:
		ts.Stdout().Write([]byte(formatGlobal(nat.Global)))
	case what == "dnat" && len(args) <= 2:
		label := ""
		if len(args) == 2 {
			label = args[1]
			if nat.DNATs[label] == nil {
				ts.Fatalf("nat dnat: no DNAT %q", label)
			}
		}
		ts.Stdout().Write([]byte(formatDNATs(nat.DNATs, label)))
	default:
		ts.Fatalf("usage: nat [global|dnat [LABEL]]")
	}
}

func cmdRoutes(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 0 {
		ts.Fatalf("usage: routes")
	}
	var lines []string
	for _, v := range s.e.dp.KVs {
		if r, ok := v.(*l3.Route); ok {
			lines = append(lines, fmt.Sprintf("vrf %d %s %s", r.GetVrfId(), r.GetDstNetwork(), r.GetType()))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(ts.Stdout(), l)
	}
}

// protocol parses "tcp" or "udp".
func protocol(ts *testscript.TestScript, s string) vpp_nat.DNat44_Protocol {
	switch s {
	case "tcp":
		return tcp
	case "udp":
		return udp
	}
	ts.Fatalf("protocol %q: want tcp or udp", s)
	return 0
}

func cmdTrace(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 4 {
		ts.Fatalf("usage: trace tcp|udp SRC:PORT DST:PORT INIF")
	}
	for _, a := range args[1:3] {
		if _, err := netip.ParseAddrPort(a); err != nil {
			ts.Fatalf("trace: %v", err)
		}
	}
	outcomes, why := s.e.trace(protocol(ts, args[0]), args[1], args[2], args[3])
	if why != "" {
		fmt.Fprintf(ts.Stdout(), "untranslated: %s\n", why)
		return
	}
	lines := make([]string, len(outcomes))
	for i, o := range outcomes {
		lines[i] = o.String()
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(ts.Stdout(), l)
	}
}

func cmdReach(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	proto, src, dst, inIf, err := parseReach(args)
	ts.Check(err)
	for _, l := range s.e.reach(proto, src, dst, inIf) {
		fmt.Fprintln(ts.Stdout(), l)
	}
}

func cmdSNAT(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 2 {
		ts.Fatalf("usage: snat SRCIP OUTIF")
	}
	src, err := netip.ParseAddr(args[0])
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), s.e.nat().SNAT(src, args[1]))
}

func cmdResync(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 0 {
		ts.Fatalf("usage: resync")
	}
	before := s.e.dp.KVs
	s.e.resync(s.kube)
	if diff := diffKVs(before, s.e.dp.KVs); diff != "" {
		ts.Fatalf("the resync changed the configuration (- before, + after):\n%s", diff)
	}
}

func cmdFresh(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	if len(args) != 0 {
		ts.Fatalf("usage: fresh")
	}
	fresh := s.newEnv(ts)
	if diff := diffKVs(s.e.dp.KVs, fresh.dp.KVs); diff != "" {
		ts.Fatalf("a fresh node holds another configuration (- this node, + fresh):\n%s", diff)
	}
}

// diffKVs returns the diffs of the keys whose values differ.
func diffKVs(a, b map[string]proto.Message) string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		if diff := st.ProtoDiff(a[k], b[k]); diff != "" {
			fmt.Fprintf(&out, "%s:\n%s", k, diff)
		}
	}
	return out.String()
}

func cmdVPP(ts *testscript.TestScript, neg bool, args []string) {
	s := state(ts, neg, true)
	a := s.e.agent
	if a == nil {
		ts.Fatalf("vpp: this run has no VPP (guard the line with [vpp])")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: vpp nat|translate|features|reset-counts|count|state ...")
	}
	switch sub, rest := args[0], args[1:]; {
	case sub == "nat" && len(rest) == 0:
		ts.Stdout().Write([]byte(formatVPPNAT(a.vpp.sim)))
	case sub == "translate" && len(rest) == 3:
		ipProto := uint8(6)
		if protocol(ts, rest[0]) == udp {
			ipProto = 17
		}
		for _, l := range a.translate(ipProto, rest[1], rest[2]) {
			fmt.Fprintln(ts.Stdout(), l)
		}
	case sub == "features" && len(rest) == 1:
		fmt.Fprintln(ts.Stdout(), vppFeatures(ts, a.vpp.sim, rest[0]))
	case sub == "reset-counts" && len(rest) == 0:
		a.vpp.sim.ResetMessageCounts()
	case sub == "count" && len(rest) == 1:
		var n int64
		for name, c := range a.vpp.sim.MessageCounts() {
			if strings.Contains(name, rest[0]) {
				n += c
			}
		}
		fmt.Fprintln(ts.Stdout(), n)
	case sub == "state" && len(rest) == 1:
		fmt.Fprintln(ts.Stdout(), a.s.GetValueStatus(rest[0]).State)
	default:
		ts.Fatalf("vpp %s: unknown subcommand or wrong arguments", strings.Join(args, " "))
	}
}

// vppFeatures returns the NAT features of the interface tagged name in VPP.
func vppFeatures(ts *testscript.TestScript, sim *vppsim.Sim, name string) string {
	i, ok := sim.InterfaceByTag(name)
	if !ok {
		ts.Fatalf("vpp features: no interface tagged %q", name)
	}
	var f []string
	for _, n := range sim.NAT().Interfaces {
		if n.SwIfIndex != i.SwIfIndex {
			continue
		}
		if n.Inside {
			f = append(f, "in")
		}
		if n.Outside {
			f = append(f, "out")
		}
		if n.OutputFeature {
			f = append(f, "output")
		}
	}
	if len(f) == 0 {
		return "none"
	}
	return strings.Join(f, " ")
}

// --- dumps ---------------------------------------------------------------------

// formatGlobal prints the global NAT44 configuration, every field, in its order.
func formatGlobal(g *vpp_nat.Nat44Global) string {
	if g == nil {
		return "global: none\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "global forwarding=%v\n", g.GetForwarding())
	for _, a := range g.GetAddressPool() {
		fmt.Fprintf(&b, "  pool %s vrf=%s twice-nat=%v\n", a.GetAddress(), vrfName(a.GetVrfId()), a.GetTwiceNat())
	}
	for _, i := range g.GetNatInterfaces() {
		dir := "out"
		if i.GetIsInside() {
			dir = "in"
		}
		fmt.Fprintf(&b, "  interface %s %s output-feature=%v\n", i.GetName(), dir, i.GetOutputFeature())
	}
	if r := g.GetVirtualReassembly(); r != nil {
		fmt.Fprintf(&b, "  virtual-reassembly timeout=%d max-reassemblies=%d max-fragments=%d drop-fragments=%v\n",
			r.GetTimeout(), r.GetMaxReassemblies(), r.GetMaxFragments(), r.GetDropFragments())
	}
	rest := proto.Clone(g).(*vpp_nat.Nat44Global)
	rest.Forwarding, rest.AddressPool, rest.NatInterfaces, rest.VirtualReassembly = false, nil, nil, nil
	b.WriteString(unprinted(rest))
	return b.String()
}

// formatDNATs prints the DNATs (one label, or all sorted by label), every field.
func formatDNATs(dnats map[string]*vpp_nat.DNat44, label string) string {
	labels := make([]string, 0, len(dnats))
	for l := range dnats {
		if label == "" || l == label {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	var b strings.Builder
	for _, l := range labels {
		d := dnats[l]
		fmt.Fprintf(&b, "dnat %s\n", d.GetLabel())
		for _, m := range d.GetStMappings() {
			fmt.Fprintf(&b, "  %s %s:%d twice-nat=%s", protoName(m.GetProtocol()), m.GetExternalIp(), m.GetExternalPort(), m.GetTwiceNat())
			if m.GetExternalInterface() != "" {
				fmt.Fprintf(&b, " external-interface=%s", m.GetExternalInterface())
			}
			if m.GetTwiceNatPoolIp() != "" {
				fmt.Fprintf(&b, " twice-nat-pool-ip=%s", m.GetTwiceNatPoolIp())
			}
			if m.GetSessionAffinity() != 0 {
				fmt.Fprintf(&b, " affinity=%d", m.GetSessionAffinity())
			}
			b.WriteString("\n")
			for _, li := range m.GetLocalIps() {
				fmt.Fprintf(&b, "    -> %s:%d vrf=%d probability=%d\n", li.GetLocalIp(), li.GetLocalPort(), li.GetVrfId(), li.GetProbability())
			}
		}
		for _, id := range d.GetIdMappings() {
			fmt.Fprintf(&b, "  identity %s %s:%d vrf=%d", protoName(id.GetProtocol()), id.GetIpAddress(), id.GetPort(), id.GetVrfId())
			if id.GetInterface() != "" {
				fmt.Fprintf(&b, " interface=%s", id.GetInterface())
			}
			b.WriteString("\n")
		}
		rest := proto.Clone(d).(*vpp_nat.DNat44)
		rest.Label, rest.StMappings, rest.IdMappings = "", nil, nil
		b.WriteString(unprinted(rest))
	}
	return b.String()
}

// unprinted shows the fields a format does not know yet, so a new model field
// never goes unchecked.
func unprinted(rest proto.Message) string {
	if proto.Size(rest) == 0 {
		return ""
	}
	return "  unprinted fields: " + strings.ReplaceAll(fmt.Sprint(rest), "  ", " ") + "\n"
}

func vrfName(id uint32) string {
	if id == anyVRF {
		return "any"
	}
	return strconv.FormatUint(uint64(id), 10)
}

func protoName(p vpp_nat.DNat44_Protocol) string { return strings.ToLower(p.String()) }

// formatVPPNAT prints the simulator's NAT44 state in a canonical order (sorted
// entries, interfaces by their tag), so it does not depend on the order in which
// the requests came.
func formatVPPNAT(sim *vppsim.Sim) string {
	n := sim.NAT()
	tags := map[uint32]string{}
	for _, i := range sim.Interfaces() {
		tags[i.SwIfIndex] = i.Tag
		if i.Tag == "" {
			tags[i.SwIfIndex] = i.Name
		}
	}
	ipProto := map[uint8]string{0: "any", 6: "tcp", 17: "udp", 1: "icmp"}
	flags := func(f vppsim.MappingFlags) string {
		var out []string
		for _, x := range []struct {
			on   bool
			name string
		}{{f.AddrOnly, "addr-only"}, {f.Out2InOnly, "out2in-only"}, {f.TwiceNAT, "twice-nat"}, {f.SelfTwiceNAT, "self-twice-nat"}} {
			if x.on {
				out = append(out, x.name)
			}
		}
		return strings.Join(out, ",")
	}
	var entries []string
	add := func(format string, args ...any) { entries = append(entries, fmt.Sprintf(format, args...)) }
	for _, a := range n.Addresses {
		add("address %s vrf=%s twice-nat=%v\n", a.Addr, vrfName(a.VRF), a.TwiceNAT)
	}
	for _, i := range n.Interfaces {
		add("interface %s inside=%v outside=%v output-feature=%v\n", tags[i.SwIfIndex], i.Inside, i.Outside, i.OutputFeature)
	}
	for _, m := range n.StaticMappings {
		ext := ""
		if m.ExternalSwIfIndex != vppsim.NoIndex {
			ext = " external-interface=" + tags[m.ExternalSwIfIndex]
		}
		add("static %s %s -> %s vrf=%d flags=%s%s tag=%s\n", ipProto[m.Protocol], m.External, m.Local, m.VRF, flags(m.MappingFlags), ext, m.Tag)
	}
	for _, m := range n.IdentityMappings {
		sw := ""
		if m.SwIfIndex != vppsim.NoIndex {
			sw = " interface=" + tags[m.SwIfIndex]
		}
		add("identity %s %s vrfs=%v addr-only=%v%s tag=%s\n", ipProto[m.Protocol], m.Addr, m.VRFs, m.AddrOnly, sw, m.Tag)
	}
	for _, m := range n.LBMappings {
		var b strings.Builder
		fmt.Fprintf(&b, "lb %s %s affinity=%d flags=%s tag=%s\n", ipProto[m.Protocol], m.External, m.Affinity, flags(m.MappingFlags), m.Tag)
		for _, l := range m.Locals {
			fmt.Fprintf(&b, "  -> %s vrf=%d probability=%d\n", l.Addr, l.VRF, l.Probability)
		}
		entries = append(entries, b.String())
	}
	slices.Sort(entries)
	head := fmt.Sprintf("nat44 enabled=%v forwarding=%v inside-vrf=%d outside-vrf=%d\n", n.Enabled, n.Forwarding, n.InsideVRF, n.OutsideVRF)
	return head + strings.Join(entries, "")
}
