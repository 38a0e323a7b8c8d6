package ifplugin

import (
	"net/netip"
	"sort"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/binapi/dhcp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/vppcalls"
)

// dhcpLeaseDescriptor describes the DHCP leases (state, never configured): values
// under vpp/interface/dhcp-lease/<iface>, pushed as SB notifications when VPP reports
// a lease and read back by Retrieve. Each lease derives the address key
// vpp/interface/<iface>/address/dhcp/<ip>, a property without descriptor (VPP puts
// the address on the interface itself) that unnumbered interfaces can depend on.
func (p *Plugin) dhcpLeaseDescriptor() *kvapi.KVDescriptor {
	return &kvapi.KVDescriptor{
		Name: DHCPLeaseDescriptorName,
		KeySelector: func(key string) bool {
			_, ok := ifmodel.ParseNameFromDHCPLeaseKey(key)
			return ok
		},
		KeyLabel: func(key string) string {
			name, _ := ifmodel.ParseNameFromDHCPLeaseKey(key)
			return name
		},
		DerivedValues: func(key string, value proto.Message) []kvapi.KeyValuePair {
			l, ok := value.(*ifmodel.DHCPLease)
			if !ok || l.HostIpAddress == "" {
				return nil
			}
			return []kvapi.KeyValuePair{{
				Key:   ifmodel.InterfaceAddressKey(l.InterfaceName, ifmodel.AddressDHCP, l.HostIpAddress),
				Value: wrapperspb.String(l.HostIpAddress),
			}}
		},
		Retrieve:             p.retrieveLeases,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	}
}

// retrieveLeases reads the bound leases of every DHCP client and makes them the
// plugin's lease table.
func (p *Plugin) retrieveLeases([]kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	clients, err := p.h.DumpDHCPClients()
	if err != nil {
		return nil, err
	}
	idx := p.GetInterfaceIndex()
	leases := make(map[string]*ifmodel.DHCPLease)
	dhcpIfaces := make(map[uint32]string)
	var out []kvapi.KVWithMetadata
	for sw, c := range clients {
		name, _, ok := idx.LookupBySwIfIndex(sw)
		if !ok {
			continue
		}
		dhcpIfaces[sw] = name
		if !c.Bound {
			continue
		}
		l := leaseValue(name, c)
		leases[name] = l
		out = append(out, kvapi.KVWithMetadata{Key: ifmodel.DHCPLeaseKey(name), Value: l, Origin: kvapi.FromSB})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	p.mu.Lock()
	p.leases = leases
	for sw, name := range dhcpIfaces {
		p.dhcpIfaces[sw] = name
	}
	p.mu.Unlock()
	return out, nil
}

// leaseValue builds the NB-model lease of an interface.
func leaseValue(name string, c *vppcalls.DHCPClient) *ifmodel.DHCPLease {
	l := &ifmodel.DHCPLease{InterfaceName: name, HostName: c.LeaseHostname, IsIpv6: c.IsIPv6,
		HostPhysAddress: c.LeaseMAC.String()}
	if l.HostName == "" {
		l.HostName = c.Hostname
	}
	if c.Address.IsValid() {
		l.HostIpAddress = c.Address.String()
		if c.Router.IsValid() {
			l.RouterIpAddress = netip.PrefixFrom(c.Router, c.Address.Bits()).String()
		}
	}
	return l
}

// trackDHCP records (or forgets, name "") the interface holding a DHCP client, so
// lease events can be mapped to it even before its metadata is stored.
func (p *Plugin) trackDHCP(sw uint32, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if name == "" {
		delete(p.dhcpIfaces, sw)
		return
	}
	p.dhcpIfaces[sw] = name
}

// dropLease forgets the lease of an interface whose DHCP client goes away and tells
// the scheduler it is gone.
func (p *Plugin) dropLease(name string) {
	p.mu.Lock()
	_, had := p.leases[name]
	delete(p.leases, name)
	p.mu.Unlock()
	if !had {
		return
	}
	if err := p.Scheduler.PushSBNotification(kvapi.KVWithMetadata{Key: ifmodel.DHCPLeaseKey(name), Origin: kvapi.FromSB}); err != nil {
		p.log.WithError(err).WithField("interface", name).Warn("cannot report the removed DHCP lease")
	}
	p.notifyWatchers(&ifmodel.DHCPLease{InterfaceName: name})
}

// WatchDHCPLeases implements API.
func (p *Plugin) WatchDHCPLeases(cb func(*ifmodel.DHCPLease)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watchers = append(p.watchers, cb)
}

func (p *Plugin) notifyWatchers(l *ifmodel.DHCPLease) {
	p.mu.RLock()
	watchers := make([]func(*ifmodel.DHCPLease), len(p.watchers))
	copy(watchers, p.watchers)
	p.mu.RUnlock()
	for _, cb := range watchers {
		cb(proto.Clone(l).(*ifmodel.DHCPLease))
	}
}

// watchLeases turns dhcp_compl_event notifications into DHCPLease values until Close.
func (p *Plugin) watchLeases() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case msg, ok := <-p.notif:
			if !ok {
				return
			}
			if ev, isEvent := msg.(*dhcp.DHCPComplEvent); isEvent {
				p.onLeaseEvent(ev)
			}
		}
	}
}

func (p *Plugin) onLeaseEvent(ev *dhcp.DHCPComplEvent) {
	sw := uint32(ev.Lease.SwIfIndex)
	p.mu.RLock()
	name, known := p.dhcpIfaces[sw]
	p.mu.RUnlock()
	log := p.log.WithField("sw_if_index", sw)
	if !known {
		log.Debug("DHCP event for an interface without a DHCP client of ours ignored")
		return
	}
	c := vppcalls.DHCPFromLease("", ev.Lease)
	if !c.Bound || !c.Address.IsValid() {
		log.WithField("interface", name).Info("DHCP lease lost")
		p.dropLease(name)
		return
	}
	l := leaseValue(name, c)
	p.mu.Lock()
	p.leases[name] = l
	p.mu.Unlock()
	log.WithFields(logrus.Fields{"interface": name, "address": l.HostIpAddress, "router": l.RouterIpAddress}).Info("DHCP lease acquired")
	if err := p.Scheduler.PushSBNotification(kvapi.KVWithMetadata{Key: ifmodel.DHCPLeaseKey(name), Value: l, Origin: kvapi.FromSB}); err != nil {
		log.WithError(err).Warn("cannot report the DHCP lease to the scheduler")
	}
	p.notifyWatchers(l)
}
