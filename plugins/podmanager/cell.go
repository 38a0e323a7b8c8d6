package podmanager

import (
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// Key is the pod manager: the CNI server and the pods of this node.
var Key = infra.NewKey[*Plugin]("podmanager")

// PodWiringCheckKey verifies a pod's network for CNI CHECK (ipnet provides it; the pod
// manager reads it once every cell is built, as ipnet itself needs the pod manager).
var PodWiringCheckKey = infra.NewKey[func(pod podmodel.ID) error]("podmanager/check-pod-wiring")

// Cell declares the pod manager, an event handler.
func Cell() infra.Cell {
	var built *Plugin
	return infra.Cell{
		Name: "podmanager",
		Needs: []string{infra.LogsKey.String(), infra.ConfigKey("podmanager").String(), infra.NodeNameKey.String(),
			nodesync.Key.String(), health.MetricsKey.String(), health.RegistryKey.String()},
		Holds:       []string{api.EventLoopKey.String()},
		Uses:        []string{PodWiringCheckKey.String()},
		Provides:    []string{Key.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("podmanager"),
				Config:     infra.Get(s, infra.ConfigKey("podmanager")),
				EventLoop:  infra.Get(s, api.EventLoopKey),
				NodeName:   infra.Get(s, infra.NodeNameKey),
				NodeSync:   infra.Get(s, nodesync.Key),
				Registerer: infra.Get(s, health.MetricsKey),
				Status:     infra.Get(s, health.RegistryKey).Reporter("podmanager"),
			})
			built = p
			infra.Provide(s, Key, p)
			infra.Contribute(s, api.EventHandlers, api.EventHandler(p))
			return p, nil
		},
		Connect: func(s *infra.Scope) error {
			built.CheckPodWiring = infra.Get(s, PodWiringCheckKey) // CNI CHECK verifies the wiring
			return nil
		},
	}
}
