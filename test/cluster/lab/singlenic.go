package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// Single-NIC nodes (Config.SingleNIC): the node's only link, nic0, carries the node IP
// on the node network and the default route via GatewayIP, both from the lab's DHCP
// server (dhcp.go), before anything of Contiv starts, as on a cloud VM; a host service
// listens on the node IP (HostPort, standing in for sshd and the kubelet); contiv-stn
// steals nic0 for VPP once vpp-sim answers and gives it back when vpp-sim dies;
// contiv.conf sets stealInterface: nic0. vpp-sim has no NIC of its own there: as a VPP
// without DPDK, it drives nic0 as the af_packet interface host-nic0 the agent creates.

// HostPort is the port of the host service of single-NIC nodes: a line echo server on
// the node IP in the node's namespace.
const HostPort = 2222

// singleNICIP is node index's address on the node network in single-NIC mode (the
// NIC's own, as a DHCP server or cloud would have given it).
func singleNICIP(index int) net.IP { return net.IPv4(192, 168, 16, byte(index)).To4() }

// stnRecordFile is where the node's contiv-stn keeps the record of the stolen NIC.
func (n *Node) stnRecordFile() string { return filepath.Join(n.Dir, "stn.json") }

// startDHCP starts the node network's DHCP server in the internet namespace.
func (l *Lab) startDHCP() error {
	s, err := startDHCPServer(netnsPath(l.InternetNetns), "eth0", net.ParseIP(GatewayIP), net.ParseIP(GatewayIP), net.CIDRMask(24, 32))
	if err != nil {
		return err
	}
	l.dhcp = s
	l.cl.add("DHCP server", s.close)
	return nil
}

// setUpSingleNIC gives nic0 the node IP and the default route from the lab's DHCP
// server (a dynamic address with the lease's lifetimes, as a DHCP client sets it),
// starts the host service and contiv-stn. The caller starts vpp-sim afterwards.
func (n *Node) setUpSingleNIC() error {
	ip := singleNICIP(n.index)
	// One NIC, one MAC: the host and VPP use the NIC's burned-in address (nicMAC), so
	// that the wire's ARP caches stay right across a takeover and a give-back.
	mac := nicMAC(n.index)
	if err := runIP("-n", n.Netns, "link", "set", NICLink, "address", net.HardwareAddr(mac[:]).String()); err != nil {
		return err
	}
	n.lab.dhcp.bind(mac[:], ip)
	lease, err := dhcpAcquire(n.NetnsPath(), NICLink, mac[:])
	if err != nil {
		return fmt.Errorf("DHCP on %s: %w", NICLink, err)
	}
	n.dhcpServer = lease.server
	lft := strconv.Itoa(int(lease.lease / time.Second))
	if err := runIP("-n", n.Netns, "addr", "add", lease.ip.String(), "dev", NICLink, "valid_lft", lft, "preferred_lft", lft); err != nil {
		return err
	}
	if err := runIP("-n", n.Netns, "route", "add", "default", "via", lease.router.String(), "dev", NICLink, "proto", "dhcp"); err != nil {
		return err
	}
	hs, err := startHostService(n.NetnsPath(), net.JoinHostPort(ip.String(), strconv.Itoa(HostPort)))
	if err != nil {
		return fmt.Errorf("host service: %w", err)
	}
	n.cl.add("host service", func() error { hs.close(); return nil })
	n.lab.mu.Lock()
	hostUp := n.lab.hostUp
	n.lab.mu.Unlock()
	if hostUp != nil {
		if err := hostUp(n, ip); err != nil {
			return fmt.Errorf("host-up hook: %w", err)
		}
	}
	n.STN = newProcess(n.Name+"/contiv-stn", filepath.Join(n.Dir, "contiv-stn.log"), n.Netns, nil,
		filepath.Join(n.lab.cfg.ContivBinDir, "contiv-stn"), "-link", NICLink, "-state-file", n.stnRecordFile(),
		"-vpp-socket", n.VPPSocket, "-interval", "100ms")
	n.cl.add("contiv-stn", func() error { return n.STN.Stop(syscall.SIGTERM, 10*time.Second) })
	return n.STN.Start()
}

// hostUpHook is called with a single-NIC node and its IP once its host is up
// (SetHostUpHook); the node is not fully started: only its namespace is usable.
type hostUpHook func(n *Node, hostIP net.IP) error

// SetHostUpHook sets fn (nil: none), called for every single-NIC node the lab starts
// from now on once its NIC carries hostIP and its host service listens, before
// anything of Contiv (contiv-stn, vpp-sim, the agent) runs on it: a test opens there
// the connections that must survive the node's first takeover. An error of fn fails
// the node's start.
func (l *Lab) SetHostUpHook(fn hostUpHook) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hostUp = fn
}

// DialHostIP connects from the external client to the host service on hostIP (a
// node's IP, known before its agent reports it).
func (l *Lab) DialHostIP(ctx context.Context, hostIP net.IP) (*HostConn, error) {
	c, err := DialerIn(netnsPath(l.ClientNetns))(ctx, "tcp", net.JoinHostPort(hostIP.String(), strconv.Itoa(HostPort)))
	if err != nil {
		return nil, err
	}
	return &HostConn{c: c, r: bufio.NewReader(c)}, nil
}

// AddHostRoute adds a route out of the node's NIC in its host namespace, as the host's
// own configuration would have it before Contiv starts (SetHostUpHook): dst via the
// gateway via on the node network.
func (n *Node) AddHostRoute(dst, via string) error {
	if !n.lab.cfg.SingleNIC {
		return errNotSingleNIC
	}
	return runIP("-n", n.Netns, "route", "add", dst, "via", via, "dev", NICLink)
}

// StartClientEchoService gives the external client's namespace the extra address ip
// (on its loopback, reached through the client: a router of the node network for that
// address) and starts a line echo server on ip:port there; stop ends both.
func (l *Lab) StartClientEchoService(ip net.IP, port int) (stop func() error, err error) {
	if err := runIP("-n", l.ClientNetns, "addr", "add", ip.String()+"/32", "dev", "lo"); err != nil {
		return nil, err
	}
	hs, err := startHostService(netnsPath(l.ClientNetns), net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	if err != nil {
		return nil, errors.Join(err, runIP("-n", l.ClientNetns, "addr", "del", ip.String()+"/32", "dev", "lo"))
	}
	return func() error {
		hs.close()
		return runIP("-n", l.ClientNetns, "addr", "del", ip.String()+"/32", "dev", "lo")
	}, nil
}

// EchoFromHost connects from the node's host namespace to addr and checks one line
// echoed within timeout.
func (n *Node) EchoFromHost(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := DialerIn(n.NetnsPath())(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	h := &HostConn{c: c, r: bufio.NewReader(c)}
	defer h.Close()
	return h.Echo("from "+n.Name, timeout)
}

// RenewDHCPLease renews the node's lease as the host's DHCP client does in RENEWING
// state (dhcpRenew: a unicast REQUEST from the node IP, through the host's routes, so
// through VPP once the NIC is stolen); it returns the address acknowledged.
func (n *Node) RenewDHCPLease() (string, error) {
	if !n.lab.cfg.SingleNIC {
		return "", errNotSingleNIC
	}
	mac := nicMAC(n.index)
	lease, err := dhcpRenew(n.NetnsPath(), singleNICIP(n.index), n.dhcpServer, mac[:])
	if err != nil {
		return "", err
	}
	return lease.ip.String(), nil
}

// DHCPRenewals counts the renewals of the node's lease that the lab's DHCP server
// acknowledged.
func (n *Node) DHCPRenewals() int {
	if n.lab.dhcp == nil {
		return 0
	}
	mac := nicMAC(n.index)
	return n.lab.dhcp.renewalsOf(mac[:])
}

// hostService is a line echo server: it answers every line with the same line.
type hostService struct {
	ln net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	cs map[net.Conn]bool
}

func startHostService(netnsPath, addr string) (*hostService, error) {
	ln, err := nsrun.Listen(netnsPath, "tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &hostService{ln: ln, cs: map[net.Conn]bool{}}
	hs.wg.Add(1)
	go hs.serve()
	return hs, nil
}

func (hs *hostService) serve() {
	defer hs.wg.Done()
	for {
		c, err := hs.ln.Accept()
		if err != nil {
			return
		}
		hs.mu.Lock()
		hs.cs[c] = true
		hs.mu.Unlock()
		hs.wg.Add(1)
		go func() {
			defer hs.wg.Done()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break
				}
				if _, err := c.Write([]byte(line)); err != nil {
					break
				}
			}
			hs.mu.Lock()
			delete(hs.cs, c)
			hs.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// close stops the listener and every connection, and waits for them.
func (hs *hostService) close() {
	_ = hs.ln.Close()
	hs.mu.Lock()
	for c := range hs.cs {
		_ = c.Close()
	}
	hs.mu.Unlock()
	hs.wg.Wait()
}

// HostConn is a connection of the external client to a node's host service.
type HostConn struct {
	c net.Conn
	r *bufio.Reader
}

// DialHost connects from the external client to the host service of node n.
func (l *Lab) DialHost(ctx context.Context, n *Node) (*HostConn, error) {
	return l.DialHostIP(ctx, n.IP)
}

// Echo sends one line and waits up to timeout for it to come back.
func (h *HostConn) Echo(line string, timeout time.Duration) error {
	if err := h.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := h.c.Write([]byte(line + "\n")); err != nil {
		return err
	}
	got, err := h.r.ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return fmt.Errorf("host service echoed %q, want %q", got, line)
	}
	return nil
}

// Close closes the connection.
func (h *HostConn) Close() error { return h.c.Close() }

// errNotSingleNIC is returned by single-NIC operations on a two-NIC lab.
var errNotSingleNIC = errors.New("the lab's nodes are not single-NIC (Config.SingleNIC)")

// NICAddrs lists the IPv4 addresses on the node's NIC as the host sees them (empty
// while VPP holds the NIC).
func (n *Node) NICAddrs() ([]string, error) {
	if !n.lab.cfg.SingleNIC {
		return nil, errNotSingleNIC
	}
	var out []string
	err := nsrun.Run(n.NetnsPath(), func() error {
		l, err := net.InterfaceByName(NICLink)
		if err != nil {
			return err
		}
		addrs, err := l.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				out = append(out, ipn.String())
			}
		}
		return nil
	})
	return out, err
}

// KillVPP kills vpp-sim (a VPP crash) without starting it again.
func (n *Node) KillVPP() error { return n.Sim.Kill() }

// StartVPP starts vpp-sim again after KillVPP.
func (n *Node) StartVPP(ctx context.Context) error { return n.startSim(ctx) }

// SingleNIC tells whether the lab's nodes are single-NIC (Config.SingleNIC).
func (l *Lab) SingleNIC() bool { return l.cfg.SingleNIC }

// STNRecordExists tells whether the node's contiv-stn holds a record (the NIC is
// stolen).
func (n *Node) STNRecordExists() bool {
	_, err := os.Stat(n.stnRecordFile())
	return err == nil
}
