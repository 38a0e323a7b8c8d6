package natplugin

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Scheduler is what the plugin needs of the KV scheduler.
type Scheduler = vppbase.Scheduler

// GoVPP opens channels to VPP's binary API (govppmux satisfies it, see
// vppbase.GoVPP). If it also implements govppapi.Connection (streams), the
// output-feature interfaces are read back with nat44_ed_output_interface_get,
// a reply-and-details request that channels cannot carry; without it they
// are assumed to be as configured.
type GoVPP = vppbase.GoVPP

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered. Required.
	Scheduler Scheduler
	// GoVPP gives the channel the descriptors talk to VPP through. Required.
	GoVPP GoVPP
	// Preferred tells the labels of the agent's own DNat44 values, which win conflicts
	// on an external endpoint over the others (conflict.go); nil: DefaultPreferred.
	// (The per-mapping build, natpermapping, does not resolve such conflicts.)
	Preferred func(label string) bool
}

// Plugin is the VPP NAT plugin: it registers the descriptors of the global
// NAT44 configuration, its pool addresses and interface features, and of
// DNAT44 mapping sets.
type Plugin struct {
	Deps

	ch   govppapi.Channel
	dnat *dnatDescriptor
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-natplugin" }

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-natplugin: Scheduler and GoVPP are required")
	}
	p.Log = infra.LoggerOr(p.Log, p.String())
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, messages)
	if err != nil {
		return err
	}
	p.ch = ch
	conn, _ := p.GoVPP.(govppapi.Connection)
	deps := DescriptorDeps{Log: p.Log, Ch: ch, Conn: conn, Ifaces: p.interfaces}
	err = p.Scheduler.RegisterKVDescriptor(append([]*kvapi.KVDescriptor{
		NewNat44GlobalDescriptor(deps),
		NewNat44InterfaceDescriptor(deps),
		NewNat44AddressDescriptor(deps),
	}, p.newDNat44Descriptors(deps)...)...)
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

// DescriptorDeps is what every descriptor of the package needs (the VPP plugins'
// common descriptor dependencies; Conn carries nat44_ed_output_interface_get).
type DescriptorDeps = vppbase.DescriptorDeps

// base is what every descriptor of the package embeds.
type base = vppbase.Descriptor
