// Command contiv-ksr is the Kubernetes State Reflector: it mirrors Pods, Services,
// EndpointSlices, ServiceCIDRs, Nodes, Namespaces and NetworkPolicies into etcd under
// /vnf-agent/contiv-ksr/ for the contiv-agents (plugins/ksr), and, unless
// -legacy-endpoints=false, the legacy Endpoints value of every service for agents of
// the previous release. Several replicas may run;
// one is elected through etcd and writes. It serves /liveness, /readiness and /metrics
// on :9191. This file is only flags and wiring.
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
	"github.com/contiv-vpp/contiv-vpp/pkg/version/buildinfo"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// identityEnv names this replica in the leader election (the pod name through the
// downward API); the host name and PID are used when it is not set.
const identityEnv = "POD_NAME"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-ksr", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print version and commit, then exit")
	logFormat := fs.String("log-format", infra.LogFormatText, "log format: text or json")
	logLevel := fs.String("log-level", "", "default log level (overrides default-level of logs.conf)")
	strict := fs.Bool("strict-config", false, "fail on unknown keys in configuration files instead of warning")
	kubeConfig := fs.String("kube-config", "", "kubeconfig file (default: the in-cluster service account)")
	electionTTL := fs.Duration("election-ttl", ksr.DefaultElectionTTL, "leader lease: a failed leader is replaced after at most this long")
	serviceCIDRs := fs.String("service-cluster-ip-range", "", "service CIDRs (comma-separated, as kube-apiserver's flag): Services with a cluster IP outside are reflected without it (default: not checked)")
	nodePortRange := fs.String("service-node-port-range", fmt.Sprintf("%d-%d", convert.DefaultNodePortMin, convert.DefaultNodePortMax),
		"node port range (as kube-apiserver's flag): node ports outside are left out of the reflected Services")
	legacyEndpoints := fs.Bool("legacy-endpoints", true,
		"also write the legacy Endpoints value of every service (made of its EndpointSlices) for agents of the previous release; false deletes those values")
	etcdFile := infra.NewConfigFile(fs, "etcd")
	httpFile := infra.NewConfigFile(fs, "http")
	logsFile := infra.NewConfigFile(fs, "logs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("contiv-ksr"))
		return 0
	}

	logs, err := infra.NewLogRegistry(stderr, *logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-ksr: -log-format: %v\n", err)
		return 2
	}
	log := logs.Logger("ksr-main")
	for _, c := range []*infra.ConfigFile{etcdFile, httpFile, logsFile} {
		c.Strict = *strict
		c.Log = logs.Logger("config")
	}
	var logsConf infra.LogsConfig
	if _, err := logsFile.LoadConfig(&logsConf); err != nil {
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
	startupTimeout, err := infra.StartupTimeoutFromEnv()
	if err != nil {
		return fail(log, stderr, err)
	}
	limits := convert.DefaultServiceLimits()
	if limits.NodePortMin, limits.NodePortMax, err = convert.ParseNodePortRange(*nodePortRange); err != nil {
		return fail(log, stderr, fmt.Errorf("-service-node-port-range: %w", err))
	}
	if limits.ServiceCIDRs, err = convert.ParseServiceCIDRs(*serviceCIDRs); err != nil {
		return fail(log, stderr, fmt.Errorf("-service-cluster-ip-range: %w", err))
	}
	log.Info(version.String("contiv-ksr"))

	healthReg := health.NewRegistry()
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(buildinfo.Collector("ksr"))

	// --- the plugins ---------------------------------------------------------------
	restPlugin := rest.NewPlugin(rest.Deps{
		Log:     logs.Logger("rest"),
		Config:  ksr.HTTPConfig(httpFile),
		Health:  healthReg,
		Metrics: metrics,
	})
	logs.RegisterHandlers(restPlugin.Admin())

	reflector := ksr.NewPlugin(ksr.Deps{
		Log:             logs.Logger("ksr"),
		KubeConfig:      *kubeConfig,
		EtcdConfig:      etcdFile,
		Registerer:      metrics,
		Health:          healthReg.Reporter("ksr"),
		Identity:        os.Getenv(identityEnv),
		ElectionTTL:     *electionTTL,
		ServiceLimits:   limits,
		LegacyEndpoints: *legacyEndpoints,
	})

	lifecycle := healthReg.Reporter("lifecycle")
	agent := infra.NewAgent(
		infra.WithLogger(log),
		infra.WithStartupTimeout(startupTimeout),
		infra.WithObserver(func(e infra.LifecycleEvent) { reportLifecycle(lifecycle, e) }),
		infra.WithPlugins(restPlugin, reflector),
	)
	if err := agent.Run(ctx); err != nil {
		return fail(log, stderr, err)
	}
	return 0
}

// reportLifecycle turns the start-up and shutdown phases into health states.
func reportLifecycle(r *health.Reporter, e infra.LifecycleEvent) {
	switch e.Phase {
	case infra.PhaseStarting:
		r.Report(health.Init, "starting")
	case infra.PhaseStarted:
		r.Report(health.OK, "")
	case infra.PhaseFailed:
		r.Report(health.Error, e.Err.Error())
	case infra.PhaseStopping, infra.PhaseStopped:
		r.Report(health.Init, "shutting down")
	}
}

// fail logs err and repeats it on stderr as the last line, so that whoever started
// contiv-ksr sees why it exited.
func fail(log interface{ Error(...any) }, stderr io.Writer, err error) int {
	log.Error(err)
	fmt.Fprintf(stderr, "contiv-ksr: %v\n", err)
	return 1
}
