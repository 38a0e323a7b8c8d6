package statscollector

import (
	"sync/atomic"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// Cell declares the collector: the stats socket is govpp.conf's stats-socket-path (as
// govppmux reads binapi-socket-path from the same file), interfaces and ACLs come from
// the scheduler's metadata maps, pods from ipnet and node names from nodesync. The
// collector is registered with the agent's Prometheus registry (GET /metrics). The
// owners of the policy ACLs' rules come from the policy plugin (policy.RuleOwnersKey),
// so the collector starts after it.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "statscollector",
		Needs: []string{infra.LogsKey.String(), govppmux.Key.String(), kvapi.SchedulerKey.String(),
			ipnet.Key.String(), nodesync.Key.String(), health.MetricsKey.String(), policy.RuleOwnersKey.String()},
		// The DB watcher, which feeds the event loop, starts last; the collector only
		// reads (at scrapes) and may start before it.
		Before: []string{"dbwatcher"},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			sch := infra.Get(s, kvapi.SchedulerKey)
			gm := infra.Get(s, govppmux.Key)
			p := NewPlugin(Deps{
				Log:         infra.Get(s, infra.LogsKey).Logger("statscollector"),
				Interfaces:  &lazyMap{sch: sch, name: ifaceidx.DescriptorName},
				ACLs:        &lazyMap{sch: sch, name: aclplugin.ACLDescriptorName},
				Pods:        infra.Get(s, ipnet.Key),
				Nodes:       infra.Get(s, nodesync.Key),
				PolicyRules: infra.Get(s, policy.RuleOwnersKey),
				Registerer:  infra.Get(s, health.MetricsKey),
			})
			return &configuredPlugin{Plugin: p, socket: func() string { return gm.Config().StatsSocketPath }}, nil
		},
	}
}

// configuredPlugin takes the stats socket from govpp.conf at Init: govppmux loads
// the file in its own Init, which runs before this one (the cell needs govppmux)
// but after the cells are built, so the path is not known at Build.
type configuredPlugin struct {
	*Plugin
	socket func() string
}

// Init sets Deps.StatsSocketPath from govpp.conf and initialises the collector.
func (c *configuredPlugin) Init() error {
	c.StatsSocketPath = c.socket()
	return c.Plugin.Init()
}

// lazyMap is a descriptor's metadata map, looked up at its first use (the descriptor
// may register after this cell is built) and then kept.
type lazyMap struct {
	sch  kvapi.KVScheduler
	name string
	m    atomic.Pointer[kvapi.MetadataMap]
}

func (l *lazyMap) get() kvapi.MetadataMap {
	if m := l.m.Load(); m != nil {
		return *m
	}
	m := l.sch.GetMetadataMap(l.name)
	if m != nil {
		l.m.Store(&m)
	}
	return m
}

// GetValue implements kvapi.MetadataMap.
func (l *lazyMap) GetValue(label string) (kvapi.Metadata, bool) {
	if m := l.get(); m != nil {
		return m.GetValue(label)
	}
	return nil, false
}

// ListAllNames implements kvapi.MetadataMap.
func (l *lazyMap) ListAllNames() []string {
	if m := l.get(); m != nil {
		return m.ListAllNames()
	}
	return nil
}
