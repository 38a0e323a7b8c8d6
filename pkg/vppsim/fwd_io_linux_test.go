//go:build linux

package vppsim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// inNS runs fn on an OS thread in network namespace ns; sockets fn
// opens stay in that namespace.
func inNS(ns string, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := syscall.Open("/proc/thread-self/ns/net", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer syscall.Close(orig)
		target, err := syscall.Open(nsPath(ns), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer syscall.Close(target)
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		err = fn()
		if setns(orig) == nil {
			// Otherwise the thread stays locked and is discarded.
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// udpNet is the network of a host:port: udp6 for a bracketed IPv6
// address, else udp4.
func udpNet(addr string) string {
	if strings.HasPrefix(addr, "[") {
		return "udp6"
	}
	return "udp4"
}

// dialIn opens a connected UDP socket inside a network namespace.
func dialIn(tb testing.TB, ns, addr string) *net.UDPConn {
	tb.Helper()
	var c *net.UDPConn
	err := inNS(ns, func() error {
		raddr, err := net.ResolveUDPAddr(udpNet(addr), addr)
		if err != nil {
			return err
		}
		c, err = net.DialUDP(udpNet(addr), nil, raddr)
		return err
	})
	if err != nil {
		tb.Fatalf("dial %s in %s: %v", addr, ns, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// listenIn opens a UDP socket bound to addr inside a namespace.
func listenIn(tb testing.TB, ns, addr string) *net.UDPConn {
	tb.Helper()
	var c *net.UDPConn
	err := inNS(ns, func() error {
		laddr, err := net.ResolveUDPAddr(udpNet(addr), addr)
		if err != nil {
			return err
		}
		c, err = net.ListenUDP(udpNet(addr), laddr)
		return err
	})
	if err != nil {
		tb.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// expectRefused sends UDP datagrams to a closed port of VPP until the ICMP
// port unreachable VPP answers with comes back (the first may be lost to
// ARP: VPP drops while it resolves).
func expectRefused(t *testing.T, c *net.UDPConn) {
	t.Helper()
	buf := make([]byte, 64)
	for try := 0; try < 20; try++ {
		if _, err := c.Write([]byte("hello")); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("write: %v", err)
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(buf)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
	}
	t.Fatal("no ICMP port unreachable came back through the simulator")
}

func TestLinuxTapCarriesTraffic(t *testing.T) {
	e, ns := newLinuxEnv(t)
	rep := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, UseRandomMac: true,
		HostIfNameSet: true, HostIfName: "simio1", HostNamespaceSet: true, HostNamespace: ns,
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip4("10.97.0.2"), Len: 24},
	}, rep)
	e.addAddr(rep.SwIfIndex, "10.97.0.1/24")
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: rep.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
	expectRefused(t, dialIn(t, ns, "10.97.0.1:7"))
	ctr, _ := e.sim.InterfaceCounters("tap0")
	if ctr.RxPackets == 0 || ctr.TxPackets == 0 {
		t.Errorf("tap counters %+v", ctr)
	}
}

// vethToNS creates a veth pair with a unique name: one end stays in the
// simulator's namespace, the other goes into a new namespace with addr.
func vethToNS(t *testing.T, prefix, addr string) (local, ns string) {
	t.Helper()
	local = fmt.Sprintf("%s%d", prefix, os.Getpid()%100000)
	peer := local + "p"
	ns = fmt.Sprintf("vppsim-%s-%d", prefix, os.Getpid())
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("link", "add", local, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", local).Run() })
	run("link", "set", peer, "netns", ns)
	run("-n", ns, "addr", "add", addr, "dev", peer)
	run("-n", ns, "link", "set", peer, "up")
	run("link", "set", local, "up")
	return local, ns
}

func TestLinuxAfPacketCarriesTraffic(t *testing.T) {
	e, _ := newLinuxEnv(t)
	veth, ns := vethToNS(t, "vsa", "10.96.200.2/24")
	rep := &af_packet.AfPacketCreateV3Reply{}
	e.ok(&af_packet.AfPacketCreateV3{Mode: af_packet.AF_PACKET_API_MODE_ETHERNET, HostIfName: veth, UseRandomHwAddr: true}, rep)
	ifc, _ := e.sim.InterfaceByName("host-" + veth)
	if ifc.MAC[0] != 0x02 || ifc.MAC[1] != 0xfe {
		t.Errorf("af_packet MAC %s, want a random 02:fe one", ifc.MAC)
	}
	e.addAddr(rep.SwIfIndex, "10.96.200.1/24")
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: rep.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
	expectRefused(t, dialIn(t, ns, "10.96.200.1:7"))
}

func TestLinuxNICBoundToLinuxInterface(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("binding a NIC needs root")
	}
	veth, ns := vethToNS(t, "vsn", "10.96.201.2/24")
	e := &testEnv{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	sim, err := New(Options{SocketPath: e.sock, NICs: []string{"GigabitEthernet0/8/0=" + veth}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	e.conn, e.ch = e.connect()
	link, _ := net.InterfaceByName(veth)
	ifc, _ := sim.InterfaceByName("GigabitEthernet0/8/0")
	mac := ifc.MAC.String()
	if mac == link.HardwareAddr.String() || link.Flags&net.FlagUp == 0 {
		t.Errorf("NIC MAC %s must differ from the Linux interface's %s (up: %v)", mac, link.HardwareAddr, link.Flags&net.FlagUp != 0)
	}
	if want := macString(boundNICMAC(link.HardwareAddr)); mac != want {
		t.Errorf("NIC MAC %s, want %s (08:00:27 and the end of the Linux interface's %s)", mac, want, link.HardwareAddr)
	}
	e.addAddr(1, "10.96.201.1/24")
	e.up(1)
	expectRefused(t, dialIn(t, ns, "10.96.201.1:7"))
	// A restart binds the NIC of the new state again, with the same MAC (a
	// burned-in address).
	sim.Restart()
	e.conn, e.ch = e.connect()
	if ifc, _ := sim.InterfaceByName("GigabitEthernet0/8/0"); ifc.MAC.String() != mac {
		t.Errorf("NIC MAC %s after a restart, was %s", ifc.MAC, mac)
	}
	e.addAddr(1, "10.96.201.1/24")
	e.up(1)
	expectRefused(t, dialIn(t, ns, "10.96.201.1:8"))

	// A second simulator bound to another link has another NIC MAC: two
	// nodes on one network must not share a MAC (an earlier cluster lab did,
	// and lost every frame between its nodes).
	veth2, _ := vethToNS(t, "vsm", "10.96.202.2/24")
	sim2, err := New(Options{SocketPath: filepath.Join(t.TempDir(), "api2.sock"), NICs: []string{"GigabitEthernet0/8/0=" + veth2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim2.Close() })
	link2, _ := net.InterfaceByName(veth2)
	ifc2, _ := sim2.InterfaceByName("GigabitEthernet0/8/0")
	if ifc2.MAC.String() == mac && link2.HardwareAddr.String()[9:] != link.HardwareAddr.String()[9:] {
		t.Errorf("two simulators bound to %s (%s) and %s (%s) have the same NIC MAC %s", veth, link.HardwareAddr, veth2, link2.HardwareAddr, mac)
	}
}

func TestSegmentTCP4CutsGSOFrames(t *testing.T) {
	payload := make([]byte, 2500)
	for k := range payload {
		payload[k] = byte(k)
	}
	tcp := tcpL4(1000, 80, tcpACK|0x08|tcpFIN)
	binary.BigEndian.PutUint32(tcp[4:8], 7000)
	f := ethFrame(nic1MAC, hostAMAC, etherTypeIP4, ipPkt("10.0.0.2", "10.0.0.1", protoTCP, 64, append(tcp, payload...)))
	var segs []pktInfo
	var seqs []uint32
	out := make([]byte, pktMaxFrame)
	if !segmentTCP4(f, 1000, out, func(s []byte) {
		segs = append(segs, decodeFrame(t, s))
		seqs = append(seqs, binary.BigEndian.Uint32(s[ethHdrLen+ip4HdrLen+4:]))
		if n := len(s) - ethHdrLen - ip4HdrLen - 20; n > 1000 {
			t.Errorf("segment of %d payload bytes", n)
		}
	}) {
		t.Fatal("not segmented")
	}
	if len(segs) != 3 || seqs[0] != 7000 || seqs[1] != 8000 || seqs[2] != 9000 {
		t.Fatalf("%d segments, seqs %v", len(segs), seqs)
	}
	for k, s := range segs {
		last := k == len(segs)-1
		if !s.csumOK || (s.tcpFlags&tcpFIN != 0) != last || s.tcpFlags&tcpACK == 0 {
			t.Errorf("segment %d: %v flags %#x csum %v", k, s, s.tcpFlags, s.csumOK)
		}
	}
}

// TestLinuxTCPThroughClusterIP opens a real TCP connection from pod A to a
// ClusterIP whose backend is pod B, through the TAPs and NAT44-ED, and
// echoes 256 KiB through it.
func TestLinuxTCPThroughClusterIP(t *testing.T) {
	sim, nsA, nsB, do := tapPairAPI(t)
	do(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}, nil)
	do(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true}, nil)
	for _, sw := range []interface_types.InterfaceIndex{1, 2} {
		do(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: sw}, nil)
		do(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: sw}, nil)
	}
	do(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4("10.96.9.9"), ExternalPort: 80, Protocol: protoTCP, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{
			{Addr: ip4("10.95.2.2"), Port: 8080, Probability: 1}, {Addr: ip4("10.95.3.3"), Port: 8080, Probability: 0}}}, nil)

	var ln net.Listener
	if err := inNS(nsB, func() (err error) { ln, err = net.Listen("tcp4", "10.95.2.2:8080"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	var c net.Conn
	err := inNS(nsA, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err = d.Dial("tcp4", "10.96.9.9:80")
		return err
	})
	if err != nil {
		t.Fatalf("connect to the ClusterIP: %v\n%s", err, sim.cliForTest("show errors"))
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	data := make([]byte, 256<<10)
	for k := range data {
		data[k] = byte(k * 7)
	}
	go func() { _, _ = c.Write(data) }()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo: %v\n%s", err, sim.cliForTest("show errors"))
	}
	if !bytes.Equal(got, data) {
		t.Fatal("echoed data differs")
	}
	s := sim.Sessions()
	if len(s) != 1 || s[0].InsideAddr.String() != "10.95.2.2:8080" || s[0].OutsideAddr.String() != "10.96.9.9:80" || s[0].TotalPkts < 100 {
		t.Errorf("sessions %+v", s)
	}
}

// TestLinuxNodePortThroughBoundNIC opens a real TCP connection from a
// client namespace on the "node network" (a veth bound to the simulated
// NIC) to a NodePort whose backend is a pod behind a TAP, and echoes
// 256 KiB: the client's TSO super-frames are segmented by the raw-socket
// port, the NIC's output feature DNATs and lets the replies out.
func TestLinuxNodePortThroughBoundNIC(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	veth, nsExt := vethToNS(t, "vsp", "192.168.77.2/24")
	nsPod := fmt.Sprintf("vppsim-np-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", nsPod).CombinedOutput(); err != nil {
		t.Skipf("cannot create a namespace: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", nsPod).Run() })
	e := &testEnv{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	sim, err := New(Options{SocketPath: e.sock, NICs: []string{"GigabitEthernet0/8/0=" + veth}, Linux: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	e.conn, e.ch = e.connect()
	e.addAddr(1, "192.168.77.1/24")
	e.up(1)
	tap := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex, UseRandomMac: true, HostIfNameSet: true, HostIfName: "eth0",
		HostNamespaceSet: true, HostNamespace: nsPod,
		HostIP4PrefixSet: true, HostIP4Prefix: ip_types.IP4AddressWithPrefix{Address: ip4("10.95.2.2"), Len: 24},
		HostIP4GwSet: true, HostIP4Gw: ip4("10.95.2.1")}, tap)
	e.addAddr(tap.SwIfIndex, "10.95.2.1/24")
	e.up(tap.SwIfIndex)
	enableNAT(e)
	e.ok(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true})
	e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: tap.SwIfIndex})
	e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: tap.SwIfIndex})
	e.ok(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: ip4("192.168.77.1"), LastIPAddress: ip4("192.168.77.1"), VrfID: noIndex, IsAdd: true})
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY,
		ExternalAddr: ip4("192.168.77.1"), ExternalPort: 30080, Protocol: protoTCP, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{
			{Addr: ip4("10.95.2.2"), Port: 8080, Probability: 1}, {Addr: ip4("10.95.3.3"), Port: 8080, Probability: 0}}})
	e.ok(&nat44_ed.Nat44AddDelIdentityMapping{IsAdd: true, Flags: nat_types.NAT_IS_ADDR_ONLY, IPAddress: ip4("192.168.77.1"),
		Protocol: protoUDP, SwIfIndex: allIfaces, VrfID: 0})

	var ln net.Listener
	if err := inNS(nsPod, func() (err error) { ln, err = net.Listen("tcp4", "10.95.2.2:8080"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		peer <- c.RemoteAddr().String()
		_, _ = io.Copy(c, c)
	}()
	var c net.Conn
	err = inNS(nsExt, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err = d.Dial("tcp4", "192.168.77.1:30080")
		return err
	})
	if err != nil {
		t.Fatalf("connect to the NodePort: %v\n%s", err, sim.cliForTest("show errors"))
	}
	defer c.Close()
	if from := <-peer; !strings.HasPrefix(from, "192.168.77.2:") {
		t.Errorf("backend saw the client as %s, want its own address (NodePort keeps the client IP)", from)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	data := make([]byte, 256<<10)
	for k := range data {
		data[k] = byte(k * 13)
	}
	go func() { _, _ = c.Write(data) }()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("echo: %v\n%s", err, sim.cliForTest("show errors"))
	}
	if !bytes.Equal(got, data) {
		t.Fatal("echoed data differs")
	}
}

// TestLinuxRejectRoutesFailConnectAtOnce: a pod's real TCP connect() to an
// address with an ICMP_UNREACH or ICMP_PROHIBIT route fails at once with
// EHOSTUNREACH (Linux aborts a SYN_SENT socket on any ICMP unreachable);
// a connected UDP socket sees EHOSTUNREACH for ICMP_PROHIBIT (code 10 is a
// hard error in Linux's icmp_err_convert) but no error for ICMP_UNREACH
// (code 1 is soft: reported only with IP_RECVERR).
func TestLinuxRejectRoutesFailConnectAtOnce(t *testing.T) {
	clk := testkit.NewClock()
	sim, nsA, _, do := tapPairAPIWith(t, func(o *Options) { o.Clock = clk })
	for addr, typ := range map[string]fib_types.FibPathType{
		"10.96.7.7/32": fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH, "10.96.7.8/32": fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT} {
		do(&ip.IPRouteAddDel{IsAdd: true, Route: rejectRoute(addr, typ)}, nil)
	}
	for _, dst := range []string{"10.96.7.7:80", "10.96.7.8:80"} {
		t.Run("TCP "+dst, func(t *testing.T) {
			clk.Step(time.Second) // a new window of ip4-null's rate limit
			err := inNS(nsA, func() error {
				c, err := (&net.Dialer{Timeout: 5 * time.Second}).Dial("tcp4", dst)
				if err == nil {
					c.Close()
				}
				return err
			})
			if !errors.Is(err, syscall.EHOSTUNREACH) {
				t.Errorf("connect %s: %v, want EHOSTUNREACH", dst, err)
			}
		})
	}
	t.Run("UDP to unreach", func(t *testing.T) {
		clk.Step(time.Second)
		before := sim.ErrorCount("ip4-icmp-error", "ICMP errors sent")
		c := dialIn(t, nsA, "10.96.7.7:53")
		if _, err := c.Write([]byte("query")); err != nil {
			t.Fatal(err)
		}
		// real time: how long Linux gets to report an error that must not come.
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 64))
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Errorf("read: %v, want a timeout (ICMP host unreachable is a soft error for UDP)", err)
		}
		if sim.ErrorCount("ip4-icmp-error", "ICMP errors sent") != before+1 {
			t.Error("VPP sent no ICMP error")
		}
	})
	t.Run("UDP to prohibit", func(t *testing.T) {
		clk.Step(time.Second)
		c := dialIn(t, nsA, "10.96.7.8:53")
		if _, err := c.Write([]byte("query")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 64)); !errors.Is(err, syscall.EHOSTUNREACH) {
			t.Errorf("read: %v, want EHOSTUNREACH", err)
		}
	})
}
