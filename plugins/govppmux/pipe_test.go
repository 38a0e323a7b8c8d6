package govppmux

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// pluginChannel returns a channel of the plugin of e with NAT enabled in the simulator.
func pluginChannel(t *testing.T, e *env) govppapi.Channel {
	t.Helper()
	ch, err := e.plugin.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	if err := ch.SendRequest(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true}).
		ReceiveReply(&nat44_ed.Nat44EdPluginEnableDisableReply{}); err != nil {
		t.Fatal(err)
	}
	return ch
}

// staticMapping is the add (or delete) of a static mapping of 10.96.x.y:80.
func staticMapping(i int, isAdd bool) Call {
	ext := netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).As4()
	return Call{
		Request: &nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: isAdd, ExternalIPAddress: ext, ExternalPort: 80,
			LocalIPAddress: [4]byte{10, 1, byte(i >> 8), byte(i)}, LocalPort: 8080, Protocol: 6, ExternalSwIfIndex: ^interface_types.InterfaceIndex(0)},
		Reply: &nat44_ed.Nat44AddDelStaticMappingV2Reply{},
	}
}

func TestPluginChannelPipelinesOverAStreamInOrderWithVPPErrors(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		ch := pluginChannel(t, e)
		if p := NewPipe(ch); p.st == nil || p != NewPipe(ch) {
			t.Fatal("the plugin's channel has no stream pipe of its own")
		}
		// More than a window, and an add then the delete of the same mapping: VPP
		// executes them in order. The 5th is added twice: the second add fails.
		n := 3*ChannelWindow + 7
		var calls []Call
		for i := range n {
			calls = append(calls, staticMapping(i, true))
		}
		calls = append(calls, staticMapping(5, true), staticMapping(n-1, false))
		errs := PipelineEach(ch, 0, calls)
		for i, err := range errs {
			switch {
			case i == n:
				var vppErr govppapi.VPPApiError
				if !errors.As(err, &vppErr) {
					t.Errorf("second add of mapping 5: %v, want a VPP error", err)
				}
			case err != nil:
				t.Errorf("call %d: %v", i, err)
			}
		}
		if got := len(e.sim.NAT().StaticMappings); got != n-1 {
			t.Errorf("%d static mappings in VPP, want %d", got, n-1)
		}
		// The channel still works for ordinary requests afterwards.
		if err := ping(t, ch); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPipeReplyTimeoutFailsWhatIsInFlightAndTheNextPipelineWorks(t *testing.T) {
	e := newEnv(t)
	ch := pluginChannel(t, e)
	ch.SetReplyTimeout(100 * time.Millisecond)
	if err := e.sim.DelayMessage("nat44_add_del_static_mapping_v2", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	errs := PipelineEach(ch, 0, []Call{staticMapping(1, true), staticMapping(2, true)})
	for i, err := range errs {
		if !errors.Is(err, core.ErrReplyTimeout) {
			t.Errorf("call %d: %v, want a reply timeout", i, err)
		}
	}
	e.sim.ClearFaults()
	// VPP executes the requests of a client in order: the next ones wait for the two
	// delayed ones, whose late replies belong to the stream that timed out.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the delayed requests executed", func() bool { return len(e.sim.NAT().StaticMappings) == 2 })
	// Meanwhile govpp's health check, answered late too, may have declared VPP gone.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "connected", e.plugin.IsConnected)
	errs = PipelineEach(ch, 0, []Call{staticMapping(3, true), {Request: &memclnt.ControlPing{}, Reply: &memclnt.ControlPingReply{}}})
	for i, err := range errs {
		if err != nil {
			t.Errorf("after the timeout, call %d: %v", i, err)
		}
	}
}

func TestPipeOfAForeignChannelUsesTheChannel(t *testing.T) {
	c := &countingChannel{}
	p := NewPipe(c)
	if p.st != nil || p.Window() != DefaultWindow {
		t.Fatalf("pipe of a foreign channel: stream %v, window %d", p.st != nil, p.Window())
	}
	for range 3 {
		if err := p.Send(&memclnt.ControlPing{}); err != nil {
			t.Fatal(err)
		}
	}
	if p.InFlight() != 3 {
		t.Fatalf("%d in flight, want 3", p.InFlight())
	}
	for range 3 {
		if err := p.Receive(&memclnt.ControlPingReply{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Receive(&memclnt.ControlPingReply{}); err == nil || err.Error() != "govppmux: no request in flight" {
		t.Errorf("Receive with nothing in flight: %v, want %q", err, "govppmux: no request in flight")
	}
}

func TestPipelineRefusesToReadAnotherPipelinesReplies(t *testing.T) {
	e := newEnv(t)
	ch := pluginChannel(t, e)
	p := NewPipe(ch)
	if err := p.Send(&memclnt.ControlPing{}); err != nil {
		t.Fatal(err)
	}
	errs := PipelineEach(ch, 0, []Call{staticMapping(1, true)})
	want := "govppmux: nat44_add_del_static_mapping_v2 not sent: 1 requests of the channel's pipe still in flight"
	if errs[0] == nil || errs[0].Error() != want {
		t.Fatalf("PipelineEach with another request in flight on the channel's pipe: %v, want %q", errs[0], want)
	}
	if err := p.Receive(&memclnt.ControlPingReply{}); err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	if len(e.sim.NAT().StaticMappings) != 0 {
		t.Error("the refused pipeline sent its request")
	}
}

func TestPipeNamesAReplyOfAnotherType(t *testing.T) {
	e := newEnv(t)
	ch := pluginChannel(t, e)
	p := NewPipe(ch)
	if err := p.Send(&memclnt.ControlPing{}); err != nil {
		t.Fatal(err)
	}
	err := p.Receive(&memclnt.MemclntKeepaliveReply{})
	want := "govppmux: received control_ping_reply where memclnt_keepalive_reply was expected"
	if err == nil || err.Error() != want {
		t.Fatalf("Receive into another type: %v, want %q", err, want)
	}
	if err := ping(t, ch); err != nil { // the pipe is empty again: the channel works
		t.Fatal(err)
	}
}
