package l3plugin

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

// GoVPP opens channels to VPP's binary API (govppmux satisfies it; see
// vppbase.GoVPP).
type GoVPP = vppbase.GoVPP

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
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
	p.Log = infra.LoggerOr(p.Log, p.String())
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, messages)
	if err != nil {
		return err
	}
	p.ch = ch
	deps := DescriptorDeps{Log: p.Log, Ch: ch, Ifaces: p.interfaces}
	err = p.Scheduler.RegisterKVDescriptor(
		NewVrfTableDescriptor(deps),
		NewRouteDescriptor(deps),
		NewARPDescriptor(deps),
		NewIPScanNeighborDescriptor(deps),
		NewProxyARPDescriptor(deps),
		NewProxyARPInterfaceDescriptor(deps),
		NewProxyNDDescriptor(deps),
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

// DescriptorDeps is what every descriptor of the package needs (the VPP plugins'
// common descriptor dependencies).
type DescriptorDeps = vppbase.DescriptorDeps

// base is what every descriptor of the package embeds.
type base = vppbase.Descriptor

// ifaceAddrs returns the configured addresses of every known interface by
// sw_if_index (used to recognise the connected routes VPP adds by itself).
func ifaceAddrs(b base) map[uint32][]string {
	m := b.Ifaces()
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
