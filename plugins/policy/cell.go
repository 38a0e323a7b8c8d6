package policy

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// RuleOwnersKey is the owners of the policy ACLs' rules (the statscollector reads it).
var RuleOwnersKey = infra.NewKey[RuleOwners]("policy/rule-owners")

// Cell declares the policy plugin, an event handler. Its handler runs after the service
// plugin's (upstream's order), and after ipnet's: it polices pods in their AddPod.
func Cell() infra.Cell {
	return infra.Cell{
		Name: "policy",
		Needs: []string{infra.LogsKey.String(), contivconf.Key.String(), ipam.Key.String(), ipnet.Key.String(),
			podmanager.Key.String(), ifacls.Key.String()},
		After:       []string{"service"},
		Provides:    []string{RuleOwnersKey.String()},
		Contributes: []string{api.EventHandlers.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{
				Log:        infra.Get(s, infra.LogsKey).Logger("policy"),
				ContivConf: infra.Get(s, contivconf.Key),
				IPAM:       infra.Get(s, ipam.Key),
				IPNet:      infra.Get(s, ipnet.Key),
				PodManager: infra.Get(s, podmanager.Key),
				ACLLists:   infra.Get(s, ifacls.Key),
			})
			infra.Contribute(s, api.EventHandlers, api.EventHandler(p))
			infra.Provide(s, RuleOwnersKey, RuleOwners(p))
			return p, nil
		},
	}
}
