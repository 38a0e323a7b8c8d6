package aclplugin

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
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-aclplugin: Scheduler and GoVPP are required")
	}
	if p.Log == nil {
		p.Log = logrus.StandardLogger().WithField("plugin", p.String())
	}
	ch, err := p.GoVPP.NewAPIChannel()
	if err != nil {
		return fmt.Errorf("vpp-aclplugin: open VPP channel: %w", err)
	}
	ch.SetReplyTimeout(ReplyTimeout)
	p.ch = ch
	deps := DescriptorDeps{Log: p.Log, Ch: ch,
		Ifaces: func() kvapi.MetadataMap { return p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName) },
		ACLs:   func() kvapi.MetadataMap { return p.Scheduler.GetMetadataMap(ACLDescriptorName) },
	}
	if err := p.Scheduler.RegisterKVDescriptor(NewACLDescriptor(deps), NewInterfaceACLsDescriptor(deps)); err != nil {
		ch.Close()
		p.ch = nil
		return fmt.Errorf("vpp-aclplugin: %w", err)
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

// DescriptorDeps is what the descriptors need.
type DescriptorDeps struct {
	// Log receives the descriptors' messages (nil: the standard logger).
	Log logrus.FieldLogger
	// Ch is the VPP channel (callbacks run on the scheduler's goroutine).
	Ch govppapi.Channel
	// Ifaces returns the metadata map of the VPP interface descriptor.
	Ifaces func() kvapi.MetadataMap
	// ACLs returns the metadata map of the ACL descriptor (name -> *ACLMetadata).
	ACLs func() kvapi.MetadataMap
}

type base struct {
	log    logrus.FieldLogger
	ch     govppapi.Channel
	ifaces func() kvapi.MetadataMap
	acls   func() kvapi.MetadataMap
}

func newBase(d DescriptorDeps, name string) base {
	log := d.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	none := func() kvapi.MetadataMap { return nil }
	b := base{log: log.WithField("descriptor", name), ch: d.Ch, ifaces: d.Ifaces, acls: d.ACLs}
	if b.ifaces == nil {
		b.ifaces = none
	}
	if b.acls == nil {
		b.acls = none
	}
	return b
}

// call sends one request and waits for its reply; a non-zero retval comes
// back as a govppapi.VPPApiError.
func call(ch govppapi.Channel, req, reply govppapi.Message) error {
	if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return nil
}

// isRetriable: invalid values never succeed when tried again; VPP errors might.
func isRetriable(err error) bool {
	var inv *kvapi.InvalidValueError
	return !errors.As(err, &inv)
}
