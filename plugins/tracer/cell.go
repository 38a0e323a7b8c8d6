package tracer

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// Cell declares the tracer: VPP's CLI through govppmux, names from the scheduler's
// interface metadata and DNAT44 values, ipnet, podmanager, nodesync and the policy
// plugin's rule owners; probes enter pods' namespaces through nsplugin. Its
// endpoints are on the admin REST API. It only reads the others' state (at a trace)
// and may start before the DB watcher.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "tracer",
		Needs: []string{infra.LogsKey.String(), infra.NodeNameKey.String(), govppmux.Key.String(),
			kvapi.SchedulerKey.String(), ipnet.Key.String(), nodesync.Key.String(), podmanager.Key.String(),
			policy.RuleOwnersKey.String(), nsplugin.Key.String(), infra.AdminHTTPKey.String()},
		Before: []string{"dbwatcher"},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			sch := infra.Get(s, kvapi.SchedulerKey)
			pm := infra.Get(s, podmanager.Key)
			return NewPlugin(Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("tracer"),
				NodeName:   infra.Get(s, infra.NodeNameKey),
				CLI:        infra.Get(s, govppmux.Key).RunCLI,
				Interfaces: func() kvapi.MetadataMap { return sch.GetMetadataMap(ifaceidx.DescriptorName) },
				Pods:       infra.Get(s, ipnet.Key),
				LocalPods:  pm.GetLocalPods,
				Nodes:      infra.Get(s, nodesync.Key),
				Values:     sch.DumpValuesByDescriptor,
				Rules:      infra.Get(s, policy.RuleOwnersKey),
				Namespaces: infra.Get(s, nsplugin.Key),
				Admin:      infra.Get(s, infra.AdminHTTPKey),
			}), nil
		},
	}
}
