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
