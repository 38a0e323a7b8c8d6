package ipnet

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The only I/O of the package: the default implementations of the host callbacks of
// Deps. Tests replace both.

// virtualLinkPrefixes start the names of host links whose addresses are not the
// host's own: loopback, Docker bridges, libvirt bridges and the VPP interconnect.
var virtualLinkPrefixes = []string{"lo", "docker", "virbr", "vpp"}

// isVirtualLink tells whether the link name is one GetHostIPs leaves out.
func isVirtualLink(name string) bool {
	for _, p := range virtualLinkPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// DumpHostLinkIPs is the default HostLinkIPsDumpClb: it lists, with netlink in the
// agent's namespace, the addresses of every link except those whose names start with
// lo, docker, virbr or vpp.
func DumpHostLinkIPs() ([]net.IP, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var ips []net.IP
	for _, l := range links {
		name := l.Attrs().Name
		if isVirtualLink(name) {
			continue
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return nil, fmt.Errorf("list addresses of %s: %w", name, err)
		}
		for _, a := range addrs {
			if a.IPNet != nil {
				ips = append(ips, a.IP)
			}
		}
	}
	return ips, nil
}

// ipv6Sysctl is the sysctl that turns IPv6 off in a network namespace.
const ipv6Sysctl = "/proc/sys/net/ipv6/conf/all/disable_ipv6"

// EnableIPv6InNetns is the default Deps.EnablePodIPv6: it writes 0 to
// net.ipv6.conf.all.disable_ipv6 inside the namespace bound at netnsPath (container
// runtimes often turn IPv6 off, and the pod's loopback gets ::1). It runs on a
// dedicated OS thread, which is discarded if it cannot return to the agent's
// namespace.
func EnableIPv6InNetns(netnsPath string) error {
	errCh := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean, err := enableIPv6OnThisThread(netnsPath)
		if clean {
			runtime.UnlockOSThread()
		}
		errCh <- err
	}()
	return <-errCh
}

// enableIPv6OnThisThread does the work of EnableIPv6InNetns on the locked thread;
// clean is false when the thread stayed in the pod's namespace.
func enableIPv6OnThisThread(netnsPath string) (clean bool, err error) {
	origin, err := netns.Get()
	if err != nil {
		return true, fmt.Errorf("netns %s: current namespace: %w", netnsPath, err)
	}
	defer origin.Close()
	target, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return true, fmt.Errorf("netns %s: %w", netnsPath, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return true, fmt.Errorf("netns %s: enter: %w", netnsPath, err)
	}
	werr := os.WriteFile(ipv6Sysctl, []byte("0"), 0o644)
	if err := netns.Set(origin); err != nil {
		return false, fmt.Errorf("netns %s: return to the agent's namespace: %w", netnsPath, err)
	}
	if werr != nil {
		return true, fmt.Errorf("netns %s: %w", netnsPath, werr)
	}
	return true, nil
}
