package ipnet

import (
	"fmt"
	"net"
	"sort"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// StateToString returns a human-readable description of the plugin's state: the node
// IP, the host IPs, the wired pods and the other nodes. It is not called String, which
// names the plugin.
func (n IPNet) StateToString() string {
	var b strings.Builder
	nodeIP, nodeNet := "<none>", "<none>"
	if n.shared != nil {
		n.shared.mu.RLock()
		nodeIP, nodeNet = ipString(n.shared.nodeIP), netString(n.shared.nodeIPNet)
		n.shared.mu.RUnlock()
	}
	fmt.Fprintf(&b, "ipnet state:\n node: %s (IP %s, network %s)\n", n.NodeName, nodeIP, nodeNet)
	fmt.Fprintf(&b, " host IPs: %s\n", joinIPs(n.hostIPs))
	if n.settings != nil {
		mode, transport := "TAP", "VXLAN overlay"
		if !n.settings.useTAP {
			mode = "VETH + AF_PACKET"
		}
		if n.settings.noOverlay {
			transport = "no overlay"
		}
		fmt.Fprintf(&b, " pod interfaces: %s, node interconnect: %s, main interface: %q\n",
			mode, transport, n.settings.mainIfName)
	}
	ids := make([]podmodel.ID, 0, len(n.pods))
	for id := range n.pods {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	fmt.Fprintf(&b, " pods (%d):\n", len(ids))
	for _, id := range ids {
		p := n.pods[id]
		fmt.Fprintf(&b, "  - %s: IP %s, container %s, netns %s\n", id, ipsString(p.ips), p.containerID, p.netns)
	}
	fmt.Fprintf(&b, " other nodes (%d):\n", len(n.peers))
	for _, name := range sortedNames(n.peers) {
		fmt.Fprintf(&b, "  - %s\n", n.peers[name])
	}
	return b.String()
}

func joinIPs(ips []net.IP) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}
