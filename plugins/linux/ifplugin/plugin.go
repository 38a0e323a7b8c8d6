package ifplugin

import (
	"errors"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
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
	// Scheduler is where the descriptor is registered. Required.
	Scheduler Scheduler
	// NsPlugin opens namespaces. Required.
	NsPlugin nsplugin.API
	// TapLocator tells where VPP created the Linux side of its TAPs. Optional.
	TapLocator TapLocator
}

// Plugin is the Linux interface plugin: it registers the interface
// descriptor.
type Plugin struct {
	Deps
}

// String names the plugin.
func (p *Plugin) String() string { return "linux-ifplugin" }

// Init registers the interface descriptor.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.NsPlugin == nil {
		return errors.New("linux-ifplugin: Scheduler and NsPlugin are required")
	}
	p.Log = infra.LoggerOr(p.Log, p.String())
	return p.Scheduler.RegisterKVDescriptor(NewInterfaceDescriptor(DescriptorDeps{
		Log:        p.Log,
		NsPlugin:   p.NsPlugin,
		IfMetadata: p.InterfaceMetadata,
		TapLocator: p.TapLocator,
	}))
}

// Close does nothing: the plugin holds no resources.
func (p *Plugin) Close() error { return nil }

// InterfaceMetadata returns the metadata map of Linux interfaces: logical
// name -> *InterfaceMetadata.
func (p *Plugin) InterfaceMetadata() kvapi.MetadataMap {
	return p.Scheduler.GetMetadataMap(InterfaceDescriptorName)
}
