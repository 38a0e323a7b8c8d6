package nsplugin

import "github.com/contiv-vpp/contiv-vpp/pkg/infra"

// Key is the namespace plugin, which the Linux descriptors and ipnet open namespaces with.
var Key = infra.NewKey[*Plugin]("linux-nsplugin")

// Cell declares the namespace plugin.
func Cell() infra.Cell {
	return infra.Cell{
		Name:     "linux-nsplugin",
		Needs:    []string{infra.LogsKey.String()},
		Provides: []string{Key.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			p := &Plugin{Deps: Deps{Log: infra.Get(s, infra.LogsKey).Logger("linux-nsplugin")}}
			infra.Provide(s, Key, p)
			return p, nil
		},
	}
}
