package l3plugin

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// ReplyTimeout bounds the wait for one reply from VPP on the plugin's channel.
const ReplyTimeout = 10 * time.Second

// Scheduler is what the plugin needs of the KV scheduler.
type Scheduler interface {
	RegisterKVDescriptor(descriptors ...*kvapi.KVDescriptor) error
	GetMetadataMap(descriptor string) kvapi.MetadataMap
}

// GoVPP opens channels to VPP's binary API (govppmux satisfies it).
type GoVPP interface {
	NewAPIChannel() (govppapi.Channel, error)
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: the standard logger).
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered. Required.
	Scheduler Scheduler
	// GoVPP gives the channel the descriptors talk to VPP through. Required.
	GoVPP GoVPP
}

// Plugin is the VPP L3 plugin: it registers the descriptors of VRF tables,
// routes, ARP entries, IP neighbor aging and proxy ARP.
type Plugin struct {
	Deps

	ch govppapi.Channel
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-l3plugin" }

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-l3plugin: Scheduler and GoVPP are required")
	}
	if p.Log == nil {
		p.Log = logrus.StandardLogger().WithField("plugin", p.String())
	}
	ch, err := p.GoVPP.NewAPIChannel()
	if err != nil {
		return fmt.Errorf("vpp-l3plugin: open VPP channel: %w", err)
	}
	ch.SetReplyTimeout(ReplyTimeout)
	p.ch = ch
	deps := DescriptorDeps{Log: p.Log, Ch: ch, Ifaces: p.interfaces}
	err = p.Scheduler.RegisterKVDescriptor(
		NewVrfTableDescriptor(deps),
		NewRouteDescriptor(deps),
		NewARPDescriptor(deps),
		NewIPScanNeighborDescriptor(deps),
		NewProxyARPDescriptor(deps),
		NewProxyARPInterfaceDescriptor(deps),
	)
	if err != nil {
		ch.Close()
		p.ch = nil
		return fmt.Errorf("vpp-l3plugin: %w", err)
	}
	return nil
}

// Close closes the VPP channel.
func (p *Plugin) Close() error {
	if p.ch != nil {
		p.ch.Close()
		p.ch = nil
	}
	return nil
}

// interfaces reads the interface metadata map from the scheduler at call
// time (the interface descriptor may register after this plugin).
func (p *Plugin) interfaces() kvapi.MetadataMap {
	return p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName)
}

// DescriptorDeps is what every descriptor of the package needs.
type DescriptorDeps struct {
	// Log receives the descriptors' messages (nil: the standard logger).
	Log logrus.FieldLogger
	// Ch is the VPP channel. Callbacks run on the scheduler's single
	// transaction goroutine, so the descriptors of one plugin may share it.
	Ch govppapi.Channel
	// Ifaces returns the metadata map of the VPP interface descriptor
	// (logical name -> *ifaceidx.Metadata). Nil, or a nil map, means no
	// interfaces are known.
	Ifaces func() kvapi.MetadataMap
}

// base carries DescriptorDeps with defaults filled in.
type base struct {
	log    logrus.FieldLogger
	ch     govppapi.Channel
	ifaces func() kvapi.MetadataMap
}

func newBase(d DescriptorDeps, name string) base {
	log := d.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	ifaces := d.Ifaces
	if ifaces == nil {
		ifaces = func() kvapi.MetadataMap { return nil }
	}
	return base{log: log.WithField("descriptor", name), ch: d.Ch, ifaces: ifaces}
}

// swIfIndex returns the sw_if_index of a logical interface; the error names
// the interface and what it is needed for.
func (b base) swIfIndex(name, what string) (uint32, error) {
	md, ok := ifaceidx.New(b.ifaces()).LookupByName(name)
	if !ok {
		return 0, fmt.Errorf("%s: interface %q is not known to VPP (no sw_if_index)", what, name)
	}
	return md.SwIfIndex, nil
}

// ifaceNames returns sw_if_index -> logical name of every known interface
// (for dumps: one scan instead of one per entry).
func (b base) ifaceNames() map[uint32]string {
	return interfaceNames(b.ifaces())
}

// ifaceAddrs returns the configured addresses of every known interface by
// sw_if_index (used to recognise the connected routes VPP adds by itself).
func (b base) ifaceAddrs() map[uint32][]string {
	m := b.ifaces()
	out := map[uint32][]string{}
	if m == nil {
		return out
	}
	idx := ifaceidx.New(m)
	for _, name := range m.ListAllNames() {
		if md, ok := idx.LookupByName(name); ok {
			out[md.SwIfIndex] = md.IPAddresses
		}
	}
	return out
}

// interfaceNames returns sw_if_index -> logical name for a metadata map of
// the interface descriptor (nil: none).
func interfaceNames(m kvapi.MetadataMap) map[uint32]string {
	out := map[uint32]string{}
	if m == nil {
		return out
	}
	idx := ifaceidx.New(m)
	for _, name := range m.ListAllNames() {
		if md, ok := idx.LookupByName(name); ok {
			out[md.SwIfIndex] = name
		}
	}
	return out
}
