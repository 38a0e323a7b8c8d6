package ipnet

import (
	"fmt"
	"net"
	"strings"

	"github.com/sirupsen/logrus"

	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
)

// With DHCP the main interface has no static address: the VPP DHCP client obtains one,
// and the VPP interface plugin reports the lease. At every resync ipnet reads the
// current lease of the main interface; in between, the watch callback compares each
// new lease with the node IP in use and pushes a NodeIPv4Change (an UpstreamResync)
// when they differ, so that every handler rebuilds its configuration for the new
// address. The callback runs outside the event loop and touches only shared state.

// parseLease returns the leased address (with its prefix length) and the offered
// gateway; the address is nil for a missing or lost lease.
func parseLease(lease *vppif.DHCPLease) (addr *net.IPNet, gw net.IP, err error) {
	if lease == nil || lease.GetHostIpAddress() == "" {
		return nil, nil, nil
	}
	ip, network, err := net.ParseCIDR(lease.GetHostIpAddress())
	if err != nil {
		return nil, nil, fmt.Errorf("host_ip_address %q: %w", lease.GetHostIpAddress(), err)
	}
	if normalized := ip.To4(); normalized != nil {
		ip = normalized
	}
	addr = &net.IPNet{IP: ip, Mask: network.Mask}
	if r := lease.GetRouterIpAddress(); r != "" {
		if gw, _, err = net.ParseCIDR(r); err != nil {
			if gw = net.ParseIP(strings.TrimSpace(r)); gw == nil {
				return nil, nil, fmt.Errorf("router_ip_address %q is not an IP address", r)
			}
		}
		if g4 := gw.To4(); g4 != nil {
			gw = g4
		}
	}
	return addr, gw, nil
}

// watchDHCP records which interface's lease gives the node IP and the address in use,
// and registers the watch callback once.
func (n *IPNet) watchDHCP(s *settings, nodeIP *net.IPNet) {
	dhcpIf := ""
	if s.useDHCP {
		dhcpIf = s.mainIfName
	}
	n.shared.mu.Lock()
	n.shared.dhcpIf = dhcpIf
	n.shared.dhcpAddr = addrString(nodeIP)
	start := dhcpIf != "" && !n.shared.watching && n.VPPIfPlugin != nil
	if start {
		n.shared.watching = true
	}
	n.shared.mu.Unlock()
	if start {
		n.VPPIfPlugin.WatchDHCPLeases(n.onDHCPLease)
	}
}

// onDHCPLease pushes a NodeIPv4Change when a lease of the main interface brings an
// address (with prefix length) other than the one in use or already pushed, or none.
func (n *IPNet) onDHCPLease(lease *vppif.DHCPLease) {
	if lease == nil || lease.GetIsIpv6() {
		return
	}
	addr, gw, err := parseLease(lease)
	log := n.Log.WithField("interface", lease.GetInterfaceName())
	if err != nil {
		log.WithError(err).Warn("ignoring an invalid DHCP lease")
		return
	}
	n.shared.mu.Lock()
	if n.shared.dhcpIf == "" || lease.GetInterfaceName() != n.shared.dhcpIf || addrString(addr) == n.shared.dhcpAddr {
		n.shared.mu.Unlock()
		return
	}
	n.shared.dhcpAddr = addrString(addr) // pushed once, whatever the number of callbacks
	n.shared.mu.Unlock()
	ev := &NodeIPv4Change{DefaultGw: gw}
	if addr != nil {
		ev.NodeIP = addr.IP
		ev.NodeIPNet = &net.IPNet{IP: addr.IP.Mask(addr.Mask), Mask: addr.Mask}
	}
	log.WithFields(logrus.Fields{"nodeIP": ipString(ev.NodeIP), "gateway": ipString(gw)}).
		Info("DHCP lease changed the node IP")
	if n.EventLoop == nil {
		log.Error("DHCP lease changed the node IP, but there is no event loop to tell")
		return
	}
	if err := n.EventLoop.PushEvent(ev); err != nil {
		log.WithError(err).Error("pushing NodeIPv4Change failed")
	}
}

// addrString is the address with its prefix length, "" for none.
func addrString(addr *net.IPNet) string {
	if addr == nil {
		return ""
	}
	return addr.String()
}
