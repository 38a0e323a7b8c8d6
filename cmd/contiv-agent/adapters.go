package main

import (
	"net"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// Small glue between plugins whose interfaces do not import each other.

// reportLifecycle turns agent lifecycle phases into the "agent" health component.
func reportLifecycle(r *health.Reporter, e infra.LifecycleEvent) {
	switch e.Phase {
	case infra.PhaseStarting:
		r.Report(health.Init, "plugins starting")
	case infra.PhaseStarted:
		r.Report(health.OK, "")
	case infra.PhaseFailed:
		r.Report(health.Error, e.Err.Error())
	case infra.PhaseStopping, infra.PhaseStopped:
		r.Report(health.Init, "shutting down")
	}
}

// etcdStatus reports the etcd connection: while it is down the agent runs from the
// local mirror and is not ready, but alive.
func etcdStatus(r *health.Reporter) func(connected bool, reason string) {
	return func(connected bool, reason string) {
		if connected {
			r.Report(health.OK, "")
			return
		}
		r.Report(health.Init, "etcd not connected: "+reason)
	}
}

// ipamNodeSync presents nodesync to IPAM.
func ipamNodeSync(ns *nodesync.NodeSync) ipam.NodeSync {
	return ipam.NodeSyncFuncs{
		NodeID: ns.GetNodeID,
		AllNodes: func() map[string]*ipam.NodeInfo {
			nodes := ns.GetAllNodes()
			out := make(map[string]*ipam.NodeInfo, len(nodes))
			for name, n := range nodes {
				out[name] = &ipam.NodeInfo{ID: n.ID, Name: n.Name, PodCIDR: n.PodCIDR}
			}
			return out
		},
	}
}

// planNodeIP returns this node's IP: the one configured for its main interface, else the
// one of the address plan (nil while the node has no ID).
func planNodeIP(conf contivconf.API, ip *ipam.Plugin) func() net.IP {
	return func() net.IP {
		if cfgIPs := conf.GetMainInterfaceConfiguredIPs(); len(cfgIPs) > 0 {
			return cfgIPs[0].Address
		}
		id := ip.NodeID()
		if id == 0 {
			return nil
		}
		nodeIP, _, err := ip.NodeIPAddress(id)
		if err != nil {
			return nil
		}
		return nodeIP
	}
}
