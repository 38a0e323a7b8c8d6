package l2plugin

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/l2"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Descriptor names.
const (
	// BDDescriptorName names the bridge domain descriptor (and its metadata map).
	BDDescriptorName = "vpp-bridge-domain"
	// BDInterfaceDescriptorName names the descriptor of bridge domain memberships.
	BDInterfaceDescriptorName = "vpp-bd-interface"
	// FIBDescriptorName names the L2 FIB entry descriptor.
	FIBDescriptorName = "vpp-l2-fib"
)

// Dependency labels.
const (
	// InterfaceDep is the label of a membership's dependency on its interface.
	InterfaceDep = "interface-exists"
	// BridgeDomainDep is the label of a FIB entry's dependency on its bridge domain.
	BridgeDomainDep = "bridge-domain-exists"
	// BDInterfaceDep is the label of a FIB entry's dependency on its outgoing
	// interface being in the bridge domain.
	BDInterfaceDep = "interface-in-bridge-domain"
)

// noIndex is VPP's ~0.
const noIndex = ^uint32(0)

// messages lists every message the plugin uses (registered with govppmux).
var messages = []govppapi.Message{
	&l2.BridgeDomainAddDelV2{}, &l2.BridgeDomainAddDelV2Reply{},
	&l2.BridgeDomainDump{}, &l2.BridgeDomainDetails{},
	&l2.SwInterfaceSetL2Bridge{}, &l2.SwInterfaceSetL2BridgeReply{},
	&l2.L2fibAddDel{}, &l2.L2fibAddDelReply{},
	&l2.L2FibTableDump{}, &l2.L2FibTableDetails{},
}

// BDMetadata is what the bridge domain descriptor keeps about a bridge domain.
type BDMetadata struct {
	// ID is VPP's bridge domain ID, allocated when the bridge domain was created.
	ID uint32
}

// BDIndex reads bridge domain metadata by name.
type BDIndex struct{ m kvapi.MetadataMap }

// LookupByName returns the metadata of the named bridge domain.
func (x BDIndex) LookupByName(name string) (*BDMetadata, bool) {
	if x.m == nil {
		return nil, false
	}
	v, ok := x.m.GetValue(name)
	if !ok {
		return nil, false
	}
	md, ok := v.(*BDMetadata)
	return md, ok && md != nil
}

// nameByID returns the bridge domain names by VPP ID (dump paths only).
func (x BDIndex) nameByID() map[uint32]string {
	out := map[uint32]string{}
	if x.m == nil {
		return out
	}
	for _, name := range x.m.ListAllNames() {
		if md, ok := x.LookupByName(name); ok {
			out[md.ID] = name
		}
	}
	return out
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log is the plugin's logger; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered (required).
	Scheduler vppbase.Scheduler
	// GoVPP hands out the channel to VPP and checks the plugin's messages (required).
	GoVPP vppbase.GoVPP
}

// Plugin registers the L2 descriptors.
type Plugin struct {
	Deps
	log logrus.FieldLogger
	ch  govppapi.Channel
}

// NewPlugin returns a plugin with the given dependencies (Init not yet called).
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String returns the plugin name.
func (p *Plugin) String() string { return "vpp-l2plugin" }

// Init registers the messages with govppmux, opens a channel and registers the
// descriptors with the scheduler.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-l2plugin: Scheduler and GoVPP are required")
	}
	p.log = infra.LoggerOr(p.Log, p.String())
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, messages)
	if err != nil {
		return err
	}
	p.ch = ch
	if err := p.Scheduler.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		ch.Close()
		return fmt.Errorf("vpp-l2plugin: %w", err)
	}
	return nil
}

// Descriptors returns the plugin's descriptors: bridge domains, their memberships and
// L2 FIB entries.
func (p *Plugin) Descriptors() []*kvapi.KVDescriptor {
	return []*kvapi.KVDescriptor{p.bdDescriptor(), p.bdInterfaceDescriptor(), p.fibDescriptor()}
}

// Close closes the channel.
func (p *Plugin) Close() error {
	if p.ch != nil {
		p.ch.Close()
		p.ch = nil
	}
	return nil
}

// GetBDIndex returns the index of bridge domain metadata (VPP IDs) by name.
func (p *Plugin) GetBDIndex() BDIndex {
	return BDIndex{m: p.Scheduler.GetMetadataMap(BDDescriptorName)}
}

func (p *Plugin) ifIndex() ifaceidx.Index {
	return ifaceidx.New(p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName))
}
