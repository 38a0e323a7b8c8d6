package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// labInfo is what printUsage tells of a running lab.
type labInfo struct {
	name, dir, kubeconfig, kubectl, clientNetns string
	family                                      lab.IPFamily
	nicBound                                    bool
	took                                        time.Duration
	nodes                                       []nodeInfo
}

// nodeInfo is one node of labInfo.
type nodeInfo struct {
	name, ip, podSubnet, netns, rest string // rest: host:port of the relay to its agent
	id                               uint32
}

// describe collects what printUsage needs from a started lab.
func describe(l *lab.Lab, took time.Duration) labInfo {
	info := labInfo{
		name: l.Name, dir: l.Dir, kubeconfig: l.Kubeconfig, kubectl: l.Kubectl,
		clientNetns: l.ClientNetns, nicBound: l.NICBound, took: took, family: l.IPFamily(),
	}
	for _, n := range l.Nodes() {
		ni := nodeInfo{
			name: n.Name, id: n.ID, ip: n.IP.String(), podSubnet: n.PodSubnet.String(), netns: n.Netns, rest: n.RESTAddr,
		}
		if info.family == lab.DualStack {
			ni.ip += "," + n.IPv6.String()
			ni.podSubnet += "," + n.PodSubnetIPv6.String()
		}
		info.nodes = append(info.nodes, ni)
	}
	return info
}

// restVar is the shell variable that holds the URL of the agent REST API of node i
// (0-based): NODE1_REST, NODE2_REST, ...
func restVar(i int) string { return fmt.Sprintf("NODE%d_REST", i+1) }

// shellLines are the lines a user pastes into another shell to use the lab: kubectl's
// configuration and the variables README.md's commands are written against (LAB, the
// prefix of the lab's namespaces; NODE<n>_REST, the agents' REST APIs).
func shellLines(info labInfo) []string {
	lines := []string{
		"export KUBECONFIG=" + shellQuote(info.kubeconfig),
		"alias kubectl=" + shellQuote(info.kubectl),
		"export LAB=" + shellQuote(info.name),
	}
	for i, n := range info.nodes {
		lines = append(lines, "export "+restVar(i)+"="+shellQuote("http://"+n.rest))
	}
	return lines
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:+=,@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printUsage tells how to use the lab: the lines to paste, the nodes, examples.
func printUsage(w io.Writer, info labInfo) {
	family := string(info.family)
	if family == "" {
		family = string(lab.IPv4)
	}
	fmt.Fprintf(w, "\nLab %s is up (%s): %d nodes in %.1f s. Files and logs: %s\n\n", info.name, family, len(info.nodes), info.took.Seconds(), info.dir)
	fmt.Fprintf(w, "Paste into another shell (kubectl v1.34, built by scripts/k8s-control-plane.sh, and the\n")
	fmt.Fprintf(w, "variables the commands of README.md use):\n\n")
	for _, l := range shellLines(info) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tID\tIP\tPOD SUBNET\tNETNS\tAGENT REST")
	for i, n := range info.nodes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t$%s (http://%s)\n", n.name, n.id, n.ip, n.podSubnet, n.netns, restVar(i), n.rest)
	}
	tw.Flush()
	if len(info.nodes) > 0 {
		v := restVar(0)
		fmt.Fprintf(w, "\nAgent REST, e.g.: kubectl get nodes -o wide; curl -s $%s/contiv/v1/ipam\n", v)
		fmt.Fprintf(w, "VPP CLI through the agent: curl -s -H 'Content-Type: application/json' -d '{\"vppclicommand\":\"show interface\"}' $%s/vpp/command\n", v)
	}
	fmt.Fprintf(w, "\nPods run in network namespaces $LAB-<namespace>-<pod>; their container answers on each\n")
	fmt.Fprintf(w, "declared containerPort (TCP, UDP, SCTP) with \"<pod> <client address> <namespace>\" (HTTP too):\n")
	fmt.Fprintf(w, "  ip netns list | grep $LAB-default-\n")
	fmt.Fprintf(w, "  ip netns exec $LAB-default-<pod> curl -s http://<service IP>:<port>/\n")
	client := info.clientNetns
	if client == info.name+"-client" {
		client = "$LAB-client"
	}
	clientIPs := lab.ClientIP
	switch info.family {
	case lab.DualStack:
		clientIPs += ", " + lab.ClientIPv6
	case lab.IPv6:
		clientIPs = lab.ClientIPv6
	}
	fmt.Fprintf(w, "External client on the node network (%s): ip netns exec %s curl -s http://<node IP>:<nodePort>/\n", clientIPs, client)
	fmt.Fprintf(w, "It routes the pod subnets and %s (LoadBalancer pool %s, external IPs %s) to the nodes.\n",
		lab.ServiceIngressCIDR, lab.LBPoolCIDR, lab.ExternalIPCIDR)
	if !info.nicBound {
		fmt.Fprintf(w, "\nNote: this vpp-sim does not bind its NIC to a Linux link (-nic NAME=LINUXIF): VPP state is\n")
		fmt.Fprintf(w, "programmed on every node, but packets do not cross nodes.\n")
	}
	fmt.Fprintf(w, "\nCtrl-C (or SIGTERM) stops the lab and removes every namespace, link, process and file it made.\n")
}
