package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
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
		// No DPDK in vpp-sim: VPP drives the stolen link as an af_packet interface.
		key := "config/vpp/v2/interfaces/host-" + lab.NICLink
		got, err := vppDump(n, key)
		if v := got[key]; err != nil || !strings.Contains(v, `"AF_PACKET"`) || !strings.Contains(v, `"hostIfName":"`+lab.NICLink+`"`) {
			t.Errorf("%s: VPP's main interface %s = %q (%v), want an af_packet on %s", n.Name, key, v, err, lab.NICLink)
		}
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

// A connection to the host service opened before anything of Contiv runs on a node (as
// an operator's ssh session to a fresh VM) survives the node's first takeover: the NIC
// handed to VPP, the node IP moved to the host's end of the interconnect, and the
// agent's first configuration. Fresh connections probed every 100 ms measure the gap
// in which the host did not answer.
func TestSingleNICConnectionOpenedBeforeTheFirstTakeoverSurvivesIt(t *testing.T) {
	l := singleNICLab(t)
	ctx := testCtx(t, 3*time.Minute)
	var (
		long    *lab.HostConn
		hostIP  net.IP
		stop    = make(chan struct{})
		probed  = make(chan time.Duration, 1)
		longErr error
	)
	l.SetHostUpHook(func(_ *lab.Node, ip net.IP) error {
		c, err := l.DialHostIP(ctx, ip)
		if err != nil {
			return err
		}
		if err := c.Echo("before Contiv", 5*time.Second); err != nil {
			c.Close()
			return err
		}
		long, hostIP = c, ip
		go func() { probed <- probeGaps(ctx, l, ip, stop) }()
		return nil
	})
	defer l.SetHostUpHook(nil)
	n, err := l.AddNode(ctx)
	if n != nil {
		defer func() {
			if err := l.RemoveNode(ctx, n.Name); err != nil {
				t.Error(err)
			}
		}()
	}
	if err != nil {
		t.Fatal(err)
	}
	if long == nil {
		t.Fatal("the host-up hook did not run")
	}
	defer long.Close()
	testkit.Eventually(t, 30*time.Second, n.Name+"'s NIC taken", func() error {
		if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 || !n.STNRecordExists() {
			return fmt.Errorf("NIC addresses %v (%v), record %v", addrs, err, n.STNRecordExists())
		}
		return nil
	})
	testkit.Eventually(t, 30*time.Second, n.Name+"'s host service through VPP", func() error { return hostEcho(ctx, l, n, time.Second) })
	longErr = long.Echo("after the takeover", 30*time.Second)
	close(stop)
	gap := <-probed
	t.Logf("%s (%s): the connection opened before Contiv, after the takeover: %v; longest gap of fresh connections: %v",
		n.Name, hostIP, longErr, gap.Round(time.Millisecond))
	if longErr != nil {
		t.Errorf("the connection opened before the first takeover broke: %v", longErr)
	}
}

// probeGaps opens a fresh connection to the host service on ip every 100 ms until stop
// and returns the longest time between two answered probes.
func probeGaps(ctx context.Context, l *lab.Lab, ip net.IP, stop <-chan struct{}) time.Duration {
	var longest time.Duration
	last := time.Now() // real time: the measured gap
	for {
		select {
		case <-stop:
			return longest
		case <-time.After(100 * time.Millisecond): // real time: the probe period
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		c, err := l.DialHostIP(pctx, ip)
		if err == nil {
			err = c.Echo("probe", 500*time.Millisecond)
			c.Close()
		}
		cancel()
		if err == nil {
			longest = max(longest, time.Since(last))
			last = time.Now()
		}
	}
}

// A single-NIC node's address comes from the lab's DHCP server; once VPP holds the NIC,
// the host's DHCP client (dhcpRenew, the stand-in: no dhclient here) still renews the
// lease: its unicast REQUEST leaves through VPP, and the server's unicast ACK to the
// node IP (UDP 68, a port VPP does not use) is punted to the host by the STN rule.
func TestSingleNICDHCPLeaseIsRenewedThroughVPP(t *testing.T) {
	l := singleNICLab(t)
	nodes := l.Nodes()
	n := nodes[len(nodes)-1]
	if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 {
		t.Fatalf("%s: NIC addresses %v (%v); want the NIC stolen", n.Name, addrs, err)
	}
	before := n.DHCPRenewals()
	var got string
	testkit.Eventually(t, 30*time.Second, n.Name+"'s lease renewed through VPP", func() error {
		var err error
		got, err = n.RenewDHCPLease()
		return err
	})
	if want := n.IP.String() + "/24"; got != want {
		t.Errorf("renewal acknowledged %s, want %s", got, want)
	}
	if after := n.DHCPRenewals(); after <= before {
		t.Errorf("the server acknowledged %d renewals, %d before: the ACK came from elsewhere", after, before)
	}
	if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 {
		t.Errorf("%s: NIC addresses %v (%v) after the renewal; want the NIC still stolen", n.Name, addrs, err)
	}
}

// The host's other routes out of the NIC keep working through VPP after the takeover:
// a route via another router of the node network (the external client, routing an
// address of its own) is mirrored, VPP routing it out of the NIC via that router and
// the host to VPP. Without the mirror the host would send it to its default gateway,
// which has no route to it.
func TestSingleNICHostKeepsItsOtherRoutesThroughVPP(t *testing.T) {
	l := singleNICLab(t)
	ctx := testCtx(t, 3*time.Minute)
	dst := net.IPv4(10, 99, 0, 1)
	stop, err := l.StartClientEchoService(dst, 7777)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	l.SetHostUpHook(func(n *lab.Node, _ net.IP) error { return n.AddHostRoute(dst.String()+"/32", lab.ClientIP) })
	defer l.SetHostUpHook(nil)
	n, err := l.AddNode(ctx)
	if n != nil {
		defer func() {
			if err := l.RemoveNode(ctx, n.Name); err != nil {
				t.Error(err)
			}
		}()
	}
	if err != nil {
		t.Fatal(err)
	}
	if addrs, err := n.NICAddrs(); err != nil || len(addrs) != 0 {
		t.Fatalf("%s: NIC addresses %v (%v); want the NIC stolen", n.Name, addrs, err)
	}
	addr := net.JoinHostPort(dst.String(), "7777")
	testkit.Eventually(t, 30*time.Second, n.Name+"'s host reaches "+addr+" by its own route", func() error {
		return n.EchoFromHost(ctx, addr, time.Second)
	})
}
