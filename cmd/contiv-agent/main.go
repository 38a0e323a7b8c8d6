// Command contiv-agent is the Contiv-VPP control plane that runs on every node beside
// VPP, in the contiv-vswitch DaemonSet. This file is only flags and wiring: the plugins,
// in start-up order, are the readable list of what the agent is made of.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// nodeNameEnv carries the Kubernetes node name (downward API spec.nodeName); it is also
// the label under which the node's data lives in etcd.
const nodeNameEnv = "MICROSERVICE_LABEL"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print version and commit, then exit")
	logFormat := fs.String("log-format", infra.LogFormatText, "log format: text or json")
	logLevel := fs.String("log-level", "", "default log level (overrides default-level of logs.conf)")
	strict := fs.Bool("strict-config", false, "fail on unknown keys in configuration files instead of warning")
	nodeName := fs.String("node-name", "", "this node's name (default: $"+nodeNameEnv+", else the host name)")
	contivCfg := infra.NewConfigFile(fs, "contiv")
	httpCfg := infra.NewConfigFile(fs, "http")
	logsCfg := infra.NewConfigFile(fs, "logs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("contiv-agent"))
		return 0
	}

	logs, err := infra.NewLogRegistry(stderr, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-agent: -log-format: %v\n", err)
		return 2
	}
	log := logs.Logger("agent")
	for _, c := range []*infra.ConfigFile{contivCfg, httpCfg, logsCfg} {
		c.Strict = *strict
		c.Log = logs.Logger("config")
	}
	var logsConf infra.LogsConfig
	if _, err := logsCfg.LoadConfig(&logsConf); err != nil {
		return fail(log, stderr, err)
	}
	if err := logs.Apply(logsConf); err != nil {
		return fail(log, stderr, fmt.Errorf("logs config: %w", err))
	}
	if *logLevel != "" {
		if err := logs.SetDefaultLevel(*logLevel); err != nil {
			return fail(log, stderr, fmt.Errorf("-log-level: %w", err))
		}
	}
	node, err := resolveNodeName(*nodeName)
	if err != nil {
		return fail(log, stderr, err)
	}
	startupTimeout, err := infra.StartupTimeoutFromEnv()
	if err != nil {
		return fail(log, stderr, err)
	}
	log.WithField("node", node).Info(version.String("contiv-agent"))

	healthReg := health.NewRegistry()
	agentStatus := healthReg.Reporter("agent")
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(version.Collector("agent"))

	// The plugins, in start-up order (closed in reverse).
	restPlugin := rest.NewPlugin(rest.Deps{
		Log:     logs.Logger("rest"),
		Config:  httpCfg,
		Health:  healthReg,
		Metrics: metrics,
	})
	logs.RegisterHandlers(restPlugin)
	contivConf := &contivconf.Plugin{Deps: contivconf.Deps{
		Log:      logs.Logger("contivconf"),
		Config:   contivCfg,
		NodeName: node,
	}}

	agent := infra.NewAgent(
		infra.WithLogger(log),
		infra.WithStartupTimeout(startupTimeout),
		infra.WithObserver(func(e infra.LifecycleEvent) { reportLifecycle(agentStatus, e) }),
		infra.WithPlugins(
			restPlugin,
			contivConf,
		),
	)
	if err := agent.Run(ctx); err != nil {
		return fail(log, stderr, err)
	}
	return 0
}

// reportLifecycle turns agent lifecycle phases into the "agent" health component.
func reportLifecycle(r *health.Reporter, e infra.LifecycleEvent) {
	switch e.Phase {
	case infra.PhaseStarting:
		r.Report(health.Init, "plugins starting")
	case infra.PhaseStarted:
		r.Report(health.OK, "")
	case infra.PhaseFailed:
		r.Report(health.Error, e.Err.Error())
	case infra.PhaseStopping, infra.PhaseStopped:
		r.Report(health.Init, "shutting down")
	}
}

func resolveNodeName(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := os.Getenv(nodeNameEnv); v != "" {
		return v, nil
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "", fmt.Errorf("node name: set -node-name or $%s (host name unavailable: %v)", nodeNameEnv, err)
	}
	return h, nil
}

// fail logs err and repeats it on stderr as the last line, so that whoever started the
// agent (kubelet, contiv-init, a shell) sees why it exited.
func fail(log interface{ Error(...any) }, stderr io.Writer, err error) int {
	log.Error(err)
	fmt.Fprintf(stderr, "contiv-agent: %v\n", err)
	return 1
}
