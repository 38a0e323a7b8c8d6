//go:build linux

package stn

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// testNode is a "node" namespace whose only NIC (nic0) is a veth to a "wire"
// namespace, where its peer (peer0) carries the gateway addresses.
type testNode struct {
	node, wire string // namespace names
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newTestNode makes the namespaces; the NIC has IPv4 and IPv6 addresses, default
// routes of both families, a static route and MTU 1400.
func newTestNode(t *testing.T) *testNode {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	suffix := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	n := &testNode{node: "stn-node-" + suffix, wire: "stn-wire-" + suffix}
	for _, ns := range []string{n.node, n.wire} {
		ip(t, "netns", "add", ns)
		ns := ns
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	ip(t, "-n", n.node, "link", "add", "nic0", "type", "veth", "peer", "name", "peer0", "netns", n.wire)
	ip(t, "-n", n.node, "link", "set", "nic0", "mtu", "1400", "up")
	ip(t, "-n", n.wire, "link", "set", "peer0", "mtu", "1400", "up")
	ip(t, "-n", n.wire, "addr", "add", "192.168.16.1/24", "dev", "peer0")
	ip(t, "-n", n.wire, "addr", "add", "2001:db8:16::1/64", "dev", "peer0", "nodad")
	ip(t, "-n", n.node, "addr", "add", "192.168.16.10/24", "dev", "nic0")
	ip(t, "-n", n.node, "addr", "add", "2001:db8:16::10/64", "dev", "nic0", "nodad")
	ip(t, "-n", n.node, "route", "add", "default", "via", "192.168.16.1", "dev", "nic0")
	ip(t, "-n", n.node, "-6", "route", "add", "default", "via", "2001:db8:16::1", "dev", "nic0")
	ip(t, "-n", n.node, "route", "add", "10.200.0.0/16", "via", "192.168.16.1", "dev", "nic0", "metric", "7")
	return n
}

func (n *testNode) path() string { return nsrun.Path(n.node) }

// shape is what a test compares of a record: addresses and routes, sorted, without
// the lifetimes (they count down).
func shape(r *Record) string {
	var parts []string
	for _, a := range r.Addrs {
		parts = append(parts, fmt.Sprintf("addr %s dynamic=%v", a.CIDR, a.Dynamic))
	}
	for _, rt := range r.Routes {
		parts = append(parts, fmt.Sprintf("route %s gw=%s metric=%d proto=%d", rt.Dst, rt.Gw, rt.Priority, rt.Protocol))
	}
	sort.Strings(parts)
	return fmt.Sprintf("mtu=%d arp=%v rp=%s v6off=%s\n%s", r.MTU, r.ARP, r.RPFilter, r.DisableIPv6, strings.Join(parts, "\n"))
}

func TestStealTakesTheNICsConfigurationAndRestoreGivesItBack(t *testing.T) {
	n := newTestNode(t)
	h := Host{Netns: n.path()}
	before, err := h.Capture("nic0")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"addr 192.168.16.10/24", "addr 2001:db8:16::10/64", "route 0.0.0.0/0 gw=192.168.16.1",
		"route ::/0 gw=2001:db8:16::1", "route 10.200.0.0/16 gw=192.168.16.1 metric=7", "mtu=1400"}
	for _, w := range want {
		if !strings.Contains(shape(before), w) {
			t.Errorf("the record lacks %q:\n%s", w, shape(before))
		}
	}
	if err := h.Steal(before); err != nil {
		t.Fatal(err)
	}
	stolen, err := h.Capture("nic0")
	if err != nil {
		t.Fatal(err)
	}
	if len(stolen.Addrs) != 0 || len(stolen.Routes) != 0 || stolen.ARP || stolen.RPFilter != "1" || stolen.DisableIPv6 != "1" {
		t.Fatalf("after Steal the NIC still has configuration:\n%s", shape(stolen))
	}
	if err := h.Steal(before); err != nil {
		t.Fatalf("a second Steal (after a crash) failed: %v", err)
	}
	// The TAP stand-in holds the node's address, as the agent configures it.
	ip(t, "-n", n.node, "link", "add", "vpp1", "type", "veth", "peer", "name", "vpp1p")
	ip(t, "-n", n.node, "addr", "add", "192.168.16.10/24", "dev", "vpp1")
	restoreAndCompare(t, h, before)
	if out, _ := exec.Command("ip", "-n", n.node, "-br", "addr", "show", "vpp1").CombinedOutput(); strings.Contains(string(out), "192.168.16.10") {
		t.Errorf("the node address stayed on the TAP: %s", out)
	}
	if err := h.Restore(before); err != nil {
		t.Fatalf("a second Restore failed: %v", err)
	}
	// By traffic: the wire reaches the host on the NIC again.
	ln, err := nsrun.Listen(n.path(), "tcp", "192.168.16.10:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go acceptAll(ln)
	if err := dialFrom(n.wire, ln.Addr().String(), 2*time.Second); err != nil {
		t.Fatalf("the host is not reachable on its NIC after Restore: %v", err)
	}
}

func TestADHCPAddressIsRecordedAsDynamicAndRestoredSo(t *testing.T) {
	n := newTestNode(t)
	ip(t, "-n", n.node, "addr", "add", "192.168.16.77/24", "dev", "nic0", "valid_lft", "600", "preferred_lft", "500")
	ip(t, "-n", n.node, "route", "add", "10.201.0.0/16", "via", "192.168.16.1", "dev", "nic0", "proto", "dhcp")
	h := Host{Netns: n.path()}
	rec, err := h.Capture("nic0")
	if err != nil {
		t.Fatal(err)
	}
	var dyn *Addr
	for i := range rec.Addrs {
		if rec.Addrs[i].CIDR == "192.168.16.77/24" {
			dyn = &rec.Addrs[i]
		} else if rec.Addrs[i].Dynamic {
			t.Errorf("static address %s recorded as dynamic", rec.Addrs[i].CIDR)
		}
	}
	if dyn == nil || !dyn.Dynamic || dyn.ValidLft <= 0 || dyn.ValidLft > 600 || dyn.PreferredLft > 500 {
		t.Fatalf("DHCP address recorded as %+v, want dynamic with its lifetimes", dyn)
	}
	if err := h.Steal(rec); err != nil {
		t.Fatal(err)
	}
	after := restoreAndCompare(t, h, rec)
	for _, a := range after.Addrs {
		if a.CIDR == "192.168.16.77/24" && (a.ValidLft <= 0 || a.ValidLft > 600) {
			t.Errorf("restored DHCP address has valid_lft %d, want its remaining lease", a.ValidLft)
		}
	}
}

// restoreAndCompare restores rec and checks that the NIC has what rec recorded.
func restoreAndCompare(t *testing.T, h Host, rec *Record) *Record {
	t.Helper()
	if err := h.Restore(rec); err != nil {
		t.Fatal(err)
	}
	after, err := h.Capture(rec.Link)
	if err != nil {
		t.Fatal(err)
	}
	if shape(after) != shape(rec) {
		t.Fatalf("restored:\n%s\nwant:\n%s", shape(after), shape(rec))
	}
	return after
}

func acceptAll(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

func dialFrom(ns, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := nsrun.Dialer(nsrun.Path(ns))(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// TestKeeperGivesTheNICBackWithinABound measures, over N cycles, the time from VPP's
// API socket going away to the host answering on its NIC again (give-back), and from
// the socket appearing to the NIC's addresses being gone (takeover).
func TestKeeperGivesTheNICBackWithinABound(t *testing.T) {
	n := newTestNode(t)
	sock := filepath.Join(t.TempDir(), "api.sock")
	log, _ := test.NewNullLogger()
	k := &Keeper{NIC: HostNIC{Host: Host{Netns: n.path()}, Link: "nic0"}, StateFile: filepath.Join(t.TempDir(), "stn.json"),
		Probe: SocketProbe(sock, 100*time.Millisecond), Interval: 50 * time.Millisecond, Log: log}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- k.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	host, err := nsrun.Listen(n.path(), "tcp", "0.0.0.0:22")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go acceptAll(host)

	const cycles = 10
	var take, give []time.Duration
	for i := 0; i < cycles; i++ {
		vpp, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go acceptAll(vpp)
		start := time.Now() // real time: the measured takeover
		testkit.Eventually(t, 5*time.Second, "the NIC taken", func() error {
			if _, err := os.Stat(k.StateFile); err != nil {
				return err
			}
			rec, err := Host{Netns: n.path()}.Capture("nic0")
			if err != nil {
				return err
			}
			if len(rec.Addrs) != 0 {
				return fmt.Errorf("NIC still has %d addresses", len(rec.Addrs))
			}
			return nil
		})
		take = append(take, time.Since(start))
		_ = vpp.Close()
		start = time.Now() // real time: the measured give-back
		// A connect opened while the NIC is still stolen waits for the SYN's
		// retransmission (1s): each attempt gets 100ms, as a fresh client would.
		testkit.Eventually(t, 5*time.Second, "the host reachable on its NIC", func() error {
			return dialFrom(n.wire, "192.168.16.10:22", 100*time.Millisecond)
		})
		give = append(give, time.Since(start))
	}
	t.Logf("N=%d, probe interval 50ms, DownAfter 2: takeover %s, give-back (to a TCP connect from the wire) %s",
		cycles, stats(take), stats(give))
	if m := maxOf(give); m > 2*time.Second {
		t.Errorf("give-back took up to %v, want under 2s", m)
	}
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func stats(ds []time.Duration) string {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("min %v median %v max %v", s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond),
		s[len(s)-1].Round(time.Millisecond))
}

func TestFirstNICIsTheLinkOfTheDefaultRoute(t *testing.T) {
	n := newTestNode(t)
	ip(t, "-n", n.node, "link", "add", "aaa0", "type", "veth", "peer", "name", "aaa1")
	ip(t, "-n", n.node, "link", "set", "aaa0", "up")
	ip(t, "-n", n.node, "addr", "add", "10.9.0.1/24", "dev", "aaa0")
	h := Host{Netns: n.path()}
	if name, err := h.FirstNIC(); err != nil || name != "nic0" {
		t.Fatalf("FirstNIC = %q, %v; want nic0 (the default route's)", name, err)
	}
	ip(t, "-n", n.node, "route", "del", "default")
	if name, err := h.FirstNIC(); err != nil || name == "lo" || name == "" {
		t.Fatalf("without a default route FirstNIC = %q, %v; want a link with a global address", name, err)
	}
}
