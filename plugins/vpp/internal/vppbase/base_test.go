package vppbase

import (
	"errors"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/vpe"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// stubChannel records the reply timeout set on it; other methods are not used.
type stubChannel struct {
	govppapi.Channel
	timeout time.Duration
}

func (c *stubChannel) SetReplyTimeout(d time.Duration) { c.timeout = d }

// stubGoVPP is a GoVPP and MessageRegistry with programmable failures.
type stubGoVPP struct {
	ch         *stubChannel
	chErr      error
	regErr     error
	registered []govppapi.Message
}

func (g *stubGoVPP) NewAPIChannel() (govppapi.Channel, error) {
	if g.chErr != nil {
		return nil, g.chErr
	}
	return g.ch, nil
}

func (g *stubGoVPP) RegisterMessages(msgs ...govppapi.Message) error {
	g.registered = append(g.registered, msgs...)
	return g.regErr
}

// channelOnly is a GoVPP without RegisterMessages (e.g. a bare govpp connection).
type channelOnly struct{ ch *stubChannel }

func (g channelOnly) NewAPIChannel() (govppapi.Channel, error) { return g.ch, nil }

func TestOpenChannelRegistersMessagesAndSetsTheReplyTimeout(t *testing.T) {
	msgs := []govppapi.Message{&vpe.ShowVersion{}, &vpe.ShowVersionReply{}}
	g := &stubGoVPP{ch: &stubChannel{}}
	ch, err := OpenChannel("vpp-test", g, msgs)
	if err != nil || ch != g.ch {
		t.Fatalf("OpenChannel = %v, %v", ch, err)
	}
	if len(g.registered) != 2 || g.ch.timeout != ReplyTimeout {
		t.Errorf("registered %d messages, timeout %v; want 2 and %v", len(g.registered), g.ch.timeout, ReplyTimeout)
	}
	if _, err := OpenChannel("vpp-test", channelOnly{ch: &stubChannel{}}, msgs); err != nil {
		t.Errorf("a GoVPP without RegisterMessages: %v", err)
	}
	for name, g := range map[string]GoVPP{
		"unknown message": &stubGoVPP{ch: &stubChannel{}, regErr: errors.New("VPP lacks show_version")},
		"no channel":      &stubGoVPP{chErr: errors.New("not connected")},
		"no GoVPP":        nil,
	} {
		if _, err := OpenChannel("vpp-test", g, msgs); err == nil || !strings.HasPrefix(err.Error(), "vpp-test: ") {
			t.Errorf("%s: OpenChannel = %v, want an error prefixed with the plugin name", name, err)
		}
	}
}

type fakeIfaces map[string]kvapi.Metadata

func (m fakeIfaces) GetValue(label string) (kvapi.Metadata, bool) { v, ok := m[label]; return v, ok }
func (m fakeIfaces) ListAllNames() []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	return out
}

func TestDescriptorLooksUpInterfaces(t *testing.T) {
	ifs := fakeIfaces{"tap1": &ifaceidx.Metadata{SwIfIndex: 3}, "loop0": &ifaceidx.Metadata{SwIfIndex: 1}}
	d := NewDescriptor(DescriptorDeps{Ifaces: func() kvapi.MetadataMap { return ifs }}, "vpp-x")
	if sw, err := d.SwIfIndex("tap1", "add route"); err != nil || sw != 3 {
		t.Errorf("SwIfIndex(tap1) = %d, %v", sw, err)
	}
	if _, err := d.SwIfIndex("nope", "add route"); err == nil || !strings.Contains(err.Error(), `add route: interface "nope"`) {
		t.Errorf("unknown interface: %v", err)
	}
	if names := d.IfaceNames(); len(names) != 2 || names[3] != "tap1" || names[1] != "loop0" {
		t.Errorf("IfaceNames = %v", names)
	}
	empty := NewDescriptor(DescriptorDeps{}, "vpp-x") // no Ifaces, no Log: defaults
	if len(empty.IfaceNames()) != 0 || empty.Log == nil {
		t.Error("defaults not filled in")
	}
}
