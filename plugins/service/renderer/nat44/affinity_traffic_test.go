package nat44

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
)

// TCP flags of the affinity tests' connections.
const (
	flagFIN    = 0x01
	flagACK    = 0x10
	flagFINACK = flagFIN | flagACK
)

// affinityNode is the external node with the session goroutine running on the fake
// clock, on a GoVPP channel of its own.
type affinityNode struct {
	*externalNode
	passes chan int // the sessions each affinity pass deleted
}

// newAffinityNode starts the external node and its renderer's session goroutine with
// service.conf conf.
func newAffinityNode(t *testing.T, conf *config.Config) *affinityNode {
	t.Helper()
	n := &affinityNode{externalNode: newExternalNode(t), passes: make(chan int, 64)}
	ch, err := n.conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	r := n.env.rndr
	r.Config, r.GoVPPChan, r.Clock = conf, ch, n.clk
	r.affinityPassed = func(deleted int) { n.passes <- deleted }
	if err := r.AfterInit(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return n
}

// idle lets d pass a second at a time, each second waiting for the affinity pass
// the renderer runs then (none while no Service has ClientIP affinity).
func (n *affinityNode) idle(t *testing.T, d time.Duration, passes bool) {
	t.Helper()
	for ; d > 0; d -= time.Second {
		n.clk.Step(time.Second)
		if !passes {
			continue
		}
		select {
		case <-n.passes:
		case <-time.After(testkit.DefaultTimeout):
			t.Fatalf("no affinity pass %v after the step", testkit.DefaultTimeout)
		}
	}
}

// connect opens a connection (TCP: handshake, then FIN both ways; UDP: a datagram and
// its answer) from an outside client to dst and returns the backend that served it.
func (n *affinityNode) connect(t *testing.T, proto uint8, client, dst netip.AddrPort) netip.Addr {
	t.Helper()
	atBackend, atClient := n.roundTrip(t, uplinkNIC, proto, client, dst)
	if atClient != dst.String()+" -> "+client.String() {
		t.Fatalf("%s -> %s: the client got %q\n%s", client, dst, atClient, n.cli(t, "show errors"))
	}
	srcText, dstText, _ := strings.Cut(atBackend, " -> ")
	src, backend := netip.MustParseAddrPort(srcText), netip.MustParseAddrPort(dstText)
	if proto == protoTCP {
		backendNIC := nicOfBackend(backend.Addr())
		n.send(t, uplinkNIC, proto, flagACK, client, dst)
		n.send(t, uplinkNIC, proto, flagFINACK, client, dst)
		n.send(t, backendNIC, proto, flagFINACK, backend, src)
		n.send(t, uplinkNIC, proto, flagACK, client, dst)
	}
	return backend.Addr()
}

// affinityClients is the number of outside clients of the affinity tests: after the
// timeout each one's next connection goes to either backend with equal odds, so all
// of them sticking by chance has odds 2^-24.
const affinityClients = 24

// TestClientIPAffinityTimeoutHolds walks issue #26 item 10 with a timeout of 5 s, a
// Service on two backends and 24 clients outside the cluster on its external IP: a
// client's connection within the timeout (4 s after its previous one ended) goes to
// the backend of the previous one; one 7 s after it may go to the other (for some
// client it does). Before, the closed TCP sessions (240 s transitory timeout) and the
// idle UDP ones (300 s) held VPP's affinity records, and every client stuck. With
// the last ClientIP Service gone, VPP's timeouts are the defaults again and the pass
// stops.
func TestClientIPAffinityTimeoutHolds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proto uint8
	}{{"TCP", protoTCP}, {"UDP", protoUDP}} {
		t.Run(tc.name, func(t *testing.T) {
			n := newAffinityNode(t, config.DefaultConfig())
			svc, slice := webService("Cluster")
			svc.SessionAffinity, svc.SessionAffinityTimeout = "ClientIP", 5
			n.apply(t, svc)
			n.apply(t, slice)
			testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the affinity pass started", n.env.rndr.affinityRunning.Load)
			if got := n.runningTimeouts(t); got.TCPTransitory != 1 || got.UDP != 300 || got.TCPEstablished != 7440 {
				t.Errorf("VPP's timeouts with a ClientIP Service: %+v", got)
			}
			dst := netip.AddrPortFrom(netip.MustParseAddr(extSvcIP), extSvcPort)
			client := func(i int, port uint16) netip.AddrPort {
				return netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("198.51.100.%d", 10+i)), port)
			}
			first := make([]netip.Addr, affinityClients)
			for i := range first {
				first[i] = n.connect(t, tc.proto, client(i, 40000), dst)
			}
			n.idle(t, 4*time.Second, true)
			for i := range first {
				if b := n.connect(t, tc.proto, client(i, 40001), dst); b != first[i] {
					t.Fatalf("client %d: 4 s after its connection ended, backend %s instead of %s", i, b, first[i])
				}
			}
			n.idle(t, 7*time.Second, true)
			changed := 0
			for i := range first {
				if n.connect(t, tc.proto, client(i, 40002), dst) != first[i] {
					changed++
				}
			}
			if changed == 0 {
				t.Errorf("7 s after their connections ended all %d clients stuck to their backend", affinityClients)
			}

			n.env.deleteService("default", "web")
			n.commit(t)
			if got := n.runningTimeouts(t); got != (nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 240, ICMP: 60}) {
				t.Errorf("VPP's timeouts after the last ClientIP Service: %+v", got)
			}
			if g, _ := n.env.dp.KVs[vpp_nat.GlobalNAT44Key].(*vpp_nat.Nat44Global); g.GetTimeouts() != nil {
				t.Errorf("NAT timeouts still staged: %v", g.GetTimeouts())
			}
			testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the affinity pass stopped", func() bool { return !n.env.rndr.affinityRunning.Load() })
			n.clk.Step(3 * time.Second)
			if len(n.passes) != 0 {
				t.Error("an affinity pass ran with no ClientIP Service left")
			}
		})
	}
}

// TestClientIPAffinityTimeoutEnforcementCanBeTurnedOff: with
// disableAffinityTimeoutEnforcement VPP keeps its timeouts and the mappings the
// Service's timeout, nothing is deleted, and a client still sticks 7 s after its
// connection ended (VPP's own affinity: the closed session holds it).
func TestClientIPAffinityTimeoutEnforcementCanBeTurnedOff(t *testing.T) {
	conf := config.DefaultConfig()
	conf.DisableAffinityTimeoutEnforcement = true
	n := newAffinityNode(t, conf)
	svc, slice := webService("Cluster")
	svc.SessionAffinity, svc.SessionAffinityTimeout = "ClientIP", 5
	n.apply(t, svc)
	n.apply(t, slice)
	if got := n.runningTimeouts(t); got.TCPTransitory != 240 {
		t.Errorf("VPP's tcp_transitory %d s, want the default", got.TCPTransitory)
	}
	for _, m := range n.sim.NAT().LBMappings {
		if m.Affinity != 5 {
			t.Errorf("mapping %s: affinity %d, want 5", m.External, m.Affinity)
		}
	}
	dst := netip.AddrPortFrom(netip.MustParseAddr(extSvcIP), extSvcPort)
	for i := range affinityClients {
		client := netip.MustParseAddr(fmt.Sprintf("198.51.100.%d", 10+i))
		b := n.connect(t, protoTCP, netip.AddrPortFrom(client, 40000), dst)
		n.idle(t, 7*time.Second, false)
		if again := n.connect(t, protoTCP, netip.AddrPortFrom(client, 40001), dst); again != b {
			t.Fatalf("client %d: VPP's own affinity sent it to %s, then %s", i, b, again)
		}
	}
	if n.clk.HasWaiters() {
		t.Error("the affinity pass runs although turned off")
	}
}

// runningTimeouts returns the NAT timeouts VPP runs with.
func (n *externalNode) runningTimeouts(t *testing.T) nat_types.NatTimeouts {
	t.Helper()
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := n.ch.SendRequest(&nat44_ed.Nat44ShowRunningConfig{}).ReceiveReply(rc); err != nil {
		t.Fatal(err)
	}
	return rc.Timeouts
}
