// Command contiv-agent is the Contiv-VPP control plane that runs on every node beside
// VPP, in the contiv-vswitch DaemonSet. This file is only flags and start-up; cells.go
// lists the cells the agent is made of, each declared in its plugin's package, from
// which infra.Assemble derives every order.
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
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
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

// options are the command line's flags.
type options struct {
	showVersion, strict, standalone, standaloneVPP, standaloneLinux, demoPods                  bool
	logFormat, logLevel, nodeName, standaloneDir, standaloneEtcd, clusterFile, demoNetnsPrefix string
	files                                                                                      configFiles
	// nodeIDFile is where nodesync keeps the node ID (-node-id-file).
	nodeIDFile string
}

func defineFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.BoolVar(&o.showVersion, "version", false, "print version and commit, then exit")
	fs.StringVar(&o.logFormat, "log-format", infra.LogFormatText, "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "", "default log level (overrides default-level of logs.conf)")
	fs.BoolVar(&o.strict, "strict-config", false, "fail on unknown keys in configuration files instead of warning")
	fs.StringVar(&o.nodeName, "node-name", "", "this node's name (default: $"+nodeNameEnv+", else the host name)")
	fs.BoolVar(&o.standalone, "standalone", false, "run with an embedded etcd on loopback instead of the cluster's (demo, development)")
	fs.StringVar(&o.standaloneDir, "standalone-dir", ".run/standalone", "data directory of the standalone mode (kept across runs)")
	fs.StringVar(&o.standaloneEtcd, "standalone-etcd", "127.0.0.1:0", "loopback host:port of the embedded etcd in standalone mode")
	fs.BoolVar(&o.standaloneVPP, "standalone-vpp", true, "standalone: run the VPP simulator in the agent (false: connect to the VPP of govpp.conf)")
	fs.BoolVar(&o.standaloneLinux, "standalone-linux", os.Geteuid() == 0, "standalone: the simulator creates the Linux side of TAPs, as VPP does (root; changes the host's network like a real node)")
	fs.StringVar(&o.clusterFile, "cluster", "", "standalone: YAML file of Kubernetes objects loaded into the embedded etcd and watched for changes")
	fs.BoolVar(&o.demoPods, "standalone-demo-pods", false, "standalone: create the cluster file's pods of this node as network namespaces wired through CNI, answering on their ports (root and -standalone-linux; ignored otherwise)")
	fs.StringVar(&o.demoNetnsPrefix, "standalone-demo-netns-prefix", standalone.DefaultDemoNetnsPrefix, "standalone: prefix of the demo pods' network namespace names (<prefix><namespace>-<name>)")
	fs.StringVar(&o.nodeIDFile, nodeIDFileFlag, nodesync.DefaultIDFile, "file keeping this node's ID across restarts (absolute; empty: none, etcd only; not with -standalone, which keeps it in -standalone-dir)")
	o.files = registerConfigFiles(fs)
	return o
}

// nodeIDFileFlag names the flag of the node ID file.
const nodeIDFileFlag = "node-id-file"

// checkNodeIDFile refuses a node ID file that nodesync cannot use, and one set with
// -standalone (whose node ID file lies in -standalone-dir).
func checkNodeIDFile(fs *flag.FlagSet, o *options) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == nodeIDFileFlag })
	if set && o.standalone {
		return fmt.Errorf("-%s %q: not used with -standalone, which keeps the node ID in -standalone-dir", nodeIDFileFlag, o.nodeIDFile)
	}
	if err := nodesync.ValidateIDFile(o.nodeIDFile); err != nil {
		return fmt.Errorf("-%s: %w", nodeIDFileFlag, err)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := defineFlags(fs)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.clusterFile != "" && !o.standalone {
		fmt.Fprintln(stderr, "contiv-agent: -cluster needs -standalone (a real cluster comes through contiv-ksr)")
		return 2
	}
	if err := checkNodeIDFile(fs, o); err != nil {
		fmt.Fprintf(stderr, "contiv-agent: %v\n", err)
		return 2
	}
	if o.showVersion {
		fmt.Fprintln(stdout, version.String("contiv-agent"))
		return 0
	}
	logs, err := infra.NewLogRegistry(stderr, o.logFormat)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-agent: -log-format: %v\n", err)
		return 2
	}
	log := logs.Logger("agent")
	if err := setUpLogs(logs, o); err != nil {
		return fail(log, stderr, err)
	}
	node, err := resolveNodeName(o.nodeName)
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
	cells, err := composeCells(o, node, logs, healthReg, metrics)
	if err != nil {
		return fail(log, stderr, err)
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

// setUpLogs makes the configuration files strict or not and applies logs.conf and
// -log-level.
func setUpLogs(logs *infra.LogRegistry, o *options) error {
	for _, c := range o.files.all() {
		c.Strict = o.strict
		c.Log = logs.Logger("config")
	}
	var logsConf infra.LogsConfig
	if _, err := o.files.logs.LoadConfig(&logsConf); err != nil {
		return err
	}
	if err := logs.Apply(logsConf); err != nil {
		return fmt.Errorf("logs config: %w", err)
	}
	if o.logLevel != "" {
		if err := logs.SetDefaultLevel(o.logLevel); err != nil {
			return fmt.Errorf("-log-level: %w", err)
		}
	}
	return nil
}

// composeCells returns the agent's cells, with the standalone environment's in
// standalone mode.
func composeCells(o *options, node string, logs *infra.LogRegistry, h *health.Registry, m *prometheus.Registry) ([]infra.Cell, error) {
	cells := agentCells(node, logs, h, m, o.files, o.nodeIDFile)
	if !o.standalone {
		return cells, nil
	}
	dir, err := filepath.Abs(o.standaloneDir)
	if err != nil {
		return nil, fmt.Errorf("-standalone-dir: %w", err)
	}
	opts := standalone.Options{Dir: dir, EtcdAddr: o.standaloneEtcd, ClusterFile: o.clusterFile,
		VPP: o.standaloneVPP, VPPLinux: o.standaloneLinux}
	cells[0] = basicsCell(node, logs, h, m, o.files, "", standalone.ProvidedConfigs(opts)...)
	cells = slices.Insert(cells, 2, standalone.Cell(opts)) // after rest, as a tie-break: before contivconf
	if o.clusterFile != "" && o.demoPods && o.standaloneLinux && o.standaloneVPP {
		cells = append(cells, standalone.DemoPodsCell(opts, o.demoNetnsPrefix))
	}
	return cells, nil
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
