// Command contiv-stn is the host daemon of single-NIC nodes (STN): it takes the node's
// NIC for VPP while VPP's binary API socket answers and gives the NIC and its
// configuration back to the host when it stops answering (pkg/stn.Keeper). It runs on
// the host (hostNetwork, outside the vswitch container), so that a vswitch that dies
// or is removed never leaves the node unreachable; a crash of the daemon itself leaves
// its record file, from which the next start resumes (gives the NIC back at once if
// VPP is not up).
//
// It is a separate daemon rather than a mode of contiv-init because contiv-init dies
// with the vswitch container, and the NIC must be given back exactly then.
//
// Which NIC: -link NAME or -first-nic, or -contiv-config FILE -node-name NODE, with which
// it steals what contiv.conf asks of the node (its nodeConfig stealInterface, else
// stealInterface, else stealFirstNIC) and keeps its record at contiv.conf's
// stnRecordFile, the file the agent reads; a node that steals nothing waits idle (one
// DaemonSet serves a cluster of single- and multi-NIC nodes).
//
// Usage: contiv-stn -link NAME | -first-nic | -contiv-config FILE -node-name NODE [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
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
	fs := flag.NewFlagSet("contiv-stn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	link := fs.String("link", "", "Linux name of the NIC to steal (contiv.conf stealInterface)")
	firstNIC := fs.Bool("first-nic", false, "steal the NIC of the IPv4 default route (contiv.conf stealFirstNIC)")
	contivConfig := fs.String("contiv-config", "", "contiv.conf: steal what it asks of -node-name, record at its stnRecordFile")
	nodeName := fs.String("node-name", "", "this node's name (the nodeConfig entry of -contiv-config)")
	stateFile := fs.String("state-file", contivconf.DefaultSTNRecordFile, "record of the stolen NIC's configuration, kept while the NIC is stolen (default with -contiv-config: its stnRecordFile)")
	vppSocket := fs.String("vpp-socket", "/run/vpp/api.sock", "VPP's binary API socket, probed to tell whether VPP is up")
	interval := fs.Duration("interval", 200*time.Millisecond, "time between two probes of VPP")
	downAfter := fs.Int("down-after", 2, "failed probes in a row after which VPP is down and the NIC is given back")
	netnsPath := fs.String("netns", "", "network namespace (path) of the NIC; default: the daemon's own")
	showVersion := fs.Bool("version", false, "print version and commit, then exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, version.String("contiv-stn"))
		return 0
	}
	logs, err := infra.NewLogRegistry(stderr, infra.LogFormatText)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := logs.Logger("contiv-stn")
	if *contivConfig != "" {
		if *link != "" || *firstNIC {
			fmt.Fprintf(stderr, "contiv-stn: -contiv-config %q excludes -link and -first-nic\n", *contivConfig)
			return 2
		}
		if *nodeName == "" {
			fmt.Fprintf(stderr, "contiv-stn: -contiv-config %q needs -node-name\n", *contivConfig)
			return 2
		}
		var steals bool
		stateSet := false
		fs.Visit(func(f *flag.Flag) { stateSet = stateSet || f.Name == "state-file" })
		*link, *firstNIC, steals, err = fromContivConf(*contivConfig, *nodeName, stateFile, stateSet, log)
		if err != nil {
			fmt.Fprintf(stderr, "contiv-stn: %v\n", err)
			return 2
		}
		if !steals {
			log.WithField("node", *nodeName).Info("contiv.conf steals no NIC of this node: idle")
			<-ctx.Done()
			return 0
		}
	}
	if err := checkFlags(*link, *firstNIC, *interval, *downAfter); err != nil {
		fmt.Fprintf(stderr, "contiv-stn: %v\n", err)
		return 2
	}
	host := stn.Host{Netns: *netnsPath}
	name, err := nicName(host, *link, *stateFile)
	if err != nil {
		fmt.Fprintf(stderr, "contiv-stn: %v\n", err)
		return 1
	}
	log.WithField("link", name).WithField("state-file", *stateFile).Info("watching VPP's API socket ", *vppSocket)
	k := &stn.Keeper{NIC: stn.HostNIC{Host: host, Link: name}, StateFile: *stateFile,
		Probe: stn.SocketProbe(*vppSocket, *interval), Interval: *interval, DownAfter: *downAfter, Log: log}
	if err := k.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "contiv-stn: %v\n", err)
		return 1
	}
	return 0
}

// checkFlags names the flag at fault.
func checkFlags(link string, firstNIC bool, interval time.Duration, downAfter int) error {
	switch {
	case link == "" && !firstNIC:
		return errors.New("-link, -first-nic or -contiv-config is required")
	case link != "" && firstNIC:
		return fmt.Errorf("-link %q and -first-nic exclude each other", link)
	case link != "" && stn.CheckLinkName(link) != nil:
		return fmt.Errorf("-link %q %v", link, stn.CheckLinkName(link))
	case interval <= 0:
		return fmt.Errorf("-interval %v: must be positive", interval)
	case downAfter < 1:
		return fmt.Errorf("-down-after %d: must be at least 1", downAfter)
	}
	return nil
}

// nicName is the NIC to steal: -link, else the link of an existing record (a stolen NIC
// has no default route any more), else the first NIC.
func nicName(host stn.Host, link, stateFile string) (string, error) {
	if link != "" {
		return link, nil
	}
	rec, err := stn.Load(stateFile)
	if err != nil {
		return "", err
	}
	if rec != nil {
		return rec.Link, nil
	}
	name, err := host.FirstNIC()
	if err != nil {
		return "", fmt.Errorf("-first-nic: %w", err)
	}
	return name, nil
}

// fromContivConf reads contiv.conf (validated as the agent validates it) for what the
// node steals and, unless -state-file was given, where the record goes.
func fromContivConf(path, nodeName string, stateFile *string, stateSet bool, log logrus.FieldLogger) (link string, firstNIC, steals bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, false, fmt.Errorf("-contiv-config: %w", err)
	}
	cfg, err := contivconf.Parse(data, false, log)
	if err != nil {
		return "", false, false, fmt.Errorf("-contiv-config %s: %w", path, err)
	}
	if !stateSet {
		*stateFile = cfg.STNRecordFile
	}
	link, firstNIC, steals = cfg.NICToSteal(nodeName)
	return link, firstNIC, steals, nil
}
