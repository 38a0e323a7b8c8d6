package service

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// Cell declares the service plugin, an event handler. It needs ipnet, so its handler
// runs after ipnet's: pod interfaces exist before they become frontends.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "service",
		Needs: []string{infra.LogsKey.String(), infra.ConfigKey("service").String(), contivconf.Key.String(),
			nodesync.Key.String(), podmanager.Key.String(), ipam.Key.String(), ipnet.Key.String(),
			govppmux.Key.String(), health.MetricsKey.String(), health.RegistryKey.String()},
		Provides:    []string{ifacls.Key.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			lists := ifacls.NewAgentLists() // the uplinks' ACL lists, shared with policy
			infra.Provide(s, ifacls.Key, lists)
			p := NewPlugin(Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("service"),
				Config:     infra.Get(s, infra.ConfigKey("service")),
				ContivConf: infra.Get(s, contivconf.Key),
				NodeSync:   infra.Get(s, nodesync.Key),
				PodManager: infra.Get(s, podmanager.Key),
				IPAM:       infra.Get(s, ipam.Key),
				IPNet:      infra.Get(s, ipnet.Key),
				GoVPP:      infra.Get(s, govppmux.Key),
				Registerer: infra.Get(s, health.MetricsKey),
				Healthy:    agentHealthy(infra.Get(s, health.RegistryKey)),
				ACLLists:   lists,
			})
			infra.Contribute(s, api.EventHandlers, api.EventHandler(p))
			return p, nil
		},
	}
}

// agentHealthy tells whether the agent is healthy as the health check node ports
// report it (kube-proxy's serviceProxyHealthy): alive and past its start, i.e. OK or
// Degraded (a failing value elsewhere is retried; answering 503 for it would drain
// every load balancer from the node).
func agentHealthy(r *health.Registry) func() bool {
	if r == nil {
		return nil
	}
	return func() bool {
		st := r.Status().State
		return st == health.OK || st == health.Degraded
	}
}
