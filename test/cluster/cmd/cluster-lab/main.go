// Command cluster-lab starts a Contiv-VPP cluster lab (package test/cluster/lab) with N
// nodes, prints how to use it and runs until SIGINT or SIGTERM; then it removes
// everything it created. `make cluster` runs it. It needs root.
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
	"text/tabwriter"
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
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *nodes < 1 {
		fmt.Fprintf(stderr, "cluster-lab: -nodes %d: at least 1\n", *nodes)
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
	start := time.Now()
	l, err := lab.Start(ctx, lab.Config{
		Nodes: *nodes, K8sBinDir: *k8sBin, ContivBinDir: *contivBin, Dir: *dir, KeepDir: *keep, Logf: logf,
	})
	if err != nil {
		fmt.Fprintf(stderr, "cluster-lab: %v\n", err)
		return 1
	}
	printUsage(stdout, l, time.Since(start))
	<-ctx.Done()
	stop()
	fmt.Fprintln(stdout, "\ncluster-lab: stopping, removing everything")
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "cluster-lab: %v\n", err)
		return 1
	}
	return 0
}

func printUsage(w io.Writer, l *lab.Lab, took time.Duration) {
	nodes := l.Nodes()
	fmt.Fprintf(w, "\nLab %s is up: %d nodes in %.1f s. Files and logs: %s\n\n", l.Name, len(nodes), took.Seconds(), l.Dir)
	fmt.Fprintf(w, "kubectl (v1.34, built by scripts/k8s-control-plane.sh):\n")
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n", l.Kubeconfig)
	fmt.Fprintf(w, "  alias kubectl=%s\n", l.Kubectl)
	fmt.Fprintf(w, "  kubectl get nodes -o wide\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tID\tIP\tPOD SUBNET\tNETNS\tAGENT REST")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\thttp://%s\n", n.Name, n.ID, n.IP, n.PodSubnet, n.Netns, n.RESTAddr)
	}
	tw.Flush()
	if len(nodes) > 0 {
		n := nodes[0]
		fmt.Fprintf(w, "\nAgent REST, e.g.: curl http://%s/contiv/v1/ipam ; curl http://%s/scheduler/dump?key-prefix=config/vpp/v2/interfaces/\n", n.RESTAddr, n.RESTAddr)
		fmt.Fprintf(w, "VPP CLI through the agent: curl -s -H 'Content-Type: application/json' -d '{\"vppclicommand\":\"show interface\"}' http://%s/vpp/command\n", n.RESTAddr)
	}
	fmt.Fprintf(w, "\nPods run in network namespaces %s-<namespace>-<pod>; their container answers on each\n", l.Name)
	fmt.Fprintf(w, "declared containerPort (TCP, UDP) with \"<pod> <client address>\" (HTTP requests too):\n")
	fmt.Fprintf(w, "  ip netns list | grep %s-default-\n", l.Name)
	fmt.Fprintf(w, "  ip netns exec %s-default-<pod> curl -s http://<service IP>:<port>/\n", l.Name)
	fmt.Fprintf(w, "External client on the node network (%s): ip netns exec %s curl -s http://<node IP>:<nodePort>/\n", lab.ClientIP, l.ClientNetns)
	if !l.NICBound {
		fmt.Fprintf(w, "\nNote: this vpp-sim does not bind its NIC to a Linux link (-nic NAME=LINUXIF): VPP state is\n")
		fmt.Fprintf(w, "programmed on every node, but packets do not cross nodes.\n")
	}
	fmt.Fprintf(w, "\nCtrl-C stops the lab and removes every namespace, link, process and file it made.\n")
}
