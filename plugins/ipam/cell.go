package ipam

import (
	"net"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// Key is the IPAM: the address plan and the pod IP allocations.
var Key = infra.NewKey[*Plugin]("ipam")

// Cell declares the IPAM, an event handler; GET /contiv/v1/ipam/allocations is public.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "ipam",
		Needs: []string{infra.LogsKey.String(), infra.NodeNameKey.String(), contivconf.Key.String(),
			nodesync.Key.String(), podmanager.Key.String(), infra.PublicHTTPKey.String()},
		Holds:       []string{api.EventLoopKey.String()},
		Provides:    []string{Key.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{
				Log:         infra.Get(s, infra.LogsKey).Logger("ipam"),
				NodeName:    infra.Get(s, infra.NodeNameKey),
				ContivConf:  infra.Get(s, contivconf.Key),
				NodeSync:    nodeSyncOf(infra.Get(s, nodesync.Key)),
				HTTP:        infra.Get(s, infra.PublicHTTPKey),
				EventLoop:   infra.Get(s, api.EventLoopKey),
				LocalPodIPs: localPodIPsOf(infra.Get(s, podmanager.Key)),
			})
			infra.Provide(s, Key, p)
			infra.Contribute(s, api.EventHandlers, api.EventHandler(p))
			return p, nil
		},
	}
}

// nodeSyncOf presents nodesync to the IPAM.
func nodeSyncOf(ns *nodesync.NodeSync) NodeSync {
	return NodeSyncFuncs{
		NodeID: ns.GetNodeID,
		AllNodes: func() map[string]*NodeInfo {
			nodes := ns.GetAllNodes()
			out := make(map[string]*NodeInfo, len(nodes))
			for name, n := range nodes {
				out[name] = &NodeInfo{ID: n.ID, Name: n.Name, PodCIDR: n.PodCIDR}
			}
			return out
		},
	}
}

// localPodIPsOf presents the pod manager's records to the IPAM: every family the pod
// manager recorded for each pod (LocalPod.IPAddresses, the primary first), so a
// dual-stack pod keeps both addresses across an agent restart.
func localPodIPsOf(pm *podmanager.Plugin) func() map[PodID][]net.IP {
	return func() map[PodID][]net.IP {
		pods := pm.GetLocalPods()
		out := make(map[PodID][]net.IP, len(pods))
		for id, lp := range pods {
			if lp.IPAddress != nil {
				out[id] = lp.IPAddresses
			}
		}
		return out
	}
}
