//go:build linux

package vppsim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// newLinuxEnv starts a simulator in Linux mode with a fresh network
// namespace, or skips the test where that is impossible.
func newLinuxEnv(t *testing.T) (*testEnv, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("Linux mode needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 is not installed")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("no /dev/net/tun")
	}
	ns := fmt.Sprintf("vppsim-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })

	e := &testEnv{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	sim, err := New(Options{SocketPath: e.sock, NICs: []string{nic1}, Linux: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	conn, err := core.Connect(socketclient.NewVppClient(e.sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	e.conn = conn
	if e.ch, err = conn.NewAPIChannel(); err != nil {
		t.Fatal(err)
	}
	e.ch.SetReplyTimeout(5 * time.Second)
	return e, ns
}

func ipIn(t *testing.T, ns string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	return string(out), err
}

func TestLinuxTapIsCreatedInNamespaceAndRemoved(t *testing.T) {
	e, ns := newLinuxEnv(t)
	rep := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{
		ID: noIndex, UseRandomMac: true,
		HostIfNameSet: true, HostIfName: "simtap1",
		HostNamespaceSet: true, HostNamespace: ns,
		HostMacAddrSet: true, HostMacAddr: mac("02:aa:bb:cc:dd:01"),
		HostMtuSet: true, HostMtuSize: 1400,
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip4("10.99.0.2"), Len: 24},
		HostIP4GwSet: true, HostIP4Gw: ip4("10.99.0.1"),
	}, rep)
	link, err := ipIn(t, ns, "addr", "show", "dev", "simtap1")
	if err != nil {
		t.Fatalf("tap missing in namespace: %v: %s", err, link)
	}
	for _, want := range []string{"mtu 1400", "02:aa:bb:cc:dd:01", "inet 10.99.0.2/24", "UP"} {
		if !strings.Contains(link, want) {
			t.Errorf("link lacks %q:\n%s", want, link)
		}
	}
	if routes, _ := ipIn(t, ns, "route", "show", "default"); !strings.Contains(routes, "via 10.99.0.1 dev simtap1") {
		t.Errorf("default route: %q", routes)
	}
	if ifc, _ := e.sim.InterfaceByName("tap0"); !ifc.Tap.LinuxCreated {
		t.Error("LinuxCreated not set")
	}
	// A namespace that does not exist is a syscall error, as in VPP.
	e.expect(retvalSyscallError2, &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "simtap2",
		HostNamespaceSet: true, HostNamespace: "no-such-ns-vppsim"})
	// Namespaces may be given as paths, too.
	second := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "simtap3",
		HostNamespaceSet: true, HostNamespace: "/var/run/netns/" + ns}, second)
	if out, err := ipIn(t, ns, "link", "show", "dev", "simtap3"); err != nil {
		t.Errorf("tap by namespace path missing: %v: %s", err, out)
	}

	e.ok(&tapv2.TapDeleteV2{SwIfIndex: rep.SwIfIndex})
	if out, err := ipIn(t, ns, "link", "show", "dev", "simtap1"); err == nil {
		t.Errorf("tap still exists after tap_delete_v2:\n%s", out)
	}
	// A restart (VPP crash) removes the Linux ends too.
	e.sim.Restart()
	testkit.Eventually(t, 2*time.Second, "the tap gone after a restart", func() error {
		if _, err := ipIn(t, ns, "link", "show", "dev", "simtap3"); err == nil {
			return errors.New("simtap3 still exists")
		}
		return nil
	})
}

func TestLinuxAfPacketNeedsHostInterface(t *testing.T) {
	e, _ := newLinuxEnv(t)
	e.ok(&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "lo"})
	e.expect(retvalInvalidInterface, &af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: "nosuchif0"})
}

// TestLinuxTapLongNamespaceIsReadPastItsField: host_namespace is a
// string[64]; govpp sends a longer value as its first 64 bytes with no
// NUL, and VPP reads it as a C string on into host_if_name_set and
// host_if_name. With a host name set, the namespace VPP opens is the
// 64-byte prefix, "\x01" and the host name: it does not exist and
// tap_create_v3 fails with SYSCALL_ERROR_2 although the namespace asked
// for exists. Without a host name, the TAP silently lands in the
// namespace named by the 64-byte prefix, if there is one. A 63-byte name
// is read whole.
func TestLinuxTapLongNamespaceIsReadPastItsField(t *testing.T) {
	e, _ := newLinuxEnv(t)
	addNS := func(name string) {
		t.Helper()
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", name, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	}
	base := fmt.Sprintf("vppsim-long-%d-", os.Getpid())
	long := base + strings.Repeat("x", 70-len(base))
	prefix := long[:64]
	exact := base + strings.Repeat("y", 63-len(base))
	addNS(long)
	addNS(prefix)
	addNS(exact)

	e.expect(retvalSyscallError2, &tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "simlong1",
		HostNamespaceSet: true, HostNamespace: long})

	rep := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, HostNamespaceSet: true, HostNamespace: long}, rep)
	ifc, _ := e.sim.InterfaceByName("tap0")
	if out, err := ipIn(t, prefix, "link", "show", "dev", "tap0"); err != nil {
		t.Errorf("the TAP is not in the namespace of the 64-byte prefix: %v: %s", err, out)
	}
	if out, err := ipIn(t, long, "link", "show", "dev", "tap0"); err == nil {
		t.Errorf("the TAP is in the namespace asked for:\n%s", out)
	}
	details := dump[tapv2.SwInterfaceTapV2Details](t, e.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: rep.SwIfIndex})
	if len(details) != 1 || details[0].HostNamespace != long[:63] || ifc.Tap.HostNamespace != prefix {
		t.Errorf("dumped namespace %+v, kept %q: want the first 63 bytes dumped, the 64-byte prefix kept", details, ifc.Tap.HostNamespace)
	}

	e.ok(&tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "simexact",
		HostNamespaceSet: true, HostNamespace: exact})
	if out, err := ipIn(t, exact, "link", "show", "dev", "simexact"); err != nil {
		t.Errorf("63-byte namespace: %v: %s", err, out)
	}
}

func TestNsPathIsClibNetnsOpen(t *testing.T) {
	for in, want := range map[string]string{
		"pod-ns":         "/var/run/netns/pod-ns",
		"/proc/7/ns/net": "/proc/7/ns/net",
		"a/b":            "/var/run/netns/a/b",
		"pid:1234":       "/proc/1234/ns/net",
		"pid:12x":        "/proc/12/ns/net",
		"pid:x":          "/proc/0/ns/net",
	} {
		if got := nsPath(in); got != want {
			t.Errorf("nsPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLinuxTapLongHostNameIsCutByLinux: VPP passes a host name longer
// than 15 bytes to TUNSETIFF unchecked and Linux keeps its first 15 bytes;
// VPP dumps the name it was given.
func TestLinuxTapLongHostNameIsCutByLinux(t *testing.T) {
	e, ns := newLinuxEnv(t)
	rep := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, HostIfNameSet: true, HostIfName: "simtap-a-long-name",
		HostNamespaceSet: true, HostNamespace: ns}, rep)
	if out, err := ipIn(t, ns, "link", "show", "dev", "simtap-a-long-n"); err != nil {
		t.Errorf("no link with the first 15 bytes of the name: %v: %s", err, out)
	}
	d := dump[tapv2.SwInterfaceTapV2Details](t, e.ch, &tapv2.SwInterfaceTapV2Dump{SwIfIndex: rep.SwIfIndex})
	if len(d) != 1 || d[0].HostIfName != "simtap-a-long-name" {
		t.Errorf("dump %+v", d)
	}
	e.ok(&tapv2.TapDeleteV2{SwIfIndex: rep.SwIfIndex})
	if out, err := ipIn(t, ns, "link", "show", "dev", "simtap-a-long-n"); err == nil {
		t.Errorf("link left after delete:\n%s", out)
	}
}
