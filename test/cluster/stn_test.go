package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// singleNICLab is the shared lab if its nodes are single-NIC (CONTIV_LAB_NIC=single,
// make test-cluster NIC=single); the other tests of the package run in both modes.
func singleNICLab(t *testing.T) *lab.Lab {
	t.Helper()
	l := sharedLab(t)
	if !l.SingleNIC() {
		t.Skip("cluster: single-NIC nodes only (CONTIV_LAB_NIC=single)")
	}
	requireForwarding(t, l)
	return l
}

// hostEcho opens a fresh connection from the external client to n's host service and
// checks one echo.
func hostEcho(ctx context.Context, l *lab.Lab, n *lab.Node, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := l.DialHost(ctx, n)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Echo("hello "+n.Name, timeout)
}

func TestSingleNICNodesServeTheHostOnTheNodeIPThroughVPP(t *testing.T) {
	l := singleNICLab(t)
	ctx := testCtx(t, 2*time.Minute)
	for _, n := range l.Nodes() {
		if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 || !n.STNRecordExists() {
			t.Errorf("%s: NIC addresses %v (%v), record %v; want the NIC stolen: no address, a record", n.Name, addrs, err, n.STNRecordExists())
		}
		testkit.Eventually(t, 30*time.Second, n.Name+"'s host service from the external client", func() error {
			return hostEcho(ctx, l, n, 2*time.Second)
		})
	}
}

// VPP killed: contiv-stn gives the NIC back and the host answers on it; VPP started
// again: the NIC is taken again, the host answers through VPP, and so do the pods. A
// connection opened before the crash is checked after each step.
func TestSingleNICVPPCrashGivesTheNICBackAndARestartTakesItAgain(t *testing.T) {
	l := singleNICLab(t)
	ctx := testCtx(t, 4*time.Minute)
	nodes := l.Nodes()
	n := nodes[len(nodes)-1]
	ns := testNamespace(t, l, "stnpods")
	pods := podsOnNodes(t, l, ns, "stn", 1, n)
	var pod string
	for _, p := range pods {
		pod = net.JoinHostPort(p.Status.PodIP, "8080")
	}
	long, err := l.DialHost(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	if err := long.Echo("before", 5*time.Second); err != nil {
		t.Fatalf("long-lived connection before the crash: %v", err)
	}

	if err := n.KillVPP(); err != nil {
		t.Fatal(err)
	}
	crashed := time.Now() // real time: the measured give-back
	testkit.Eventually(t, 10*time.Second, "the node IP back on the NIC", func() error {
		addrs, err := n.NICAddrs()
		if err != nil {
			return err
		}
		if !slices.Contains(addrs, n.IP.String()+"/24") {
			return fmt.Errorf("NIC addresses %v", addrs)
		}
		return nil
	})
	onNIC := time.Since(crashed)
	testkit.Eventually(t, 10*time.Second, "the host service on the NIC", func() error { return hostEcho(ctx, l, n, 500*time.Millisecond) })
	reachable := time.Since(crashed)
	longAfterCrash := long.Echo("after the crash", 5*time.Second)

	if err := n.StartVPP(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now() // real time: the measured takeover
	testkit.Eventually(t, 10*time.Second, "the NIC taken again", func() error {
		if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 {
			return fmt.Errorf("NIC addresses %v (%v)", addrs, err)
		}
		return nil
	})
	taken := time.Since(restarted)
	testkit.Eventually(t, 60*time.Second, "the host service through VPP again", func() error { return hostEcho(ctx, l, n, 500*time.Millisecond) })
	hostBack := time.Since(restarted)
	testkit.Eventually(t, 60*time.Second, "the pod from the external client", func() error {
		_, err := probeReply(fromNetns(l.ClientNetns), pod, 2*time.Second)
		return err
	})
	podBack := time.Since(restarted)
	longAfterRestart := long.Echo("after the restart", 30*time.Second)
	t.Logf("give-back: node IP on the NIC %v, host service answering %v after the crash; takeover: NIC taken %v, host service through VPP %v, pod %v after VPP's start",
		onNIC.Round(time.Millisecond), reachable.Round(time.Millisecond), taken.Round(time.Millisecond),
		hostBack.Round(time.Millisecond), podBack.Round(time.Millisecond))
	t.Logf("long-lived connection: after the crash %v, after the restart %v", longAfterCrash, longAfterRestart)
	if longAfterCrash != nil || longAfterRestart != nil {
		t.Errorf("the long-lived connection broke: after the crash %v, after the restart %v", longAfterCrash, longAfterRestart)
	}
	if onNIC > 5*time.Second {
		t.Errorf("the NIC came back after %v, want under 5s", onNIC)
	}
}

// A single-NIC node that leaves (its namespace deleted, the reboot stand-in) leaves no
// record of a stolen NIC behind: stopping contiv-stn after VPP gives the NIC back.
func TestSingleNICNodeLeavingLeavesNoRecordBehind(t *testing.T) {
	l := singleNICLab(t)
	ctx := testCtx(t, 3*time.Minute)
	n, err := l.AddNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !n.STNRecordExists() {
		t.Errorf("%s: no record while its NIC is stolen", n.Name)
	}
	testkit.Eventually(t, 30*time.Second, n.Name+"'s host service", func() error { return hostEcho(ctx, l, n, 2*time.Second) })
	if err := l.RemoveNode(ctx, n.Name); err != nil {
		t.Fatal(err)
	}
	if n.STNRecordExists() {
		t.Errorf("%s left: its record of a stolen NIC is still there", n.Name)
	}
}
