// Command vpp-sim serves a simulated VPP binary API on a unix socket, for
// tests and the standalone demo, and forwards packets through the state
// programmed into it; see package pkg/vppsim for what it simulates.
// "-nic NAME" creates a NIC without a wire, "-nic NAME=LINUXIF" binds it to
// a Linux interface of vpp-sim's network namespace (root); "-stats-socket"
// serves the stats segment (default: stats.sock beside -socket) and
// "-stats-per-node-counters" adds the graph nodes' runtime counters to it; "-linux"
// creates the Linux ends of TAPs and moves their frames. It runs until SIGINT or SIGTERM. SIGUSR1 simulates a VPP
// crash and restart (state reset, clients dropped), SIGUSR2 drops all
// client connections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/version"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// listFlag collects a repeatable flag; commas also separate values when
// split is set.
type listFlag struct {
	values []string
	split  bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }

func (l *listFlag) Set(v string) error {
	if !l.split {
		l.values = append(l.values, v)
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			l.values = append(l.values, part)
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vpp-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", vppsim.DefaultSocketPath, "unix socket to serve the VPP binary API on")
	statsSocket := fs.String("stats-socket", "", "unix socket to serve the stats segment on (govpp statsclient, vpp_get_stats); default: stats.sock beside -socket, as VPP's /run/vpp/stats.sock")
	perNode := fs.Bool("stats-per-node-counters", false, "publish the graph nodes' runtime counters in the stats segment (/sys/node/*, /nodes/<node>/*), as VPP's statseg { per-node-counters on }; off by default, as in VPP")
	nics := &listFlag{split: true}
	fs.Var(nics, "nic", "DPDK-like NIC present at start, e.g. GigabitEthernet0/8/0; NAME=LINUXIF binds it to a Linux interface of this namespace through a raw socket (root); repeatable or comma-separated")
	linux := fs.Bool("linux", false, "create the Linux side of TAPs (root only)")
	logLevel := fs.String("log-level", "info", "log level: panic, fatal, error, warn, info, debug, trace")
	fails := &listFlag{}
	fs.Var(fails, "fail", "fail a message: msg=retval[:times] (repeatable; no times = always)")
	delays := &listFlag{}
	fs.Var(delays, "delay", "delay a message: msg=duration (repeatable)")
	showVersion := fs.Bool("version", false, "print version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("vpp-sim"))
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vpp-sim: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	level, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "vpp-sim: -log-level: %v\n", err)
		return 2
	}
	logger := logrus.New()
	logger.SetOutput(stderr)
	logger.SetLevel(level)
	log := logger.WithField("binary", "vpp-sim")

	if *statsSocket == "" {
		*statsSocket = filepath.Join(filepath.Dir(*socket), filepath.Base(vppsim.DefaultStatsSocketPath))
	}
	sim, err := vppsim.New(vppsim.Options{SocketPath: *socket, StatsSocketPath: *statsSocket, StatsPerNodeCounters: *perNode, NICs: nics.values, Linux: *linux, Log: logger})
	if err != nil {
		fmt.Fprintf(stderr, "vpp-sim: %v\n", err)
		return 1
	}
	for _, spec := range fails.values {
		name, rv, times, err := vppsim.ParseFailSpec(spec)
		if err == nil {
			err = sim.FailMessage(name, rv, times)
		}
		if err != nil {
			fmt.Fprintf(stderr, "vpp-sim: -fail: %v\n", err)
			return 2
		}
	}
	for _, spec := range delays.values {
		name, d, err := vppsim.ParseDelaySpec(spec)
		if err == nil {
			err = sim.DelayMessage(name, d)
		}
		if err != nil {
			fmt.Fprintf(stderr, "vpp-sim: -delay: %v\n", err)
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctl := make(chan os.Signal, 1)
	signal.Notify(ctl, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(ctl)

	if err := sim.Start(); err != nil {
		fmt.Fprintf(stderr, "vpp-sim: %v\n", err)
		return 1
	}
	log.WithFields(logrus.Fields{"version": version.String("vpp-sim"), "vpp": vppsim.VPPVersion, "socket": sim.SocketPath(),
		"stats-socket": sim.StatsSocketPath(),
		"nics":         nics.values, "linux": *linux}).Info("started")
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping")
			if err := sim.Close(); err != nil {
				fmt.Fprintf(stderr, "vpp-sim: %v\n", err)
				return 1
			}
			return 0
		case sig := <-ctl:
			if sig == syscall.SIGUSR1 {
				sim.Restart()
			} else {
				sim.DropConnections()
			}
		}
	}
}
