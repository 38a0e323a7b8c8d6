package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
)

// The IPv6 side of a single-NIC node: the NIC's IPv6 address and the address of a host
// of the node network on the same subnet.
const (
	stnNodeIP6 = "2001:db8:16::5"
	stnLanIP6  = "2001:db8:16::100"
	// stnFarIP6 is behind stnLanIP6, by a route of the NIC (stnFarNet via stnLanIP6).
	stnFarIP6 = "2001:db8:99::1"
	stnFarNet = "2001:db8:99::/64"
)

// TestSTNHostIPv6IsReachableFromTheNodeNetworkThroughVPP: on a dual-stack single-NIC
// node (stealInterface, contiv-stn's record of the NIC standing in for contiv-stn), a
// host of the node network reaches a UDP service of the node's host on the node's IPv6
// address, and the host answers it, both ways through the simulated VPP: the only way
// between the two namespaces is the veth bound to VPP's NIC, on which the node's kernel
// has IPv6 off (as contiv-stn leaves a stolen link), and the node's IPv6 address is on
// the host's end of the interconnect only. VPP answers the network's neighbour
// solicitations for the address, punts the datagram to the host by the STN rule, and
// routes the host's answer out of the NIC (the host's route to the node subnet via
// VPP's interconnect address, known by a static neighbour entry). The NIC's IPv6 route
// via a router of the node network (stnFarNet via stnLanIP6) works for the host too.
func TestSTNHostIPv6IsReachableFromTheNodeNetworkThroughVPP(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	record := filepath.Join(t.TempDir(), "stn.json")
	if err := stn.Save(record, &stn.Record{
		Version: stn.RecordVersion, Link: nicLinkName, MTU: 1500,
		Addrs:  []stn.Addr{{CIDR: nodeVPPIP + "/24"}, {CIDR: stnNodeIP6 + "/64"}},
		Routes: []stn.Route{{Dst: "0.0.0.0/0", Gw: lanHostIP}, {Dst: stnFarNet, Gw: stnLanIP6}},
	}); err != nil {
		t.Fatal(err)
	}
	conf := dualStackContivConf(t, exampleContivConf(t, e)) +
		fmt.Sprintf("stealInterface: %s\nstnRecordFile: %s\n", nicLinkName, record)
	var lan *netns
	node := startContivNodeWith(t, e, nodeOptions{nicLink: nicLinkName, contivConf: conf, beforeSim: func(ns *netns) {
		lan = newNodeNetwork(t, e, ns)
		lan.mustIP(t, "addr", "add", stnLanIP6+"/64", "dev", lanLinkName, "nodad")
		lan.mustIP(t, "addr", "add", stnFarIP6+"/128", "dev", "lo")
		lan.mustIP(t, "link", "set", "lo", "up")
		// contiv-stn's Steal: the kernel keeps the link up but takes no IPv6 on it.
		if out, err := exec.Command(e.ip, "netns", "exec", ns.name, "sysctl", "-qw",
			"net.ipv6.conf."+nicLinkName+".disable_ipv6=1").CombinedOutput(); err != nil {
			t.Fatalf("disable IPv6 on %s: %v: %s", nicLinkName, err, out)
		}
	}})
	t.Cleanup(func() {
		if t.Failed() {
			node.diagnose(t)
			for _, cmd := range []string{"show ip6 fib", "show ip6 neighbors", "show stn rules"} {
				out, err := node.rest.vppCLI(cmd)
				t.Logf("--- vpp# %s ---\n%s%v", cmd, out, err)
			}
			for _, args := range [][]string{{"-6", "addr"}, {"-6", "route"}, {"-6", "neigh"}} {
				out, err := exec.Command(e.ip, append([]string{"-n", node.ns.name}, args...)...).CombinedOutput()
				t.Logf("--- host: ip %v ---\n%s%v", args, out, err)
			}
		}
	})
	startEcho6(t, node.ns, "host")
	testkit.Eventually(t, 20*time.Second, "the node network reaches the host on its IPv6 address", func() error {
		a, err := askUDP6(lan, stnNodeIP6)
		if err == nil && (a.name != "host" || a.clientIP != stnLanIP6) {
			err = fmt.Errorf("answer %+v, want the host seeing %s", a, stnLanIP6)
		}
		return err
	})
	// The far end answers from the address asked (the echo's socket is not bound to it).
	lan.mustIP(t, "route", "add", stnNodeIP6+"/128", "dev", lanLinkName, "src", stnFarIP6)
	startEcho6(t, lan, "far")
	testkit.Eventually(t, 20*time.Second, "the host reaches a network behind the NIC's IPv6 route", func() error {
		a, err := askUDP6(node.ns, stnFarIP6)
		if err == nil && (a.name != "far" || a.clientIP != stnNodeIP6) {
			err = fmt.Errorf("answer %+v, want the far end seeing the node's %s", a, stnNodeIP6)
		}
		return err
	})
}
