package natplugin

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

// GoVPP opens channels to VPP's binary API (govppmux satisfies it). If it
// also implements govppapi.Connection (streams), the output-feature
// interfaces are read back with nat44_ed_output_interface_get, a
// reply-and-details request that channels cannot carry; without it they
// are assumed to be as configured.
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

// Plugin is the VPP NAT plugin: it registers the descriptors of the global
// NAT44 configuration, its pool addresses and interface features, and of
// DNAT44 mapping sets.
type Plugin struct {
	Deps

	ch   govppapi.Channel
	dnat *dnatDescriptor
}

// newDNat44Descriptor builds the DNat44 descriptor and keeps its state (tests read
// how many requests its pipeline had in flight).
func (p *Plugin) newDNat44Descriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	desc, d := newDNat44(deps)
	p.dnat = d
	return desc
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-natplugin" }

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-natplugin: Scheduler and GoVPP are required")
	}
	if p.Log == nil {
		p.Log = logrus.StandardLogger().WithField("plugin", p.String())
	}
	ch, err := p.GoVPP.NewAPIChannel()
	if err != nil {
		return fmt.Errorf("vpp-natplugin: open VPP channel: %w", err)
	}
	ch.SetReplyTimeout(ReplyTimeout)
	p.ch = ch
	conn, _ := p.GoVPP.(govppapi.Connection)
	deps := DescriptorDeps{Log: p.Log, Ch: ch, Conn: conn, Ifaces: p.interfaces}
	err = p.Scheduler.RegisterKVDescriptor(
		NewNat44GlobalDescriptor(deps),
		NewNat44InterfaceDescriptor(deps),
		NewNat44AddressDescriptor(deps),
		p.newDNat44Descriptor(deps),
	)
	if err != nil {
		ch.Close()
		p.ch = nil
		return fmt.Errorf("vpp-natplugin: %w", err)
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

// interfaces reads the interface metadata map at call time.
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
	// Conn, when set, is used for the stream requests channels cannot carry
	// (nat44_ed_output_interface_get). Optional.
	Conn govppapi.Connection
	// Ifaces returns the metadata map of the VPP interface descriptor
	// (logical name -> *ifaceidx.Metadata); nil means no interfaces known.
	Ifaces func() kvapi.MetadataMap
}

// base carries DescriptorDeps with defaults filled in.
type base struct {
	log    logrus.FieldLogger
	ch     govppapi.Channel
	conn   govppapi.Connection
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
	return base{log: log.WithField("descriptor", name), ch: d.Ch, conn: d.Conn, ifaces: ifaces}
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

// ifaceNames returns sw_if_index -> logical name of every known interface.
func (b base) ifaceNames() map[uint32]string {
	m := b.ifaces()
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
