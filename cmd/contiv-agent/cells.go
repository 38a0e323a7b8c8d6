package main

import (
	"errors"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	ctlapi "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	linuxifplugin "github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	linuxl3plugin "github.com/contiv-vpp/contiv-vpp/plugins/linux/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/statscollector"
	"github.com/contiv-vpp/contiv-vpp/plugins/tracer"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/cnatplugin"
	vppifplugin "github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l2plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/stnplugin"
)

// agentCells are the parts of the agent. Each declares, where it is defined, what it
// needs and provides; infra.Assemble derives from that the order in which they are
// built, started and stopped and the order of the controller's event handlers. The
// listing only breaks ties (kept close to the start order for the reader). The first
// cell is the basics cell; standalone mode replaces it and appends its own cells.
func agentCells(node string, logs *infra.LogRegistry, h *health.Registry, m *prometheus.Registry, files configFiles, idFile string) []infra.Cell {
	return []infra.Cell{
		basicsCell(node, logs, h, m, files, idFile),
		rest.Cell(),
		contivconf.Cell(),
		kvscheduler.Cell(),
		controller.Cell(),
		govppmux.Cell(),
		vppifplugin.Cell(),
		l2plugin.Cell(),
		l3plugin.Cell(),
		natplugin.Cell(),
		aclplugin.Cell(),
		stnplugin.Cell(),
		cnatplugin.Cell(),
		nsplugin.Cell(),
		linuxifplugin.Cell(),
		linuxl3plugin.Cell(),
		dbwatcher.Cell(),
		nodesync.Cell(),
		podmanager.Cell(),
		ipam.Cell(),
		ipnet.Cell(),
		service.Cell(),
		policy.Cell(),
		statscollector.Cell(),
		tracer.Cell(),
		reconnectCell(),
		nicsCell(),
	}
}

// basicsCell provides what main sets up before the cells: the node name, logs, health,
// metrics, the configuration files of -<name>-config, except those named in
// providedElsewhere, and the node ID file idFile (-node-id-file). Standalone mode
// provides its own etcd, bolt, govpp and podmanager configurations and node ID file.
func basicsCell(node string, logs *infra.LogRegistry, h *health.Registry, m *prometheus.Registry, files configFiles, idFile string, providedElsewhere ...string) infra.Cell {
	configs := files.byName()
	provides := []string{infra.NodeNameKey.String(), infra.LogsKey.String(), health.RegistryKey.String(), health.MetricsKey.String()}
	var names []string
	for name := range configs {
		if !slices.Contains(providedElsewhere, name) {
			names = append(names, name)
			provides = append(provides, infra.ConfigKey(name).String())
		}
	}
	standalone := len(providedElsewhere) > 0
	if !standalone {
		provides = append(provides, nodesync.IDFileKey.String())
	}
	return infra.Cell{
		Name:     "basics",
		Provides: provides,
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			infra.Provide(s, infra.NodeNameKey, node)
			infra.Provide(s, infra.LogsKey, logs)
			infra.Provide(s, health.RegistryKey, h)
			infra.Provide(s, health.MetricsKey, m)
			for _, name := range names {
				infra.Provide(s, infra.ConfigKey(name), infra.ConfigLoader(configs[name]))
			}
			if !standalone {
				infra.Provide(s, nodesync.IDFileKey, idFile)
			}
			return nil, nil
		},
	}
}

// The glue cells connect plugins whose packages may not know each other (the layering
// of docs/ARCHITECTURE.md §2).

// reconnectCell: VPP's reconnection asks the controller for a healing resync.
func reconnectCell() infra.Cell {
	return infra.Cell{
		Name:     "glue/vpp-reconnect-resync",
		Holds:    []string{ctlapi.EventLoopKey.String()},
		Provides: []string{govppmux.OnReconnectKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			infra.Provide(s, govppmux.OnReconnectKey, resyncOnVPPReconnect(infra.Get(s, ctlapi.EventLoopKey)))
			return nil, nil
		},
	}
}

// nicsCell: contiv.conf's node resolution asks the VPP interface plugin for the NICs.
func nicsCell() infra.Cell {
	return infra.Cell{
		Name:     "glue/contivconf-nics",
		Holds:    []string{vppifplugin.Key.String()},
		Provides: []string{contivconf.DPDKInterfacesKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			infra.Provide(s, contivconf.DPDKInterfacesKey, infra.Get(s, vppifplugin.Key).DumpDPDKInterfaces)
			return nil, nil
		},
	}
}

// resyncOnVPPReconnect is govppmux's OnReconnect: a reconnected VPP may have
// restarted with an empty configuration, so the controller runs a healing (full)
// resync.
func resyncOnVPPReconnect(loop ctlapi.EventLoop) func() error {
	return func() error {
		return loop.PushEvent(&ctlapi.HealingResync{Type: ctlapi.AfterError,
			Error: errors.New("VPP reconnected: its configuration may have been lost")})
	}
}
