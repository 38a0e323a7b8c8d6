// Command contiv-netctl is the operator CLI of contiv-vpp, in the manner of calicoctl
// or the cilium CLI: it finds the nodes in the cluster's etcd (an etcd.conf in the
// agents' format) and asks each node's agent over its REST API.
//
//	contiv-netctl nodes                       ID, name, IPs, agent state, VPP version
//	contiv-netctl pods [--node N]             pod, IP, VPP and Linux interface
//	contiv-netctl ipam [NODE]                 node ID, node IP, pod and host subnets
//	contiv-netctl services [--node N]         frontends -> backends as rendered in VPP
//	contiv-netctl vpp NODE CLI...             a VPP CLI command (POST /vpp/command)
//	contiv-netctl vppdump NODE interfaces|nat|routes|fib|acl
//	contiv-netctl history NODE [--last N]     the controller's last events
//	contiv-netctl resync NODE [--downstream]  etcd (or VPP/Linux) resync
//	contiv-netctl trace SRC DST[:PORT/PROTO]  a real probe traced in VPP, explained (trace.go)
//	contiv-netctl ui [--listen ADDR]          a web view of the cluster and its traces (ui.go)
//	contiv-netctl completion bash|zsh|fish|powershell
//
// Output is a table, or -o json|yaml. Most commands use the agents' admin endpoints.
// The manifest's agents serve them on a unix socket, /var/run/contiv/admin.sock (http.conf
// admin-socket), which netctl run on a node uses for that node's agent (--admin-socket
// names another; without a socket there, loopback as before); agents without
// admin-socket serve them on loopback. From another host, when the agents' http.conf
// configures mutual TLS, give netctl a client certificate (--cert-file, --key-file,
// --ca-file) the agents accept (docs/SECURITY.md). With `make run`, the standalone agent writes
// .run/standalone/netctl.conf, which netctl reads by default.
//
// It is built on spf13/cobra, as kubectl, calicoctl and cilium are: subcommands,
// per-command help and shell completion, which the standard flag package lacks.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "contiv-netctl: %v\n", err)
		return 1
	}
	return 0
}
