package e2e

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// The node network of the traffic tests: the NIC of the node's simulated VPP is bound to
// a veth of the node namespace whose peer, in a namespace of its own, stands for the
// network the node is attached to (another host, an external client, a router).
const (
	nicLinkName = "ctvnic0"         // the node's end, bound to the VPP NIC
	lanLinkName = "ctvlan0"         // the peer, in the node-network namespace
	nodeVPPIP   = "192.168.16.1"    // the NIC's address (node ID 1 in contiv.conf's plan)
	lanHostIP   = "192.168.16.100"  // the peer's address on the node network
	lanHostCIDR = lanHostIP + "/24" // as configured on the peer
	askTimeout  = 3 * time.Second   // for one request/answer exchange
)

// ip runs "ip -n <ns> args..." and fails tb on error.
func (ns *netns) mustIP(tb testing.TB, args ...string) {
	tb.Helper()
	argv := append([]string{"-n", ns.name}, args...)
	if out, err := exec.Command(ns.e.ip, argv...).CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

// newNodeNetwork creates the node-network namespace and a veth pair between it and the
// node namespace: nicLinkName (up, no address: the VPP NIC owns it) in node and
// lanLinkName with lanHostCIDR in the new namespace, which it returns.
func newNodeNetwork(tb testing.TB, e *env, node *netns) *netns {
	tb.Helper()
	lan := newNodeNetns(tb, e)
	node.mustIP(tb, "link", "add", nicLinkName, "type", "veth", "peer", "name", lanLinkName, "netns", lan.name)
	node.mustIP(tb, "link", "set", nicLinkName, "up")
	lan.mustIP(tb, "addr", "add", lanHostCIDR, "dev", lanLinkName)
	lan.mustIP(tb, "link", "set", lanLinkName, "up")
	return lan
}

// responder answers, on one port, TCP connections and UDP datagrams with its name and
// the client address it saw: "<name> <client ip>:<port>\n". Its sockets live in a pod
// (or other) namespace; it stops when the test ends.
type responder struct {
	name string
	tcp  net.Listener
	udp  net.PacketConn
	wg   sync.WaitGroup
}

// startResponder listens on port (TCP and UDP, all addresses) inside ns.
func startResponder(tb testing.TB, ns *netns, name string, port int) *responder {
	tb.Helper()
	r := &responder{name: name}
	addr := fmt.Sprintf(":%d", port)
	err := nsrun.Run(ns.path, func() error {
		var err error
		if r.tcp, err = net.Listen("tcp4", addr); err != nil {
			return err
		}
		if r.udp, err = net.ListenPacket("udp4", addr); err != nil {
			r.tcp.Close()
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("responder %s in %s: %v", name, ns.name, err)
	}
	r.wg.Add(2)
	go r.serveTCP()
	go r.serveUDP()
	tb.Cleanup(r.close)
	return r
}

func (r *responder) answer(client net.Addr) []byte {
	return []byte(r.name + " " + client.String() + "\n")
}

func (r *responder) serveTCP() {
	defer r.wg.Done()
	for {
		c, err := r.tcp.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(askTimeout))
		_, _ = c.Write(r.answer(c.RemoteAddr()))
		c.Close()
	}
}

func (r *responder) serveUDP() {
	defer r.wg.Done()
	buf := make([]byte, 1500)
	for {
		_, from, err := r.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = r.udp.WriteTo(r.answer(from), from)
	}
}

func (r *responder) close() {
	r.tcp.Close()
	r.udp.Close()
	r.wg.Wait()
}

// answer is what a responder sent back.
type answer struct {
	name     string // the responder's name
	clientIP string // the client address it saw
}

func parseAnswer(data string) (answer, error) {
	f := strings.Fields(data)
	if len(f) != 2 {
		return answer{}, fmt.Errorf("answer %q is not \"<name> <client>\"", data)
	}
	host, _, err := net.SplitHostPort(f[1])
	if err != nil {
		return answer{}, fmt.Errorf("answer %q: %w", data, err)
	}
	return answer{name: f[0], clientIP: host}, nil
}

// askTCP connects from inside ns to addr (host:port) and returns the answer.
func askTCP(ns *netns, addr string) (answer, error) {
	return askTCPWith(ns, &net.Dialer{Timeout: askTimeout}, addr)
}

// askTCPFromPort is askTCP from the local port port, bound with SO_REUSEADDR (so that
// the port of an earlier connection can be bound again at once).
func askTCPFromPort(ns *netns, port int, addr string) (answer, error) {
	d := &net.Dialer{Timeout: askTimeout, LocalAddr: &net.TCPAddr{Port: port}, Control: reuseAddr}
	return askTCPWith(ns, d, addr)
}

// reuseAddr sets SO_REUSEADDR on a socket before it is bound.
func reuseAddr(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}
	return serr
}

// askTCPWith connects with d from inside ns to addr and returns the answer.
func askTCPWith(ns *netns, d *net.Dialer, addr string) (answer, error) {
	var data []byte
	err := nsrun.Run(ns.path, func() error {
		c, err := d.Dial("tcp4", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(askTimeout))
		data, err = io.ReadAll(c)
		return err
	})
	if err != nil {
		return answer{}, fmt.Errorf("TCP from %s to %s: %w", ns.name, addr, err)
	}
	return parseAnswer(string(data))
}

// askUDP sends a datagram from inside ns to addr (IPv4) and returns the answer.
func askUDP(ns *netns, addr string) (answer, error) { return askUDPOver(ns, "udp4", addr) }

// askUDPOver sends a datagram over network ("udp4" or "udp6") from inside ns to addr
// and returns the answer.
func askUDPOver(ns *netns, network, addr string) (answer, error) {
	var data []byte
	err := nsrun.Run(ns.path, func() error {
		c, err := net.Dial(network, addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(askTimeout))
		if _, err := c.Write([]byte("?")); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		n, err := c.Read(buf)
		data = buf[:n]
		return err
	})
	if err != nil {
		label := "UDP"
		if network == "udp6" {
			label = "UDP6"
		}
		return answer{}, fmt.Errorf("%s from %s to %s: %w", label, ns.name, addr, err)
	}
	return parseAnswer(string(data))
}

// diagnose logs what the simulated VPP saw: the packet trace, the error counters, the
// NAT44 sessions and static mappings, the cnat translations and sessions, so that a
// failed exchange explains itself.
func (n *contivNode) diagnose(tb testing.TB) {
	tb.Helper()
	for _, cmd := range []string{"show trace", "show errors", "show nat44 sessions", "show nat44 static mappings", "show nat44 interfaces", "show nat44 addresses", "show cnat translation", "show cnat session", "show ip fib", "show interface"} {
		out, err := n.rest.vppCLI(cmd)
		if err != nil {
			tb.Logf("%s: %v", cmd, err)
			continue
		}
		if len(out) > 20000 {
			out = out[:20000] + "\n[...]"
		}
		tb.Logf("--- vpp# %s ---\n%s", cmd, out)
	}
}

// armTrace clears the simulator's trace and error counters and traces the next packets
// of every input node.
func (n *contivNode) armTrace(tb testing.TB) {
	tb.Helper()
	for _, cmd := range []string{"clear trace", "clear errors",
		"trace add virtio-input 100", "trace add dpdk-input 100"} {
		if _, err := n.rest.vppCLI(cmd); err != nil {
			tb.Fatal(err)
		}
	}
}

// expect runs ask (with a fresh trace) and checks that the answer comes from one of
// the names; on failure it logs the simulator's view of the packets.
func (n *contivNode) expect(tb testing.TB, what string, ask func() (answer, error), names ...string) answer {
	tb.Helper()
	n.armTrace(tb)
	a, err := ask()
	if err == nil && !slices.Contains(names, a.name) {
		err = fmt.Errorf("answered by %q, want one of %v", a.name, names)
	}
	if err != nil {
		n.diagnose(tb)
		tb.Fatalf("%s: %v", what, err)
	}
	return a
}
