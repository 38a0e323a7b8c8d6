package l3plugin

import (
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

// Scheduler is what the plugin needs of the KV scheduler.
type Scheduler interface {
	RegisterKVDescriptor(descriptors ...*kvapi.KVDescriptor) error
	GetMetadataMap(descriptor string) kvapi.MetadataMap
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered, and where the
	// ifplugin metadata map is read. Required.
	Scheduler Scheduler
	// NsPlugin opens namespaces. Required.
	NsPlugin nsplugin.API
}

// Plugin is the Linux L3 plugin: it registers the route and ARP descriptors.
// It must be initialised after ifplugin.
type Plugin struct {
	Deps
}

// String names the plugin.
func (p *Plugin) String() string { return "linux-l3plugin" }

// Init registers the route and ARP descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.NsPlugin == nil {
		return errors.New("linux-l3plugin: Scheduler and NsPlugin are required")
	}
	p.Log = infra.LoggerOr(p.Log, p.String())
	deps := DescriptorDeps{
		Log:      p.Log,
		NsPlugin: p.NsPlugin,
		IfMetadata: func() kvapi.MetadataMap {
			return p.Scheduler.GetMetadataMap(ifplugin.InterfaceDescriptorName)
		},
	}
	return p.Scheduler.RegisterKVDescriptor(NewRouteDescriptor(deps), NewARPDescriptor(deps))
}

// Close does nothing: the plugin holds no resources.
func (p *Plugin) Close() error { return nil }
