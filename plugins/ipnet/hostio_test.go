package ipnet

import (
	"fmt"
	"net"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// inNewNetns runs fn on a thread moved into a new, empty network namespace (root only);
// path is the namespace's file.
func inNewNetns(t *testing.T, fn func(path string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked if the thread cannot go back: it is discarded
		origin, err := netns.Get()
		if err != nil {
			t.Errorf("current namespace: %v", err)
			return
		}
		defer origin.Close()
		ns, err := netns.New()
		if err != nil {
			t.Errorf("new namespace: %v", err)
			return
		}
		defer ns.Close()
		fn(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
		if err := netns.Set(origin); err != nil {
			t.Errorf("back to the original namespace: %v", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	<-done
}

func TestDumpHostLinkIPsSkipsVirtualLinks(t *testing.T) {
	inNewNetns(t, func(string) {
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo) // 127.0.0.1 and ::1 appear
		}
		for _, pair := range [][2]string{{"eth9", "vpp1"}, {"docker0", "virbr0"}} {
			if err != nil {
				break
			}
			err = netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: pair[0]}, PeerName: pair[1]})
		}
		for name, addr := range map[string]string{"eth9": "10.99.0.1/24", "docker0": "172.17.0.1/16", "vpp1": "172.30.1.2/24"} {
			if err != nil {
				break
			}
			var link netlink.Link
			if link, err = netlink.LinkByName(name); err == nil {
				err = netlink.AddrAdd(link, &netlink.Addr{IPNet: cidr(addr)})
			}
		}
		if err != nil {
			t.Errorf("set up links: %v", err)
			return
		}
		got, err := DumpHostLinkIPs()
		if err != nil || !reflect.DeepEqual(got, []net.IP{net.ParseIP("10.99.0.1").To4()}) {
			t.Errorf("DumpHostLinkIPs = %v, %v", got, err)
		}
	})
}

func TestEnableIPv6InNetnsWritesTheSysctlInsideTheNamespace(t *testing.T) {
	inNewNetns(t, func(path string) {
		if err := os.WriteFile(ipv6Sysctl, []byte("1"), 0o644); err != nil {
			t.Logf("no IPv6 sysctl, nothing to check: %v", err)
			return
		}
		if err := EnableIPv6InNetns(path); err != nil {
			t.Errorf("EnableIPv6InNetns: %v", err)
		}
		if v, err := os.ReadFile(ipv6Sysctl); err != nil || strings.TrimSpace(string(v)) != "0" {
			t.Errorf("disable_ipv6 = %q, %v", v, err)
		}
	})
	if err := EnableIPv6InNetns("/nonexistent/netns"); err == nil || !strings.Contains(err.Error(), "/nonexistent/netns") {
		t.Errorf("missing namespace: %v", err)
	}
}
