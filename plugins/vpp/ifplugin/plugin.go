package ifplugin

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dhcp"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/vppcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Descriptor names besides ifaceidx.DescriptorName (the interface descriptor).
const (
	// AddressDescriptorName names the descriptor of static interface addresses.
	AddressDescriptorName = "vpp-interface-address"
	// UnnumberedDescriptorName names the descriptor of unnumbered settings.
	UnnumberedDescriptorName = "vpp-unnumbered-interface"
	// DHCPLeaseDescriptorName names the descriptor of DHCP leases (SB only).
	DHCPLeaseDescriptorName = "vpp-dhcp-lease"
)

// API is what other plugins may read from the interface plugin.
type API interface {
	// GetInterfaceIndex returns the index of interface metadata (sw_if_index, VRF,
	// addresses, TAP host name) by logical name.
	GetInterfaceIndex() ifaceidx.Index
	// GetDHCPLease returns the lease the DHCP client of the interface holds.
	GetDHCPLease(iface string) (*ifmodel.DHCPLease, bool)
	// WatchDHCPLeases registers cb, called with every new or changed lease and, with an
	// empty host_ip_address, when a lease is lost. cb runs on the plugin's event
	// goroutine and must not block.
	WatchDHCPLeases(cb func(*ifmodel.DHCPLease))
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered (required).
	Scheduler kvapi.KVScheduler
	// GoVPP hands out the channel to VPP and checks the plugin's messages (required).
	GoVPP vppbase.GoVPP
}

// Plugin registers the VPP interface descriptors and follows DHCP leases.
type Plugin struct {
	Deps

	log      logrus.FieldLogger
	ch       govppapi.Channel
	h        *vppcalls.Handler
	hostname string

	notif chan govppapi.Message
	sub   govppapi.SubscriptionCtx
	done  chan struct{}
	wg    sync.WaitGroup

	// mu guards the DHCP state, shared by the descriptors (scheduler goroutine),
	// the lease watcher and readers.
	mu         sync.RWMutex
	dhcpIfaces map[uint32]string             // sw_if_index -> name of interfaces with a DHCP client
	leases     map[string]*ifmodel.DHCPLease // by interface name
	watchers   []func(*ifmodel.DHCPLease)    // told about every lease change

	closeOnce sync.Once
}

var _ API = (*Plugin)(nil)

// NewPlugin returns a plugin with the given dependencies (Init not yet called).
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String returns the plugin name.
func (p *Plugin) String() string { return "vpp-ifplugin" }

// Init registers the messages with govppmux, opens a channel, subscribes to DHCP
// lease events and registers the descriptors with the scheduler.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-ifplugin: Scheduler and GoVPP are required")
	}
	p.log = infra.LoggerOr(p.Log, p.String())
	p.hostname, _ = os.Hostname()
	p.dhcpIfaces = make(map[uint32]string)
	p.leases = make(map[string]*ifmodel.DHCPLease)
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, vppcalls.Messages())
	if err != nil {
		return err
	}
	p.ch, p.h = ch, vppcalls.New(ch)
	p.notif = make(chan govppapi.Message, 100)
	if p.sub, err = ch.SubscribeNotification(p.notif, &dhcp.DHCPComplEvent{}); err != nil {
		ch.Close()
		return fmt.Errorf("vpp-ifplugin: subscribe to DHCP events: %w", err)
	}
	if err := p.Scheduler.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		_ = p.sub.Unsubscribe()
		ch.Close()
		return fmt.Errorf("vpp-ifplugin: %w", err)
	}
	p.done = make(chan struct{})
	p.wg.Add(1)
	go p.watchLeases()
	return nil
}

// Descriptors returns the descriptors of the plugin: interfaces, their static
// addresses, unnumbered settings and DHCP leases.
func (p *Plugin) Descriptors() []*kvapi.KVDescriptor {
	return []*kvapi.KVDescriptor{
		p.interfaceDescriptor(), p.addressDescriptor(), p.unnumberedDescriptor(), p.dhcpLeaseDescriptor(),
	}
}

// Close stops the lease watcher and closes the channel.
func (p *Plugin) Close() error {
	p.closeOnce.Do(func() {
		if p.done != nil {
			close(p.done)
			p.wg.Wait()
		}
		if p.sub != nil {
			_ = p.sub.Unsubscribe()
		}
		if p.ch != nil {
			p.ch.Close()
		}
	})
	return nil
}

// GetInterfaceIndex implements API.
func (p *Plugin) GetInterfaceIndex() ifaceidx.Index {
	return ifaceidx.New(p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName))
}

// GetDHCPLease implements API.
func (p *Plugin) GetDHCPLease(iface string) (*ifmodel.DHCPLease, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	l, ok := p.leases[iface]
	if !ok {
		return nil, false
	}
	return proto.Clone(l).(*ifmodel.DHCPLease), true
}

// ifaceMeta returns the metadata of the named interface.
func (p *Plugin) ifaceMeta(name string) (*ifaceidx.Metadata, error) {
	md, ok := p.GetInterfaceIndex().LookupByName(name)
	if !ok {
		return nil, fmt.Errorf("interface %s: not in the interface index", name)
	}
	return md, nil
}

// NICDeviceType is VPP's device type of physical NICs (DPDK-driven).
const NICDeviceType = "dpdk"

// DumpDPDKInterfaces lists VPP's physical NICs by name, ordered by sw_if_index; contivconf
// picks the first one not configured otherwise as the node's main interface. It uses a
// channel of its own, so it may be called from any goroutine after Init.
func (p *Plugin) DumpDPDKInterfaces() ([]string, error) {
	ch, err := p.GoVPP.NewAPIChannel()
	if err != nil {
		return nil, fmt.Errorf("dump NICs: %w", err)
	}
	defer ch.Close()
	ifs, err := vppcalls.New(ch).DumpInterfaces()
	if err != nil {
		return nil, fmt.Errorf("dump NICs: %w", err)
	}
	sort.Slice(ifs, func(i, j int) bool { return ifs[i].SwIfIndex < ifs[j].SwIfIndex })
	var names []string
	for _, i := range ifs {
		if i.DevType == NICDeviceType {
			names = append(names, i.Name)
		}
	}
	return names, nil
}
