// Command cluster-lab starts a Contiv-VPP cluster lab (package test/cluster/lab) with N
// nodes, prints how to use it and runs until SIGINT or SIGTERM, or until its parent
// process (make) dies; then it removes everything it created. `make cluster` runs it
// (exec'd by make's shell, so that make's SIGTERM reaches it). It needs root.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster-lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.Int("nodes", 3, "number of nodes")
	k8sBin := fs.String("k8s-bin", "", "directory of kube-apiserver, kube-controller-manager, kubectl and etcd (scripts/k8s-control-plane.sh prints it)")
	contivBin := fs.String("contiv-bin", "bin", "directory of contiv-agent, contiv-cni, contiv-ksr and vpp-sim (make build)")
	dir := fs.String("dir", "", "the lab's directory (default: a temporary one, removed at the end)")
	keep := fs.Bool("keep", false, "keep the lab's directory (logs) at the end")
	verbose := fs.Bool("v", false, "print the kubelets' messages")
	nic := fs.String("nic", "dual", "dual: VPP's NIC and the host apart (the node IP on VPP only); single: one NIC per node carrying the node IP, stolen for VPP by contiv-stn (STN)")
	ipFamily := fs.String("ipfamily", "", "dual (dual-stack, IPv4 primary), ipv4 or ipv6 (single-stack IPv6, no overlay): the address families of nodes, pods and Services (default dual; ipv4 with -nic single)")
	renderer := fs.String("renderer", "nat44", "contiv.conf's serviceRenderer: nat44 (IPv4 Services with NAT44-ED) or cnat (with VPP's cnat); IPv6 Services are cnat's either way")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rndr, err := lab.ParseServiceRenderer(*renderer)
	if err != nil {
		fmt.Fprintf(stderr, "cluster-lab: -renderer: %v\n", err)
		return 2
	}
	if *ipFamily == "" {
		*ipFamily = string(lab.DualStack)
		if *nic == "single" {
			*ipFamily = string(lab.IPv4) // single-NIC nodes are IPv4 only
		}
	}
	family, err := lab.ParseIPFamily(*ipFamily)
	if err != nil {
		fmt.Fprintf(stderr, "cluster-lab: -ipfamily: %v\n", err)
		return 2
	}
	if family != lab.IPv4 && *nic == "single" {
		fmt.Fprintf(stderr, "cluster-lab: -ipfamily %s: single-NIC (-nic single) nodes are IPv4 only\n", family)
		return 2
	}
	if *nodes < 1 {
		fmt.Fprintf(stderr, "cluster-lab: -nodes %d: at least 1\n", *nodes)
		return 2
	}
	if *nic != "dual" && *nic != "single" {
		fmt.Fprintf(stderr, "cluster-lab: -nic %q: use dual or single\n", *nic)
		return 2
	}
	if *k8sBin == "" {
		fmt.Fprintln(stderr, "cluster-lab: -k8s-bin is required (the directory scripts/k8s-control-plane.sh prints)")
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "cluster-lab: needs root (network namespaces)")
		return 1
	}
	logger := log.New(stderr, "", log.Ltime|log.Lmicroseconds)
	logf := func(format string, args ...any) {
		if *verbose || !strings.HasPrefix(format, "kubelet") {
			logger.Printf(format, args...)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := stopWithParent(ctx, stop); err != nil {
		fmt.Fprintf(stderr, "cluster-lab: %v\n", err)
		return 1
	}
	start := time.Now()
	l, err := lab.Start(ctx, lab.Config{
		Nodes: *nodes, K8sBinDir: *k8sBin, ContivBinDir: *contivBin, Dir: *dir, KeepDir: *keep, Logf: logf,
		SingleNIC: *nic == "single", IPFamily: family, ServiceRenderer: rndr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "cluster-lab: %v\n", err)
		return 1
	}
	printUsage(stdout, describe(l, time.Since(start)))
	<-ctx.Done()
	stop()
	fmt.Fprintln(stdout, "\ncluster-lab: stopping, removing everything")
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "cluster-lab: %v\n", err)
		return 1
	}
	return 0
}
