package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The IPv6 half of the dual-stack plan of dualStackContivConf (docs/CONFIG.md's
// example); node 1 gets the pods of fd00:10:1:1::/64.
const (
	podGateway6 = "fd00:10:1:1::1"
	podSubnet6  = "fd00:10:1:1::/64"
	udp6Port    = 9090
)

// exampleContivConf is k8s/examples/contiv.conf.
func exampleContivConf(t *testing.T, e *env) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, "k8s", "examples", "contiv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dualStackContivConf is conf (a contiv.conf of the e2e tests) with an IPv6 plan beside
// the IPv4 one.
func dualStackContivConf(t *testing.T, conf string) string {
	t.Helper()
	const anchor = "  vxlanCIDR: 192.168.30.0/24\n"
	if !strings.Contains(conf, anchor) {
		t.Fatalf("k8s/examples/contiv.conf has no %q to extend", anchor)
	}
	return strings.Replace(conf, anchor, anchor+`  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
`, 1)
}

// ipv6Of returns the pod's IPv6 address of its CNI result and checks its gateway and
// default route.
func ipv6Of(t *testing.T, p *pod) string {
	t.Helper()
	_, subnet, _ := net.ParseCIDR(podSubnet6)
	for _, a := range p.result.IPs {
		ip, n, err := net.ParseCIDR(a.Address)
		if err != nil || ip.To4() != nil {
			continue
		}
		if !subnet.Contains(ip) || n.Mask.String() != net.CIDRMask(128, 128).String() || a.Gateway != podGateway6 ||
			a.Interface == nil || *a.Interface != 0 {
			t.Errorf("ADD %s: IPv6 entry %+v, want a /128 of %s on interface 0 with gateway %s", p.name, a, podSubnet6, podGateway6)
		}
		if !slices.ContainsFunc(p.result.Routes, func(r cniRoute) bool { return r.Dst == "::/0" && r.GW == podGateway6 }) {
			t.Errorf("ADD %s: routes %+v lack ::/0 via %s", p.name, p.result.Routes, podGateway6)
		}
		return ip.String()
	}
	t.Fatalf("ADD %s: no IPv6 address in %+v", p.name, p.result.IPs)
	return ""
}

// startEcho6 answers UDP datagrams over IPv6 inside ns with "<name> <client>".
func startEcho6(t *testing.T, ns *netns, name string) {
	t.Helper()
	var conn net.PacketConn
	if err := nsrun.Run(ns.path, func() (err error) {
		conn, err = net.ListenPacket("udp6", fmt.Sprintf("[::]:%d", udp6Port))
		return err
	}); err != nil {
		t.Fatalf("UDP6 responder in %s: %v", ns.name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			_, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteTo([]byte(name+" "+from.String()+"\n"), from)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
}

// askUDP6 sends a datagram from inside ns to [ip]:udp6Port and returns the answer.
func askUDP6(ns *netns, ip string) (answer, error) {
	return askUDPOver(ns, "udp6", net.JoinHostPort(ip, fmt.Sprint(udp6Port)))
}

// TestDualStackPodsGetBothFamiliesAndTalkOverIPv6: on a dual-stack node every pod gets
// an IPv4 and an IPv6 address (CNI result, gateways, default routes of both), CHECK
// checks both, and the pods reach each other and the host over IPv6 through the
// simulated VPP (pod VRF, podGwLoop's IPv6 as gateway, the VPP-host interconnect).
func TestDualStackPodsGetBothFamiliesAndTalkOverIPv6(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	node := startContivNodeWith(t, e, nodeOptions{contivConf: dualStackContivConf(t, exampleContivConf(t, e))}, "p1", "p2")
	p1, p2 := node.addPod(t, "p1"), node.addPod(t, "p2")
	ip1, ip2 := ipv6Of(t, p1), ipv6Of(t, p2)
	if ip1 == ip2 {
		t.Fatalf("both pods got %s", ip1)
	}
	for _, p := range []*pod{p1, p2} {
		if _, stderr, err := node.cni.cnitool("check", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool check %s: %v\n%s", p.name, err, stderr)
		}
	}
	startEcho6(t, p2.ns, "p2")
	startEcho6(t, node.ns, "host")
	testkit.Eventually(t, 10*time.Second, "p1 reaches p2 over IPv6", func() error {
		a, err := askUDP6(p1.ns, ip2)
		if err == nil && (a.name != "p2" || a.clientIP != ip1) {
			err = fmt.Errorf("answer %+v, want p2 seeing %s", a, ip1)
		}
		return err
	})
	// The host reaches the pod over IPv6 (its route to the IPv6 pod range via VPP),
	// and the pod the host (the pod VRF's ::/0 into the main VRF, out the interconnect).
	testkit.Eventually(t, 10*time.Second, "the host reaches p2 over IPv6", func() error {
		_, err := askUDP6(node.ns, ip2)
		return err
	})
	testkit.Eventually(t, 10*time.Second, "p1 reaches the host over IPv6", func() error {
		a, err := askUDP6(p1.ns, "fd00:172:30::1:2")
		if err == nil && (a.name != "host" || a.clientIP != ip1) {
			err = fmt.Errorf("answer %+v, want the host seeing %s", a, ip1)
		}
		return err
	})
	for _, p := range []*pod{p1, p2} {
		if _, stderr, err := node.cni.cnitool("del", p.ns, podArgs(p.name)); err != nil {
			t.Errorf("cnitool del %s: %v\n%s", p.name, err, stderr)
		}
	}
	expectAllocations(t, node, nil, []string{"default/p1", "default/p2"})
}

// TestDualStackIPv6CrossesTheVXLANOverlay: a pod reaches a pod of another node over
// IPv6 inside the IPv4 VXLAN tunnel. No agent runs on the other node (workerName, node
// ID 2): the Linux kernel of the node-network namespace stands in for its VPP, with a
// VXLAN device (VNI 10) whose MAC and IPv6 are those the plan gives node 2's BVI and
// the address of one of its pods (fd00:10:1:2::2). The agent must build, from the plan
// alone, the static IPv6 neighbour of node 2's BVI and the route to its IPv6 pod
// subnet: the bridge domain floods nothing, so neighbour discovery cannot cross it.
func TestDualStackIPv6CrossesTheVXLANOverlay(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	var lan *netns
	node := startContivNodeWith(t, e, nodeOptions{
		beforeSim:  func(ns *netns) { lan = newNodeNetwork(t, e, ns) },
		nicLink:    nicLinkName,
		contivConf: dualStackContivConf(t, trafficContivConf(t, e, rendererNAT44)),
	}, "p1")
	const remotePod6, remoteBVI6, thisBVI6 = "fd00:10:1:2::2", "fd00:192:168:30::2", "fd00:192:168:30::1"
	lan.mustIP(t, "addr", "add", "192.168.16.2/24", "dev", lanLinkName)
	lan.mustIP(t, "link", "add", "vx0", "type", "vxlan", "id", "10", "dstport", "4789",
		"local", "192.168.16.2", "remote", nodeVPPIP, "nolearning")
	lan.mustIP(t, "link", "set", "vx0", "address", "12:2b:00:00:00:02", "up")
	lan.mustIP(t, "addr", "add", remoteBVI6+"/112", "dev", "vx0", "nodad")
	lan.mustIP(t, "addr", "add", remotePod6+"/128", "dev", "vx0", "nodad")
	lan.mustIP(t, "-6", "neigh", "add", thisBVI6, "lladdr", "12:2b:00:00:00:01", "dev", "vx0", "nud", "permanent")
	lan.mustIP(t, "-6", "route", "add", "fd00:10:1::/48", "via", thisBVI6, "dev", "vx0", "src", remotePod6)
	node.extraDocs = []string{workerNodeDoc}
	p1 := node.addPod(t, "p1")
	node.setClusterPods(map[string]string{"p1": p1.ip})
	ip1 := ipv6Of(t, p1)
	startEcho6(t, lan, "w1")
	testkit.Eventually(t, 20*time.Second, "p1 reaches node 2's pod over IPv6 through VXLAN", func() error {
		a, err := askUDP6(p1.ns, remotePod6)
		if err == nil && (a.name != "w1" || a.clientIP != ip1) {
			err = fmt.Errorf("answer %+v, want w1 seeing %s", a, ip1)
		}
		return err
	})
}
