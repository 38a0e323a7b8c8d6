package rest

import (
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// ClientURLKey is the URL at which local clients reach the REST API (known once the
// plugin has started its listener).
var ClientURLKey = infra.NewKey[func() string]("rest/client-url")

// Cell declares the REST plugin: it serves the probes, the metrics and the handlers the
// other cells register on the admin and public APIs (the log levels among them).
func Cell() infra.Cell {
	return infra.Cell{
		Name:     "rest",
		Needs:    []string{infra.LogsKey.String(), infra.ConfigKey("http").String(), health.RegistryKey.String(), health.MetricsKey.String()},
		Provides: []string{infra.AdminHTTPKey.String(), infra.PublicHTTPKey.String(), ClientURLKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			logs := infra.Get(s, infra.LogsKey)
			p := NewPlugin(Deps{
				Log:     logs.Logger("rest"),
				Config:  infra.Get(s, infra.ConfigKey("http")),
				Health:  infra.Get(s, health.RegistryKey),
				Metrics: infra.Get(s, health.MetricsKey),
			})
			logs.RegisterHandlers(p.Admin())
			infra.Provide(s, infra.AdminHTTPKey, p.Admin())
			infra.Provide(s, infra.PublicHTTPKey, p.Public())
			infra.Provide(s, ClientURLKey, p.ClientURL)
			return p, nil
		},
	}
}
