package contivconf

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Key is the resolved contiv.conf of this node.
var Key = infra.NewKey[*Plugin]("contivconf")

// DPDKInterfacesKey lists VPP's DPDK NICs in sw_if_index order (the VPP interface
// plugin's dump; the composition root provides it, as this package knows no VPP plugin).
var DPDKInterfacesKey = infra.NewKey[func() ([]string, error)]("contivconf/dpdk-interfaces")

// Cell declares contiv.conf's plugin, the first event handler (before nodesync, the
// first of the others, as upstream: any handler may read the configuration). It starts
// before the scheduler: a bad contiv.conf stops the agent before it configures anything.
func Cell() infra.Cell {
	return infra.Cell{
		Name:        "contivconf",
		Needs:       []string{infra.LogsKey.String(), infra.ConfigKey("contiv").String(), infra.NodeNameKey.String()},
		Holds:       []string{DPDKInterfacesKey.String()},
		Before:      []string{"kvscheduler", "nodesync"},
		Provides:    []string{Key.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := &Plugin{Deps: Deps{
				Log:                infra.Get(s, infra.LogsKey).Logger("contivconf"),
				Config:             infra.Get(s, infra.ConfigKey("contiv")),
				NodeName:           infra.Get(s, infra.NodeNameKey),
				DumpDPDKInterfaces: infra.Get(s, DPDKInterfacesKey),
				STNSource: func(recordFile string) func(string) (*StolenInterfaceInfo, error) {
					return STNRecordSource{Path: recordFile}.GetSTNInfo
				},
			}}
			infra.Provide(s, Key, p)
			infra.Contribute(s, api.EventHandlers, api.EventHandler(p))
			return p, nil
		},
	}
}
