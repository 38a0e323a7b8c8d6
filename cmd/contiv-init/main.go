// Command contiv-init is the entry point of the contiv-vswitch container: it checks
// contiv.conf, starts VPP, waits for VPP's binary API socket, starts contiv-agent, and
// supervises both: SIGTERM/SIGINT stop both (exit 0); when either exits the other is
// stopped and contiv-init exits non-zero, so the kubelet restarts the container.
//
// Usage: contiv-init [flags] [-- contiv-agent arguments]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/supervisor"
	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contiv-init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vppBin := fs.String("vpp-bin", "/usr/bin/vpp", "VPP binary")
	vppConfig := fs.String("vpp-config", "/etc/vpp/contiv-vswitch.conf", "VPP startup configuration (passed as -c)")
	vppSocket := fs.String("vpp-socket", "/run/vpp/api.sock", "VPP binary API socket to wait for before the agent starts")
	vppTimeout := fs.Duration("vpp-ready-timeout", 60*time.Second, "how long to wait for VPP's API socket")
	agentBin := fs.String("agent-bin", "/usr/bin/contiv-agent", "contiv-agent binary")
	stopTimeout := fs.Duration("stop-timeout", 10*time.Second, "time between SIGTERM and SIGKILL when stopping a process")
	showVersion := fs.Bool("version", false, "print version and commit, then exit")
	contivCfg := infra.NewConfigFile(fs, "contiv")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("contiv-init"))
		return 0
	}
	logs, err := infra.NewLogRegistry(stderr, infra.LogFormatText)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := logs.Logger("contiv-init")
	contivCfg.Log = log

	// A configuration the agent would refuse should not get as far as starting VPP.
	cfg := contivconf.DefaultConfig()
	if _, err := contivCfg.LoadConfig(cfg); err != nil {
		fmt.Fprintf(stderr, "contiv-init: %v\n", err)
		return 1
	}
	if err := cfg.ValidateForNode(nodeNameFor(fs.Args())); err != nil {
		fmt.Fprintf(stderr, "contiv-init: invalid contiv.conf:\n%v\n", err)
		return 1
	}

	group := &supervisor.Group{Log: log, Stdout: stdout, Stderr: stderr, StopTimeout: *stopTimeout}
	err = group.Run(ctx,
		supervisor.Process{
			Name:         "vpp",
			Path:         *vppBin,
			Args:         []string{"-c", *vppConfig},
			Ready:        supervisor.SocketReady(*vppSocket),
			ReadyTimeout: *vppTimeout,
		},
		supervisor.Process{
			Name: "contiv-agent",
			Path: *agentBin,
			Args: fs.Args(),
		},
	)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-init: %v\n", err)
		return 1
	}
	return 0
}

// nodeNameFor returns the node name the agent will use, for the checks of contiv.conf
// that depend on it: the agent's -node-name argument, else $MICROSERVICE_LABEL, else the
// host name (the agent's own order).
func nodeNameFor(agentArgs []string) string {
	for i, a := range agentArgs {
		name := strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(name, "node-name="); ok && a != name {
			return v
		}
		if name == "node-name" && a != name && i+1 < len(agentArgs) {
			return agentArgs[i+1]
		}
	}
	if v := os.Getenv("MICROSERVICE_LABEL"); v != "" {
		return v
	}
	h, _ := os.Hostname()
	return h
}
