package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsSeq makes the names of the tests' network namespaces unique.
var netnsSeq atomic.Int64

// realNetns creates a network namespace for a pod (root and iproute2 needed; "" when
// they are missing, the caller then uses a plain file) and deletes it at the end of the
// test. Its name is unique to this process.
func realNetns(t *testing.T, pod string) string {
	t.Helper()
	ip, err := exec.LookPath("ip")
	if err != nil || os.Geteuid() != 0 {
		return ""
	}
	name := fmt.Sprintf("ccni-%d-%d-%s", os.Getpid(), netnsSeq.Add(1), pod)
	if out, err := exec.Command(ip, "netns", "add", name).CombinedOutput(); err != nil {
		t.Logf("ip netns add %s: %v: %s (using a plain file)", name, err, out)
		return ""
	}
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "del", name).Run() })
	return filepath.Join("/var/run/netns", name)
}

// wirePod plays the agent's dataplane for the fake agent: in a real network namespace
// it creates the interface the fake reply describes (a veth ifName, MAC
// 02:fe:00:00:00:02, 10.1.1.2/32, a link route to the gateway 10.1.1.1 and a default
// route via it). A path that is no network namespace is left alone.
func wirePod(path, ifName string) error {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil || st.Type != unix.NSFS_MAGIC {
		return nil
	}
	nsh, err := netns.GetFromPath(path)
	if err != nil {
		return err
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return err
	}
	defer h.Close()
	if ifName == "" {
		ifName = "eth0"
	}
	if _, err := h.LinkByName(ifName); err == nil {
		return nil // wired already (a repeated ADD)
	}
	mac, _ := net.ParseMAC("02:fe:00:00:00:02")
	// A veth pair with both ends in the namespace (no dummy module needed).
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifName, HardwareAddr: mac}, PeerName: "peer-" + ifName}); err != nil {
		return err
	}
	link, err := h.LinkByName(ifName)
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(link); err != nil {
		return err
	}
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 1, 1, 2), Mask: net.CIDRMask(32, 32)}}); err != nil {
		return err
	}
	gw := net.IPv4(10, 1, 1, 1)
	if err := h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: &net.IPNet{IP: gw, Mask: net.CIDRMask(32, 32)}, Scope: netlink.SCOPE_LINK}); err != nil {
		return err
	}
	return h.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw})
}
