//go:build linux

package vppsim

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/tapv2"
)

// TestLinuxIPv6BetweenNamespacesThroughTheSimulator: two network
// namespaces, each behind a TAP with an IPv6 address and default route
// towards VPP. Linux resolves its gateway by ND (VPP answers), VPP
// resolves the far host by ND (Linux answers), and UDP datagrams cross
// both ways through real kernels.
func TestLinuxIPv6BetweenNamespacesThroughTheSimulator(t *testing.T) {
	e, nsA := newLinuxEnv(t)
	nsB := fmt.Sprintf("vppsim-test6-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", nsB).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", nsB).Run() })
	for k, side := range []struct{ ns, host, vpp string }{{nsA, "2001:db8:a::2", "2001:db8:a::1"}, {nsB, "2001:db8:b::2", "2001:db8:b::1"}} {
		rep := &tapv2.TapCreateV3Reply{}
		e.ok(&tapv2.TapCreateV3{ID: noIndex, UseRandomMac: true,
			HostIfNameSet: true, HostIfName: fmt.Sprintf("sim6io%d", k), HostNamespaceSet: true, HostNamespace: side.ns,
			HostIP6PrefixSet: true, HostIP6Prefix: ip_types.IP6AddressWithPrefix{Address: netip.MustParseAddr(side.host).As16(), Len: 64},
			HostIP6GwSet: true, HostIP6Gw: netip.MustParseAddr(side.vpp).As16(),
		}, rep)
		e.addAddr(rep.SwIfIndex, side.vpp+"/64")
		e.up(rep.SwIfIndex)
	}
	srv := listenIn(t, nsB, "[2001:db8:b::2]:7000")
	cl := dialIn(t, nsA, "[2001:db8:b::2]:7000")
	buf := make([]byte, 64)
	// The first datagrams may be dropped while VPP and the kernels resolve
	// each other (VPP never queues a packet waiting for ND): send until a
	// datagram goes there and its answer comes back.
	for try := 0; ; try++ {
		if try == 20 {
			t.Fatalf("no IPv6 round trip through the simulator\n%s", cli(e, "show errors"))
		}
		if _, err := cl.Write([]byte("ping6")); err != nil {
			t.Fatalf("write: %v", err)
		}
		_ = srv.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // real time: the kernels answer ND on their own
		n, from, err := srv.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		if string(buf[:n]) != "ping6" || from.IP.String() != "2001:db8:a::2" {
			t.Fatalf("got %q from %s", buf[:n], from)
		}
		if _, err := srv.WriteToUDP([]byte("pong6"), from); err != nil {
			t.Fatalf("reply: %v", err)
		}
		_ = cl.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // real time, as above
		if n, err := cl.Read(buf); err == nil && string(buf[:n]) == "pong6" {
			break
		}
	}
	if n := len(e.sim.Neighbors()); n < 2 {
		t.Errorf("VPP learned %d neighbours by ND, want both hosts: %+v", n, e.sim.Neighbors())
	}
}
