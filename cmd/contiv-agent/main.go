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
	"path/filepath"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/pkg/version/buildinfo"
	"github.com/contiv-vpp/contiv-vpp/standalone"
)

// nodeNameEnv carries the Kubernetes node name (downward API spec.nodeName); it is also
// the label under which the node's data lives in etcd.
const nodeNameEnv = "MICROSERVICE_LABEL"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// configFiles are the per-plugin configuration files (-<name>-config / <NAME>_CONFIG).
type configFiles struct {
	contiv, http, logs, controller, kvscheduler, etcd, bolt, govpp, podmanager, service *infra.ConfigFile
}

func registerConfigFiles(fs *flag.FlagSet) configFiles {
	return configFiles{
		contiv:      infra.NewConfigFile(fs, "contiv"),
		http:        infra.NewConfigFile(fs, "http"),
		logs:        infra.NewConfigFile(fs, "logs"),
		controller:  infra.NewConfigFile(fs, "controller"),
		kvscheduler: infra.NewConfigFile(fs, "kvscheduler"),
		etcd:        infra.NewConfigFile(fs, "etcd"),
		bolt:        infra.NewConfigFile(fs, "bolt"),
		govpp:       infra.NewConfigFile(fs, "govpp"),
		podmanager:  infra.NewConfigFile(fs, "podmanager"),
		service:     infra.NewConfigFile(fs, "service"),
	}
}

// byName maps each configuration's plugin name to its file (logs excluded: main
// applies it before any cell exists).
func (c configFiles) byName() map[string]*infra.ConfigFile {
	return map[string]*infra.ConfigFile{
		"contiv": c.contiv, "http": c.http, "controller": c.controller, "kvscheduler": c.kvscheduler,
		"etcd": c.etcd, "bolt": c.bolt, "govpp": c.govpp, "podmanager": c.podmanager, "service": c.service,
	}
}

func (c configFiles) all() []*infra.ConfigFile {
	return []*infra.ConfigFile{c.contiv, c.http, c.logs, c.controller, c.kvscheduler, c.etcd, c.bolt, c.govpp, c.podmanager, c.service}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print version and commit, then exit")
	logFormat := fs.String("log-format", infra.LogFormatText, "log format: text or json")
	logLevel := fs.String("log-level", "", "default log level (overrides default-level of logs.conf)")
	strict := fs.Bool("strict-config", false, "fail on unknown keys in configuration files instead of warning")
	nodeName := fs.String("node-name", "", "this node's name (default: $"+nodeNameEnv+", else the host name)")
	standaloneMode := fs.Bool("standalone", false, "run with an embedded etcd on loopback instead of the cluster's (demo, development)")
	standaloneDir := fs.String("standalone-dir", ".run/standalone", "data directory of the standalone mode (kept across runs)")
	standaloneEtcd := fs.String("standalone-etcd", "127.0.0.1:0", "loopback host:port of the embedded etcd in standalone mode")
	standaloneVPP := fs.Bool("standalone-vpp", true, "standalone: run the VPP simulator in the agent (false: connect to the VPP of govpp.conf)")
	standaloneLinux := fs.Bool("standalone-linux", os.Geteuid() == 0, "standalone: the simulator creates the Linux side of TAPs, as VPP does (root; changes the host's network like a real node)")
	clusterFile := fs.String("cluster", "", "standalone: YAML file of Kubernetes objects loaded into the embedded etcd and watched for changes")
	demoPods := fs.Bool("standalone-demo-pods", false, "standalone: create the cluster file's pods of this node as network namespaces wired through CNI, answering on their ports (root and -standalone-linux; ignored otherwise)")
	demoNetnsPrefix := fs.String("standalone-demo-netns-prefix", standalone.DefaultDemoNetnsPrefix, "standalone: prefix of the demo pods' network namespace names (<prefix><namespace>-<name>)")
	files := registerConfigFiles(fs)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *clusterFile != "" && !*standaloneMode {
		fmt.Fprintln(stderr, "contiv-agent: -cluster needs -standalone (a real cluster comes through contiv-ksr)")
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
	for _, c := range files.all() {
		c.Strict = *strict
		c.Log = logs.Logger("config")
	}
	var logsConf infra.LogsConfig
	if _, err := files.logs.LoadConfig(&logsConf); err != nil {
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
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(buildinfo.Collector("agent"))

	cells := agentCells(node, logs, healthReg, metrics, files)
	if *standaloneMode {
		dir, err := filepath.Abs(*standaloneDir)
		if err != nil {
			return fail(log, stderr, fmt.Errorf("-standalone-dir: %w", err))
		}
		opts := standalone.Options{Dir: dir, EtcdAddr: *standaloneEtcd, ClusterFile: *clusterFile,
			VPP: *standaloneVPP, VPPLinux: *standaloneLinux}
		cells = slices.Insert(cells, 2, standalone.Cell(opts)) // after rest, as a tie-break: before contivconf
		if *clusterFile != "" && *demoPods && *standaloneLinux && *standaloneVPP {
			cells = append(cells, standalone.DemoPodsCell(opts, *demoNetnsPrefix))
		}
		cells[0] = basicsCell(node, logs, healthReg, metrics, files, standalone.ProvidedConfigs(opts)...)
	}
	asm, err := infra.Assemble(cells...)
	if err != nil {
		return fail(log, stderr, fmt.Errorf("composing the agent: %w", err))
	}

	agentStatus := healthReg.Reporter("agent")
	agent := infra.NewAgent(
		infra.WithLogger(log),
		infra.WithStartupTimeout(startupTimeout),
		infra.WithObserver(func(e infra.LifecycleEvent) { reportLifecycle(agentStatus, e) }),
		infra.WithPlugins(asm.Plugins...),
	)
	if err := agent.Run(ctx); err != nil {
		return failLogged(stderr, err)
	}
	return 0
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
