package e2e

// The fault simulator of the fault tests: the simulator of vpp-sim (pkg/vppsim) with a
// control socket through which a test injects faults while the agent runs, as a flaky
// VPP would produce them. It is this test binary, executed again with faultsimArg as
// its first argument (so that no package but tests imports the simulator).
//
// Every connection to the control socket (-ctl) sends one command line and reads one
// answer line, "ok [value]" or "error: <why>":
//
//	fail <msg> <retval> <times>   answer <msg> with retval, times times (0: always)
//	restart                       VPP crash and restart (state reset, clients dropped)
//	clear                         remove every injected failure
//	count <msg>                   how many <msg> requests were received
//
// It runs until SIGINT or SIGTERM.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// faultsimArg, as the first argument of the test binary, makes it the fault simulator.
const faultsimArg = "ctv-e2e-faultsim"

// init runs the fault simulator instead of the tests when the binary was started as one
// (before the testing package parses the command line, which it would reject).
func init() {
	if len(os.Args) > 1 && os.Args[1] == faultsimArg {
		if err := runFaultsim(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "faultsim: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runFaultsim serves the simulator and its control socket until SIGINT or SIGTERM.
func runFaultsim(args []string) error {
	fs := flag.NewFlagSet("faultsim", flag.ContinueOnError)
	socket := fs.String("socket", "", "unix socket to serve the VPP binary API on")
	ctlPath := fs.String("ctl", "", "unix socket of the control commands")
	nic := fs.String("nic", "", "NIC present at start (NAME or NAME=LINUXIF)")
	linux := fs.Bool("linux", false, "create the Linux side of TAPs (root only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *socket == "" || *ctlPath == "" {
		return errors.New("-socket and -ctl are required")
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	var nics []string
	if *nic != "" {
		nics = []string{*nic}
	}
	sim, err := vppsim.New(vppsim.Options{SocketPath: *socket, NICs: nics, Linux: *linux, Log: log})
	if err != nil {
		return err
	}
	if err := sim.Start(); err != nil {
		return err
	}
	defer sim.Close()
	_ = os.Remove(*ctlPath)
	ln, err := net.Listen("unix", *ctlPath)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer ln.Close()
	log.WithField("socket", *socket).WithField("ctl", *ctlPath).Info("started")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				log.Info("stopping")
				return nil
			}
			return fmt.Errorf("control socket: %w", err)
		}
		serveFaultCommand(sim, log, c)
	}
}

// serveFaultCommand answers the one command of a control connection.
func serveFaultCommand(sim *vppsim.Sim, log logrus.FieldLogger, c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Fprintf(c, "error: read command: %v\n", err)
		return
	}
	out, err := executeFaultCommand(sim, strings.Fields(line))
	if err != nil {
		log.WithError(err).WithField("command", strings.TrimSpace(line)).Warn("control command failed")
		fmt.Fprintf(c, "error: %v\n", err)
		return
	}
	log.WithField("command", strings.TrimSpace(line)).Info("control command done")
	fmt.Fprintf(c, "ok %s\n", out)
}

// executeFaultCommand runs one command (see the top of the file).
func executeFaultCommand(sim *vppsim.Sim, f []string) (string, error) {
	if len(f) == 0 {
		return "", errors.New("empty command")
	}
	switch {
	case f[0] == "fail" && len(f) == 4:
		rv, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			return "", fmt.Errorf("fail: retval %q: %w", f[2], err)
		}
		times, err := strconv.Atoi(f[3])
		if err != nil || times < 0 {
			return "", fmt.Errorf("fail: times %q: want a number >= 0", f[3])
		}
		return "", sim.FailMessage(f[1], int32(rv), times)
	case f[0] == "restart" && len(f) == 1:
		sim.Restart()
		return "", nil
	case f[0] == "clear" && len(f) == 1:
		sim.ClearFaults()
		return "", nil
	case f[0] == "count" && len(f) == 2:
		return strconv.FormatInt(sim.MessageCount(f[1]), 10), nil
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f, " "))
}
