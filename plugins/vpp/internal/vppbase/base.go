package vppbase

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// ReplyTimeout bounds the wait for each reply on a plugin's channel. It is longer than
// govppmux's default (govpp.conf reply-timeout, 3 s), which still applies to other
// channels: descriptors keep windows of requests in flight during a full resync of
// tens of thousands of values, and a VPP busy with them must not fail values
// spuriously.
const ReplyTimeout = 10 * time.Second

// Scheduler is what every VPP plugin needs of the KV scheduler.
type Scheduler interface {
	// RegisterKVDescriptor registers the plugin's descriptors.
	RegisterKVDescriptor(descriptors ...*kvapi.KVDescriptor) error
	// GetMetadataMap returns the metadata map of a descriptor (e.g. the interface
	// index, ifaceidx.DescriptorName).
	GetMetadataMap(descriptor string) kvapi.MetadataMap
}

// GoVPP opens channels to VPP's binary API; govppmux satisfies it. When it also
// implements MessageRegistry (govppmux does), OpenChannel registers the plugin's
// messages so that a VPP lacking one fails the start-up naming it; when it implements
// govppapi.Connection, descriptors may use streams (DescriptorDeps.Conn).
type GoVPP interface {
	// NewAPIChannel opens a new channel.
	NewAPIChannel() (govppapi.Channel, error)
}

// MessageRegistry declares the messages a plugin uses (govppmux.API).
type MessageRegistry interface {
	// RegisterMessages declares msgs; the error names each message VPP lacks.
	RegisterMessages(msgs ...govppapi.Message) error
}

// OpenChannel registers msgs (when govpp is a MessageRegistry) and opens the plugin's
// channel with ReplyTimeout. Errors are prefixed with the plugin name.
func OpenChannel(plugin string, govpp GoVPP, msgs []govppapi.Message) (govppapi.Channel, error) {
	if govpp == nil {
		return nil, fmt.Errorf("%s: GoVPP is required", plugin)
	}
	if reg, ok := govpp.(MessageRegistry); ok && len(msgs) > 0 {
		if err := reg.RegisterMessages(msgs...); err != nil {
			return nil, fmt.Errorf("%s: %w", plugin, err)
		}
	}
	ch, err := govpp.NewAPIChannel()
	if err != nil {
		return nil, fmt.Errorf("%s: open VPP channel: %w", plugin, err)
	}
	ch.SetReplyTimeout(ReplyTimeout)
	return ch, nil
}

// DescriptorDeps is what every descriptor of a VPP plugin needs.
type DescriptorDeps struct {
	// Log receives the descriptors' messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Ch is the VPP channel. Callbacks run on the scheduler's single transaction
	// goroutine, so the descriptors of one plugin may share it.
	Ch govppapi.Channel
	// Conn, when set, carries the stream requests channels cannot (reply followed by
	// details, e.g. nat44_ed_output_interface_get). Optional.
	Conn govppapi.Connection
	// Ifaces returns the metadata map of the VPP interface descriptor (logical name
	// -> *ifaceidx.Metadata), read at call time. Nil, or a nil map, means no
	// interfaces are known.
	Ifaces func() kvapi.MetadataMap
}

// Descriptor is DescriptorDeps with the defaults filled in, embedded by the
// descriptors of the VPP plugins.
type Descriptor struct {
	// Log is tagged with the descriptor name.
	Log logrus.FieldLogger
	// Ch is the plugin's VPP channel.
	Ch govppapi.Channel
	// Conn is the stream connection, nil when not given.
	Conn   govppapi.Connection
	ifaces func() kvapi.MetadataMap
}

// NewDescriptor fills in the defaults of d for the descriptor called name.
func NewDescriptor(d DescriptorDeps, name string) Descriptor {
	log := infra.LoggerOr(d.Log, name)
	ifaces := d.Ifaces
	if ifaces == nil {
		ifaces = func() kvapi.MetadataMap { return nil }
	}
	return Descriptor{Log: log.WithField("descriptor", name), Ch: d.Ch, Conn: d.Conn, ifaces: ifaces}
}

// Ifaces returns the interface metadata map now (possibly nil).
func (b Descriptor) Ifaces() kvapi.MetadataMap { return b.ifaces() }

// SwIfIndex returns the sw_if_index of a logical interface; the error names the
// interface and what it is needed for.
func (b Descriptor) SwIfIndex(name, what string) (uint32, error) {
	md, ok := ifaceidx.New(b.ifaces()).LookupByName(name)
	if !ok {
		return 0, fmt.Errorf("%s: interface %q is not known to VPP (no sw_if_index)", what, name)
	}
	return md.SwIfIndex, nil
}

// IfaceNames returns sw_if_index -> logical name of every known interface (for dumps:
// one scan instead of one lookup per entry).
func (b Descriptor) IfaceNames() map[uint32]string {
	return InterfaceNames(b.ifaces())
}

// InterfaceNames returns sw_if_index -> logical name for a metadata map of the
// interface descriptor (nil: none).
func InterfaceNames(m kvapi.MetadataMap) map[uint32]string {
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

// Call sends one request and waits for its reply; a non-zero retval comes back as a
// govppapi.VPPApiError, wrapped with the message name.
func Call(ch govppapi.Channel, req, reply govppapi.Message) error {
	if err := ch.SendRequest(req).ReceiveReply(reply); err != nil {
		return fmt.Errorf("%s: %w", req.GetMessageName(), err)
	}
	return nil
}
