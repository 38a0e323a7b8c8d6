package ipnet

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	vppifplugin "github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin"
)

// Key is ipnet: the pod, host and node connectivity.
var Key = infra.NewKey[*IPNet]("ipnet")

// Cell declares ipnet, an event handler; GET /contiv/v1/ipam is public. It provides
// the pod manager's wiring check for CNI CHECK.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "ipnet",
		Needs: []string{infra.LogsKey.String(), infra.NodeNameKey.String(), contivconf.Key.String(), ipam.Key.String(),
			nodesync.Key.String(), podmanager.Key.String(), vppifplugin.Key.String(), infra.PublicHTTPKey.String(),
			kvapi.SchedulerKey.String()},
		Holds:       []string{api.EventLoopKey.String()},
		Provides:    []string{Key.String(), podmanager.PodWiringCheckKey.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			sch := infra.Get(s, kvapi.SchedulerKey)
			n := NewPlugin(Deps{
				Log:          infra.Get(s, infra.LogsKey).Logger("ipnet"),
				NodeName:     infra.Get(s, infra.NodeNameKey),
				EventLoop:    infra.Get(s, api.EventLoopKey),
				ContivConf:   infra.Get(s, contivconf.Key),
				IPAM:         infra.Get(s, ipam.Key),
				NodeSync:     infra.Get(s, nodesync.Key),
				PodManager:   infra.Get(s, podmanager.Key),
				VPPIfPlugin:  infra.Get(s, vppifplugin.Key),
				HTTPHandlers: infra.Get(s, infra.PublicHTTPKey),
				ValueStatus: func(key string) (string, string) {
					st := sch.GetValueStatus(key)
					if st == nil {
						return kvapi.StateNonexistent.String(), ""
					}
					return st.State.String(), st.Error
				},
			})
			infra.Provide(s, Key, n)
			infra.Provide(s, podmanager.PodWiringCheckKey, n.CheckPodWiring)
			infra.Contribute(s, api.EventHandlers, api.EventHandler(n))
			return n, nil
		},
	}
}
