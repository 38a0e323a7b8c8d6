package govppmux

import (
	"errors"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/core"
)

func TestPipelineSendsEveryRequestBeforeReadingAndKeepsOrder(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		ch, err := e.plugin.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		const n = 150 // more than one window and more than the reply buffer
		calls := make([]Call, n)
		for i := range calls {
			calls[i] = Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}
		}
		if err := e.sim.FailMessage("create_loopback", int32(govppapi.INVALID_REGISTRATION), 1); err != nil {
			t.Fatal(err)
		}
		errs := PipelineEach(ch, 0, calls)
		if !errors.Is(errs[0], govppapi.INVALID_REGISTRATION) {
			t.Errorf("first call error = %v", errs[0])
		}
		seen := map[interface_types.InterfaceIndex]bool{}
		for i := 1; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("call %d: %v", i, errs[i])
			}
			sw := calls[i].Reply.(*interfaces.CreateLoopbackReply).SwIfIndex
			if seen[sw] {
				t.Fatalf("sw_if_index %d returned twice", sw)
			}
			seen[sw] = true
		}
		if got := len(e.sim.Interfaces()); got != 1+1+n-1 { // local0, NIC, loopbacks
			t.Errorf("simulator holds %d interfaces", got)
		}
		joined := JoinErrors(calls, errs)
		if joined == nil || !strings.HasPrefix(joined.Error(), "create_loopback: ") {
			t.Errorf("JoinErrors = %v", joined)
		}
		if err := Pipeline(ch, calls[:2]...); err != nil {
			t.Errorf("Pipeline of two loopbacks: %v", err)
		}
	})
}

func TestDumpAndDumpEach(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		ch, err := e.plugin.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		ifs, err := Dump[interfaces.SwInterfaceDetails](ch, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		if err != nil || len(ifs) != 2 || ifs[1].InterfaceName != testNIC {
			t.Fatalf("Dump = %v, %v", ifs, err)
		}
		pfx, _ := ip_types.ParseAddressWithPrefix("10.1.1.1/24")
		add := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: ifs[1].SwIfIndex, IsAdd: true, Prefix: pfx}
		if err := Pipeline(ch, Call{Request: add, Reply: &interfaces.SwInterfaceAddDelAddressReply{}}); err != nil {
			t.Fatal(err)
		}
		reqs := []govppapi.Message{
			&ip.IPAddressDump{SwIfIndex: ifs[0].SwIfIndex},
			&ip.IPAddressDump{SwIfIndex: ifs[1].SwIfIndex},
			&ip.IPAddressDump{SwIfIndex: ifs[1].SwIfIndex, IsIPv6: true},
		}
		for i := 0; i < 10; i++ { // more than the dump window
			reqs = append(reqs, &ip.IPAddressDump{SwIfIndex: ifs[1].SwIfIndex})
		}
		out, errs := DumpEach[ip.IPAddressDetails](ch, reqs)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("dump %d: %v", i, err)
			}
		}
		if len(out[0]) != 0 || len(out[1]) != 1 || out[1][0].Prefix.String() != "10.1.1.1/24" || len(out[2]) != 0 || len(out[12]) != 1 {
			t.Fatalf("DumpEach = %v", out)
		}
	})
}

// countingChannel answers every request at once and records the most requests in
// flight (sent, reply not received yet).
type countingChannel struct {
	govppapi.Channel
	inflight, peak int
}

func (c *countingChannel) SendRequest(govppapi.Message) govppapi.RequestCtx {
	c.inflight++
	c.peak = max(c.peak, c.inflight)
	return countingReply{c}
}

type countingReply struct{ c *countingChannel }

func (r countingReply) ReceiveReply(govppapi.Message) error {
	r.c.inflight--
	return nil
}

// TestWindowFollowsTheChannelsReplyBuffer: channels of NewAPIChannel take
// ChannelWindow requests in flight, those of NewAPIChannelBuffered at most their
// reply buffer, any other channel DefaultWindow; PipelineEach with window 0 uses it.
func TestWindowFollowsTheChannelsReplyBuffer(t *testing.T) {
	e := newEnv(t)
	ch, err := e.plugin.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	small, err := e.plugin.NewAPIChannelBuffered(10, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if w := Window(ch); w != ChannelWindow {
		t.Errorf("Window(NewAPIChannel) = %d, want %d", w, ChannelWindow)
	}
	if w := Window(small); w != 40 {
		t.Errorf("Window(reply buffer 40) = %d, want 40", w)
	}
	if err := ping(t, ch); err != nil {
		t.Errorf("control_ping on a plugin channel: %v", err)
	}
	calls := make([]Call, 1000)
	for i := range calls {
		calls[i] = Call{Request: &interfaces.CreateLoopback{}, Reply: &interfaces.CreateLoopbackReply{}}
	}
	for _, tc := range []struct {
		name string
		ch   govppapi.Channel
		want int
	}{
		{"plugin channel", &sizedChannel{Channel: &countingChannel{}, replyBuf: 2 * ChannelWindow}, ChannelWindow},
		{"small reply buffer", &sizedChannel{Channel: &countingChannel{}, replyBuf: 40}, 40},
		{"foreign channel", &countingChannel{}, DefaultWindow},
	} {
		PipelineEach(tc.ch, 0, calls)
		cc, ok := tc.ch.(*countingChannel)
		if !ok {
			cc = tc.ch.(*sizedChannel).Channel.(*countingChannel)
		}
		if cc.peak != tc.want {
			t.Errorf("%s: %d requests in flight at most, want %d", tc.name, cc.peak, tc.want)
		}
	}
}

// TestPluginChannelHoldsAWindowOfRepliesForASlowReader: a whole window of replies
// waits for a reader that comes back later than govpp's core.ReplyChannelTimeout
// (100 ms, after which core drops a reply that finds the reply buffer full); none is
// lost, on either transport.
func TestPluginChannelHoldsAWindowOfRepliesForASlowReader(t *testing.T) {
	forEachTransport(t, func(t *testing.T, sc string) {
		e := newEnvWith(t, sc)
		ch, err := e.plugin.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		ctxs := make([]govppapi.RequestCtx, Window(ch))
		for i := range ctxs {
			ctxs[i] = ch.SendRequest(&memclnt.ControlPing{})
		}
		time.Sleep(2 * core.ReplyChannelTimeout) // real time: the drop timer is what is tested
		for i, rc := range ctxs {
			if err := rc.ReceiveReply(&memclnt.ControlPingReply{}); err != nil {
				t.Fatalf("reply %d of %d: %v", i, len(ctxs), err)
			}
		}
	})
}
