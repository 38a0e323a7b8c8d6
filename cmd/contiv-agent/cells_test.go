package main

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/standalone"
)

// testCells returns the agent's cells as main composes them, standalone or not.
func testCells(t *testing.T, standaloneMode bool) []infra.Cell {
	t.Helper()
	logs, err := infra.NewLogRegistry(io.Discard, infra.LogFormatText)
	if err != nil {
		t.Fatal(err)
	}
	files := registerConfigFiles(flag.NewFlagSet("test", flag.ContinueOnError))
	cells := agentCells("node-1", logs, health.NewRegistry(), prometheus.NewRegistry(), files)
	if standaloneMode {
		opts := standalone.Options{Dir: t.TempDir(), EtcdAddr: "127.0.0.1:0", ClusterFile: "c.yaml", VPP: true}
		cells = slices.Insert(cells, 2, standalone.Cell(opts))
		cells = append(cells, standalone.DemoPodsCell(opts, "demo-"))
		cells[0] = basicsCell("node-1", logs, health.NewRegistry(), prometheus.NewRegistry(), files, standalone.ProvidedConfigs(opts)...)
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
	var started []string
	var ctl *controller.Controller
	for _, p := range asm.Plugins {
		started = append(started, p.String())
		if c, ok := p.(*controller.Controller); ok {
			ctl = c
		}
	}
	want := "rest standalone contivconf kvscheduler govppmux vpp-ifplugin vpp-l2plugin vpp-l3plugin vpp-natplugin " +
		"vpp-aclplugin linux-nsplugin linux-ifplugin linux-l3plugin nodesync podmanager ipam ipnet service policy " +
		"controller standalone-demo-pods dbwatcher"
	if got := strings.Join(asm.StartOrder, " "); !strings.Contains(got, "standalone contivconf") {
		t.Fatalf("start order of the cells: %s", got)
	}
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
