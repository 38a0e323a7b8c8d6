package main

import (
	"flag"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
)

// testCells returns the agent's cells as run composes them, standalone (with the
// demo pods) or not.
func testCells(t *testing.T, standaloneMode bool) []infra.Cell {
	t.Helper()
	logs, err := infra.NewLogRegistry(io.Discard, infra.LogFormatText)
	if err != nil {
		t.Fatal(err)
	}
	o := defineFlags(flag.NewFlagSet("test", flag.ContinueOnError))
	o.standalone, o.standaloneDir, o.standaloneVPP, o.standaloneLinux = standaloneMode, t.TempDir(), true, true
	o.clusterFile, o.demoPods = "cluster.yaml", true
	cells, err := composeCells(o, "node-1", logs, health.NewRegistry(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return cells
}

// TestDerivedOrdersAreTheAgentsRules: the orders derived from the cells' declarations
// are the ones the agent's correctness rests on (they were two hand-kept lists in main
// before): contiv.conf before anything that configures, the event handlers in
// dependency order with policy after service, the controller after its handlers (and
// so closed before them), the DB watcher last (closed first), the demo pods between.
func TestDerivedOrdersAreTheAgentsRules(t *testing.T) {
	asm, err := infra.Assemble(testCells(t, true)...)
	if err != nil {
		t.Fatal(err)
	}
	var ctl *controller.Controller
	for _, p := range asm.Plugins {
		if c, ok := p.(*controller.Controller); ok {
			ctl = c
		}
	}
	want := "rest standalone contivconf kvscheduler govppmux vpp-ifplugin vpp-l2plugin vpp-l3plugin vpp-natplugin " +
		"vpp-aclplugin vpp-stnplugin vpp-cnatplugin linux-nsplugin linux-ifplugin linux-l3plugin nodesync podmanager ipam ipnet service policy " +
		"controller statscollector tracer standalone-demo-pods dbwatcher"
	if got := strings.Join(pluginNames(asm), " "); got != want {
		t.Fatalf("plugins start in the order\n%s\nwant\n%s", got, want)
	}
	var handlers []string
	for _, h := range ctl.EventHandlers {
		handlers = append(handlers, h.String())
	}
	if got := strings.Join(handlers, " "); got != "contivconf nodesync podmanager ipam ipnet service policy" {
		t.Fatalf("event handlers in the order %s", got)
	}
	if ctl.DBWatcher == nil {
		t.Fatal("the controller was not connected to the DB watcher")
	}
}

// pluginNames names the assembled plugins by cell (a plugin's String may differ).
func pluginNames(asm *infra.Assembly) []string {
	var out []string
	for _, p := range asm.Plugins {
		out = append(out, cellOf(p))
	}
	return out
}

func cellOf(p infra.Plugin) string {
	name := p.String()
	switch {
	case strings.HasPrefix(name, "standalone") && strings.Contains(strings.ToLower(name), "demo"):
		return "standalone-demo-pods"
	}
	return name
}

// TestWrongDeclarationsStopTheStart: a cell missing, or an order that cannot hold, is
// an error before any plugin starts, naming what is wrong.
func TestWrongDeclarationsStopTheStart(t *testing.T) {
	cells := testCells(t, false)
	var withoutIPNet []infra.Cell
	for _, c := range cells {
		if c.Name != "ipnet" {
			withoutIPNet = append(withoutIPNet, c)
		}
	}
	if _, err := infra.Assemble(withoutIPNet...); err == nil || !strings.Contains(err.Error(), "cell service needs ipnet, which no cell provides") {
		t.Fatalf("without ipnet: %v", err)
	}
	cells = testCells(t, false)
	for i := range cells {
		if cells[i].Name == "contivconf" {
			cells[i].After = []string{"policy"} // policy needs contivconf: a cycle
		}
	}
	if _, err := infra.Assemble(cells...); err == nil || !strings.Contains(err.Error(), "start order cannot hold") ||
		!strings.Contains(err.Error(), "contivconf after policy") {
		t.Fatalf("contivconf after policy: %v", err)
	}
	if _, err := infra.Assemble(testCells(t, false)...); err != nil {
		t.Fatalf("the agent's own cells: %v", err)
	}
}

// TestOrdersHoldWhateverTheListing: the rules come from the declarations, not from the
// listing in agentCells: listed backwards or shuffled, the cells still start in an order
// that keeps every rule, and the event handlers keep their order.
func TestOrdersHoldWhateverTheListing(t *testing.T) {
	for seed := int64(0); seed < 60; seed++ {
		cells := testCells(t, seed%2 == 0)
		if seed < 2 {
			slices.Reverse(cells)
		} else {
			r := rand.New(rand.NewSource(seed))
			r.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
		}
		checkAgentRules(t, cells)
	}
}

func checkAgentRules(t *testing.T, cells []infra.Cell) {
	t.Helper()
	asm, err := infra.Assemble(cells...)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, name := range pluginNames(asm) {
		pos[name] = i
	}
	before := func(a, b string) {
		t.Helper()
		pa, okA := pos[a]
		pb, okB := pos[b]
		if okA && okB && pa >= pb {
			t.Errorf("%s starts at %d, not before %s (%d): %v", a, pos[a], b, pos[b], pluginNames(asm))
		}
	}
	before("contivconf", "kvscheduler") // a bad contiv.conf stops the agent before it configures anything
	before("standalone", "govppmux")    // the simulator's socket
	before("standalone", "dbwatcher")   // the embedded etcd
	for _, h := range []string{"contivconf", "nodesync", "podmanager", "ipam", "ipnet", "service", "policy", "govppmux", "vpp-natplugin"} {
		before(h, "controller") // it runs them: it starts last and stops first
	}
	before("controller", "standalone-demo-pods")
	before("standalone-demo-pods", "dbwatcher")
	if last := pluginNames(asm)[len(asm.Plugins)-1]; last != "dbwatcher" {
		t.Errorf("the DB watcher starts at the end (it feeds the loop), not %s", last)
	}
	var ctl *controller.Controller
	for _, p := range asm.Plugins {
		if c, ok := p.(*controller.Controller); ok {
			ctl = c
		}
	}
	var handlers []string
	for _, h := range ctl.EventHandlers {
		handlers = append(handlers, h.String())
	}
	if got := strings.Join(handlers, " "); got != "contivconf nodesync podmanager ipam ipnet service policy" {
		t.Fatalf("event handlers in the order %s", got)
	}
}
