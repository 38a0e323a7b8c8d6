package govppmux

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Key is the VPP connection the VPP plugins open their channels on.
var Key = infra.NewKey[*Plugin]("govpp")

// OnReconnectKey is what the agent does when VPP reconnects (the composition root
// provides it: a full resync through the controller, which this package may not know).
var OnReconnectKey = infra.NewKey[func() error]("govpp/on-reconnect")

// Cell declares the VPP connection; POST /vpp/command is on the admin REST API.
func Cell() infra.Cell {
	return infra.Cell{
		Name:     "govppmux",
		Needs:    []string{infra.LogsKey.String(), infra.ConfigKey("govpp").String(), health.RegistryKey.String(), infra.AdminHTTPKey.String()},
		Holds:    []string{OnReconnectKey.String()},
		Provides: []string{Key.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := NewPlugin(Deps{
				Log:         infra.Get(s, infra.LogsKey).Logger("govppmux"),
				Config:      infra.Get(s, infra.ConfigKey("govpp")),
				Health:      infra.Get(s, health.RegistryKey).Reporter("vpp"),
				OnReconnect: infra.Get(s, OnReconnectKey),
			})
			p.RegisterHandlers(infra.Get(s, infra.AdminHTTPKey))
			infra.Provide(s, Key, p)
			return p, nil
		},
	}
}
