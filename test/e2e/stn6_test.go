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
// VPP's interconnect address, known by a static neighbour entry).
func TestSTNHostIPv6IsReachableFromTheNodeNetworkThroughVPP(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	record := filepath.Join(t.TempDir(), "stn.json")
	if err := stn.Save(record, &stn.Record{
		Version: stn.RecordVersion, Link: nicLinkName, MTU: 1500,
		Addrs:  []stn.Addr{{CIDR: nodeVPPIP + "/24"}, {CIDR: stnNodeIP6 + "/64"}},
		Routes: []stn.Route{{Dst: "0.0.0.0/0", Gw: lanHostIP}},
	}); err != nil {
		t.Fatal(err)
	}
	conf := dualStackContivConf(t, exampleContivConf(t, e)) +
		fmt.Sprintf("stealInterface: %s\nstnRecordFile: %s\n", nicLinkName, record)
	var lan *netns
	node := startContivNodeWith(t, e, nodeOptions{nicLink: nicLinkName, contivConf: conf, beforeSim: func(ns *netns) {
		lan = newNodeNetwork(t, e, ns)
		lan.mustIP(t, "addr", "add", stnLanIP6+"/64", "dev", lanLinkName, "nodad")
		// contiv-stn's Steal: the kernel keeps the link up but takes no IPv6 on it.
		if out, err := exec.Command(e.ip, "netns", "exec", ns.name, "sysctl", "-qw",
			"net.ipv6.conf."+nicLinkName+".disable_ipv6=1").CombinedOutput(); err != nil {
			t.Fatalf("disable IPv6 on %s: %v: %s", nicLinkName, err, out)
		}
	}})
	t.Cleanup(func() {
		if t.Failed() {
			node.diagnose(t)
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
}
