package vppsim

import (
	"fmt"
	"net/netip"
	"slices"

	"go.fd.io/govpp/binapi/dhcp"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// DHCPLease is a lease the test pushes to a configured DHCP client with
// PushDHCPLease.
type DHCPLease struct {
	// Address is the leased address with the subnet's prefix length.
	Address netip.Prefix
	// Router is the default gateway; VPP installs a default route via it.
	Router netip.Addr
	// Hostname is the host name of the lease.
	Hostname string
	// DNS are the domain name servers of the lease.
	DNS []netip.Addr
}

func registerDHCP(r *registry) {
	on(r, hDHCPClientConfig)
	on(r, hDHCPClientDump)
}

// hDHCPClientConfig configures (is_add) or removes the DHCP client of an
// interface. The simulator sends no DHCP packets; a lease arrives only
// through PushDHCPLease.
func hDHCPClientConfig(cl *call, m *dhcp.DHCPClientConfig) {
	st := cl.st
	rv := retvalOK
	c := m.Client
	sw := uint32(c.SwIfIndex)
	existing := st.dhcp[sw]
	switch {
	case st.ifaces[sw] == nil:
		rv = retvalInvalidSwIfIndex
	case m.IsAdd && existing != nil:
		rv = retvalInvalidValue // VPP: client already configured
	case m.IsAdd:
		st.dhcp[sw] = &dhcpClient{sw: sw, hostname: c.Hostname, id: slices.Clone(c.ID), wantEvent: c.WantDHCPEvent,
			broadcast: c.SetBroadcastFlag, dscp: uint8(c.Dscp), pid: c.PID, clientIndex: cl.c.index}
	case existing == nil:
		rv = retvalNoSuchEntry
	default:
		st.dropLease(existing)
		delete(st.dhcp, sw)
	}
	cl.send(&dhcp.DHCPClientConfigReply{Retval: rv})
}

func hDHCPClientDump(cl *call, _ *dhcp.DHCPClientDump) {
	st := cl.st
	for _, i := range st.sortedIfaces() {
		d := st.dhcp[i.idx]
		if d == nil {
			continue
		}
		cl.send(&dhcp.DHCPClientDetails{Client: d.apiClient(), Lease: d.apiLease(i)})
	}
}

func (d *dhcpClient) apiClient() dhcp.DHCPClient {
	return dhcp.DHCPClient{SwIfIndex: interface_types.InterfaceIndex(d.sw), Hostname: d.hostname, ID: d.id,
		WantDHCPEvent: d.wantEvent, SetBroadcastFlag: d.broadcast, Dscp: ip_types.IPDscp(d.dscp), PID: d.pid}
}

func (d *dhcpClient) apiLease(i *iface) dhcp.DHCPLease {
	l := dhcp.DHCPLease{SwIfIndex: interface_types.InterfaceIndex(d.sw), State: dhcp.DHCP_CLIENT_STATE_API_DISCOVER,
		Hostname: d.hostname, HostMac: i.mac}
	if d.lease == nil {
		return l
	}
	l.State = dhcp.DHCP_CLIENT_STATE_API_BOUND
	if d.lease.Hostname != "" {
		l.Hostname = d.lease.Hostname
	}
	l.MaskWidth = uint8(d.lease.Address.Bits())
	l.HostAddress = addrToAPI(d.lease.Address.Addr())
	if d.lease.Router.IsValid() {
		l.RouterAddress = addrToAPI(d.lease.Router)
	}
	for _, s := range d.lease.DNS {
		l.DomainServer = append(l.DomainServer, dhcp.DomainServer{Address: addrToAPI(s)})
	}
	l.Count = uint8(len(l.DomainServer))
	return l
}

// dropLease removes the address a lease installed.
func (st *state) dropLease(d *dhcpClient) {
	if d.lease == nil {
		return
	}
	if i := st.ifaces[d.sw]; i != nil {
		i.addrs = slices.DeleteFunc(i.addrs, func(p netip.Prefix) bool { return p == d.lease.Address })
	}
	d.lease = nil
}

// PushDHCPLease simulates the DHCP server answering the client configured
// on the interface: like VPP, the simulator puts the leased address on the
// interface, installs a default route via the router in the interface's
// VRF and, if the client asked for it, sends dhcp_compl_event to the
// client that configured it.
func (s *Sim) PushDHCPLease(swIfIndex uint32, lease DHCPLease) error {
	if !lease.Address.IsValid() || !lease.Address.Addr().Is4() {
		return fmt.Errorf("vppsim: push DHCP lease: address %v is not an IPv4 prefix", lease.Address)
	}
	lease.DNS = slices.Clone(lease.DNS)
	s.mu.Lock()
	st := s.st
	d := st.dhcp[swIfIndex]
	if d == nil {
		s.mu.Unlock()
		return fmt.Errorf("vppsim: push DHCP lease: no DHCP client on sw_if_index %d", swIfIndex)
	}
	st.dropLease(d)
	rv := st.addDelAddress(&interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: interface_types.InterfaceIndex(swIfIndex), IsAdd: true,
		Prefix: ip_types.AddressWithPrefix(prefixToAPI(lease.Address)),
	})
	if rv != retvalOK {
		s.mu.Unlock()
		return fmt.Errorf("vppsim: push DHCP lease: add %v to sw_if_index %d: retval %d", lease.Address, swIfIndex, rv)
	}
	d.lease = &lease
	s.st.gen++ // the lease's default route is in the FIB
	ev := &dhcp.DHCPComplEvent{PID: d.pid, Lease: d.apiLease(st.ifaces[swIfIndex])}
	want, client := d.wantEvent, d.clientIndex
	s.mu.Unlock()
	if want {
		s.sendEvent(client, ev)
	}
	return nil
}
