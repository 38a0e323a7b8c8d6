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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/api/models"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/pkg/version/buildinfo"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipnet"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	linuxifplugin "github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	linuxl3plugin "github.com/contiv-vpp/contiv-vpp/plugins/linux/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	vppifplugin "github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l2plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
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

	// --- the plugins ---------------------------------------------------------------
	restPlugin := rest.NewPlugin(rest.Deps{
		Log:     logs.Logger("rest"),
		Config:  files.http,
		Health:  healthReg,
		Metrics: metrics,
	})
	logs.RegisterHandlers(restPlugin.Admin())

	var standalonePlugin *standalone.Plugin
	nodeIDFile := nodesync.DefaultIDFile
	var etcdConfig, boltConfig, govppConfig, podmanagerConfig infra.ConfigLoader = files.etcd, files.bolt, files.govpp, files.podmanager
	if *standaloneMode {
		dir, err := filepath.Abs(*standaloneDir)
		if err != nil {
			return fail(log, stderr, fmt.Errorf("-standalone-dir: %w", err))
		}
		*standaloneDir = dir
		standalonePlugin = standalone.NewPlugin(standalone.Deps{
			Log:         logs.Logger("standalone"),
			Dir:         *standaloneDir,
			EtcdAddr:    *standaloneEtcd,
			ClusterFile: *clusterFile,
			NoVPP:       !*standaloneVPP,
			VPPLinux:    *standaloneLinux,
			NodeName:    node,
			AgentURL:    restPlugin.ClientURL, // netctl.conf for contiv-netctl
		})
		etcdConfig = standalonePlugin.EtcdConfig()
		if *standaloneVPP {
			govppConfig = infra.StaticConfig{"binapi-socket-path": standalonePlugin.VPPSocketPath()}
		}
		boltConfig = infra.StaticConfig{"db-path": filepath.Join(*standaloneDir, "bolt.db")}
		nodeIDFile = filepath.Join(*standaloneDir, "node-id")
		podmanagerConfig = infra.StaticConfig{
			"socketPath": filepath.Join(*standaloneDir, "cni.sock"),
			"stateFile":  filepath.Join(*standaloneDir, "pods.json"),
		}
	}

	scheduler := &kvscheduler.Scheduler{Deps: kvscheduler.Deps{
		Log:        logs.Logger("kvscheduler"),
		Config:     files.kvscheduler,
		Registerer: metrics,
	}}
	scheduler.RegisterHandlers(restPlugin.Admin())

	ctl := controller.NewController(controller.Deps{
		Log:        logs.Logger("controller"),
		Config:     files.controller,
		Scheduler:  scheduler,
		HTTP:       restPlugin.Admin(), // event history, resync
		Registerer: metrics,
		Health:     healthReg.Reporter("controller"),
	})

	// VPP and Linux: the descriptors behind the scheduler.
	govpp := govppmux.NewPlugin(govppmux.Deps{
		Log:         logs.Logger("govppmux"),
		Config:      govppConfig,
		Health:      healthReg.Reporter("vpp"),
		OnReconnect: resyncOnVPPReconnect(ctl),
	})
	govpp.RegisterHandlers(restPlugin.Admin()) // POST /vpp/command
	vppIf := vppifplugin.NewPlugin(vppifplugin.Deps{Log: logs.Logger("vpp-ifplugin"), Scheduler: scheduler, GoVPP: govpp})
	vppL2 := l2plugin.NewPlugin(l2plugin.Deps{Log: logs.Logger("vpp-l2plugin"), Scheduler: scheduler, GoVPP: govpp})
	vppL3 := &l3plugin.Plugin{Deps: l3plugin.Deps{Log: logs.Logger("vpp-l3plugin"), Scheduler: scheduler, GoVPP: govpp}}
	vppNAT := &natplugin.Plugin{Deps: natplugin.Deps{Log: logs.Logger("vpp-natplugin"), Scheduler: scheduler, GoVPP: govpp}}
	vppACL := &aclplugin.Plugin{Deps: aclplugin.Deps{Log: logs.Logger("vpp-aclplugin"), Scheduler: scheduler, GoVPP: govpp}}
	linuxNs := &nsplugin.Plugin{Deps: nsplugin.Deps{Log: logs.Logger("linux-nsplugin")}}
	linuxIf := &linuxifplugin.Plugin{Deps: linuxifplugin.Deps{Log: logs.Logger("linux-ifplugin"), Scheduler: scheduler, NsPlugin: linuxNs}}
	linuxL3 := &linuxl3plugin.Plugin{Deps: linuxl3plugin.Deps{Log: logs.Logger("linux-l3plugin"), Scheduler: scheduler, NsPlugin: linuxNs}}

	// Contiv: configuration, cluster state and the event handlers.
	contivConf := &contivconf.Plugin{Deps: contivconf.Deps{
		Log:                logs.Logger("contivconf"),
		Config:             files.contiv,
		NodeName:           node,
		DumpDPDKInterfaces: vppIf.DumpDPDKInterfaces,
	}}

	watcher := dbwatcher.NewDBWatcher(dbwatcher.Deps{
		Log:                 logs.Logger("dbwatcher"),
		NodeName:            node,
		EventLoop:           ctl,
		EtcdConfig:          etcdConfig,
		BoltConfig:          boltConfig,
		ExternalConfigCodec: models.UnmarshalConfig,
		Registerer:          metrics,
		StatusReporter:      etcdStatus(healthReg.Reporter("etcd")),
		Timing:              ctl.DBWatcherTiming, // controller.conf, loaded by the controller's Init
	})
	ctl.DBWatcher = watcher

	nodeSync := nodesync.NewNodeSync(nodesync.Deps{
		Log:       logs.Logger("nodesync"),
		NodeName:  node,
		DB:        watcher,
		EventLoop: ctl,
		IDFile:    nodeIDFile,
	})

	podManager := podmanager.NewPlugin(podmanager.Deps{
		Log:        logs.Logger("podmanager"),
		Config:     podmanagerConfig,
		EventLoop:  ctl,
		NodeName:   node,
		NodeSync:   nodeSync,
		Registerer: metrics,
		Status:     healthReg.Reporter("podmanager"),
	})

	ipamPlugin := ipam.NewPlugin(ipam.Deps{
		Log:         logs.Logger("ipam"),
		NodeName:    node,
		ContivConf:  contivConf,
		NodeSync:    ipamNodeSync(nodeSync),
		HTTP:        restPlugin.Public(), // GET /contiv/v1/ipam/allocations
		EventLoop:   ctl,
		LocalPodIPs: localPodIPs(podManager),
	})

	ipNet := ipnet.NewPlugin(ipnet.Deps{
		Log:          logs.Logger("ipnet"),
		NodeName:     node,
		EventLoop:    ctl,
		ContivConf:   contivConf,
		IPAM:         ipamPlugin,
		NodeSync:     nodeSync,
		PodManager:   podManager,
		VPPIfPlugin:  vppIf,
		HTTPHandlers: restPlugin.Public(), // GET /contiv/v1/ipam
		ValueStatus:  valueStatus(scheduler),
	})
	podManager.CheckPodWiring = ipNet.CheckPodWiring // CNI CHECK verifies the wiring

	services := service.NewPlugin(service.Deps{
		Log:        logs.Logger("service"),
		Config:     files.service,
		ContivConf: contivConf,
		NodeSync:   nodeSync,
		PodManager: podManager,
		IPAM:       ipamPlugin,
		IPNet:      ipNet,
		GoVPP:      govpp,
		Registerer: metrics,
	})

	policies := policy.NewPlugin(policy.Deps{
		Log:        logs.Logger("policy"),
		ContivConf: contivConf,
		IPAM:       ipamPlugin,
		IPNet:      ipNet,
		PodManager: podManager,
	})

	// The controller's event handlers, in dependency order (Forward events see them in
	// this order, Reverse events backwards).
	ctl.EventHandlers = []api.EventHandler{
		contivConf,
		nodeSync,
		podManager,
		ipamPlugin,
		ipNet,
		services, // after ipnet: pod interfaces exist before they become frontends
		policies, // after service (upstream's order); polices pods in their AddPod
	}

	plugins := []infra.Plugin{restPlugin}
	if standalonePlugin != nil {
		plugins = append(plugins, standalonePlugin)
	}
	plugins = append(plugins,
		contivConf, // before VPP and Linux: a bad contiv.conf stops the agent before it configures anything
		scheduler,
		govpp,
		vppIf,
		vppL2,
		vppL3,
		vppNAT,
		vppACL,
		linuxNs,
		linuxIf,
		linuxL3,
		nodeSync,
		podManager,
		ipamPlugin,
		ipNet,
		services,
		policies,
		ctl, // the event loop; its queue exists after Init, it runs after AfterInit
	)
	if standalonePlugin != nil && *clusterFile != "" && *demoPods && *standaloneLinux && *standaloneVPP {
		// After the event loop: the pods are added once it runs and deleted before it stops.
		plugins = append(plugins, standalone.NewDemoPods(standalone.DemoPodsDeps{
			Log: logs.Logger("standalone"), ClusterFile: *clusterFile, NodeName: node,
			CNISocket: filepath.Join(*standaloneDir, "cni.sock"), NetnsPrefix: *demoNetnsPrefix,
		}))
	}
	plugins = append(plugins, watcher) // last: it feeds the loop, and is closed first

	agentStatus := healthReg.Reporter("agent")
	agent := infra.NewAgent(
		infra.WithLogger(log),
		infra.WithStartupTimeout(startupTimeout),
		infra.WithObserver(func(e infra.LifecycleEvent) { reportLifecycle(agentStatus, e) }),
		infra.WithPlugins(plugins...),
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
