package main

import (
	"errors"
	"net"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	ctlapi "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
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

// resyncOnVPPReconnect is govppmux's OnReconnect: a reconnected VPP may have
// restarted with an empty configuration, so the controller runs a healing (full)
// resync.
func resyncOnVPPReconnect(loop ctlapi.EventLoop) func() error {
	return func() error {
		return loop.PushEvent(&ctlapi.HealingResync{Type: ctlapi.AfterError,
			Error: errors.New("VPP reconnected: its configuration may have been lost")})
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

// localPodIPs presents the pod manager's records to IPAM.
func localPodIPs(pm *podmanager.Plugin) func() map[ipam.PodID]net.IP {
	return func() map[ipam.PodID]net.IP {
		pods := pm.GetLocalPods()
		out := make(map[ipam.PodID]net.IP, len(pods))
		for id, lp := range pods {
			out[id] = lp.IPAddress
		}
		return out
	}
}

// valueStatus presents the scheduler's value states to ipnet (for CNI CHECK).
func valueStatus(s kvapi.KVScheduler) func(key string) (string, string) {
	return func(key string) (string, string) {
		st := s.GetValueStatus(key)
		if st == nil {
			return kvapi.StateNonexistent.String(), ""
		}
		return st.State.String(), st.Error
	}
}
