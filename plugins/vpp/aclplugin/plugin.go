package aclplugin

import (
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Scheduler is what the plugin needs of the KV scheduler.
type Scheduler = vppbase.Scheduler

// GoVPP opens channels to VPP's binary API (govppmux satisfies it).
type GoVPP = vppbase.GoVPP

// messages are the VPP messages the plugin uses (registered at start, so a VPP
// without the ACL plugin fails the start naming them).
var messages = []govppapi.Message{
	&acl.ACLAddReplace{}, &acl.ACLAddReplaceReply{},
	&acl.ACLDel{}, &acl.ACLDelReply{},
	&acl.ACLDump{}, &acl.ACLDetails{},
	&acl.ACLInterfaceSetACLList{}, &acl.ACLInterfaceSetACLListReply{},
	&acl.ACLInterfaceListDump{}, &acl.ACLInterfaceListDetails{},
	&acl.ACLStatsIntfCountersEnable{}, &acl.ACLStatsIntfCountersEnableReply{},
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered. Required.
	Scheduler Scheduler
	// GoVPP gives the channel the descriptors talk to VPP through. Required.
	GoVPP GoVPP
}

// Plugin is the VPP ACL plugin: it registers the descriptors of ACLs and of
// interface ACL lists.
type Plugin struct {
	Deps
	ch govppapi.Channel
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-aclplugin" }

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil {
		return fmt.Errorf("%s: Scheduler is required", p.String())
	}
	p.Log = infra.LoggerOr(p.Log, p.String())
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, messages)
	if err != nil {
		return err
	}
	p.ch = ch
	deps := DescriptorDeps{
		DescriptorDeps: vppbase.DescriptorDeps{Log: p.Log, Ch: ch,
			Ifaces: func() kvapi.MetadataMap { return p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName) }},
		ACLs: func() kvapi.MetadataMap { return p.Scheduler.GetMetadataMap(ACLDescriptorName) },
	}
	if err := p.Scheduler.RegisterKVDescriptor(NewACLDescriptor(deps), NewInterfaceACLsDescriptor(deps)); err != nil {
		ch.Close()
		p.ch = nil
		return fmt.Errorf("%s: %w", p.String(), err)
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

// DescriptorDeps is what the descriptors need: the VPP plugins' common
// dependencies and the ACL metadata map.
type DescriptorDeps struct {
	vppbase.DescriptorDeps
	// ACLs returns the metadata map of the ACL descriptor (name ->
	// *ACLMetadata), read at call time; nil means none known.
	ACLs func() kvapi.MetadataMap
}

// base is what the descriptors embed.
type base struct {
	vppbase.Descriptor
	acls func() kvapi.MetadataMap
}

func newBase(d DescriptorDeps, name string) base {
	acls := d.ACLs
	if acls == nil {
		acls = func() kvapi.MetadataMap { return nil }
	}
	return base{Descriptor: vppbase.NewDescriptor(d.DescriptorDeps, name), acls: acls}
}
