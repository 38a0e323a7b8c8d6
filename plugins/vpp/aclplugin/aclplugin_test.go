package aclplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/acl"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

type mapMeta map[string]kvapi.Metadata

func (m mapMeta) GetValue(label string) (kvapi.Metadata, bool) { v, ok := m[label]; return v, ok }
func (m mapMeta) ListAllNames() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

type env struct {
	t    testing.TB
	sim  *vppsim.Sim
	sock string
	conn *core.Connection
	ch   govppapi.Channel
	ifs  mapMeta
	acls mapMeta
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, sock: filepath.Join(t.TempDir(), "api.sock"), ifs: mapMeta{}, acls: mapMeta{}}
	sim, err := vppsim.New(vppsim.Options{SocketPath: e.sock, NICs: []string{"GigabitEthernet0/8/0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	e.sim = sim
	e.conn, err = core.Connect(socketclient.NewVppClient(e.sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.conn.Disconnect)
	e.ch, err = e.conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	e.ch.SetReplyTimeout(5 * time.Second)
	t.Cleanup(e.ch.Close)
	return e
}

func (e *env) deps() DescriptorDeps {
	return DescriptorDeps{DescriptorDeps: vppbase.DescriptorDeps{Log: quietLog(), Ch: e.ch,
		Ifaces: func() kvapi.MetadataMap { return e.ifs }}, ACLs: func() kvapi.MetadataMap { return e.acls }}
}

func (e *env) loopback(name string) uint32 {
	e.t.Helper()
	rep := &interfaces.CreateLoopbackReply{}
	if err := vppbase.Call(e.ch, &interfaces.CreateLoopback{}, rep); err != nil {
		e.t.Fatal(err)
	}
	e.ifs[name] = &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex)}
	return uint32(rep.SwIfIndex)
}

func (e *env) cli(cmd string) string {
	e.t.Helper()
	rep := &vlib.CliInbandReply{}
	if err := vppbase.Call(e.ch, &vlib.CliInband{Cmd: cmd}, rep); err != nil {
		e.t.Fatal(err)
	}
	return rep.Reply
}

func sampleACL(name string, port uint32) *vpp_acl.ACL {
	return &vpp_acl.ACL{Name: name, Rules: []*vpp_acl.ACL_Rule{
		{Action: vpp_acl.ACL_Rule_REFLECT, SourceNetwork: "10.1.1.2/32", Protocol: 6,
			DestinationPortRange: &vpp_acl.ACL_Rule_PortRange{LowerPort: port, UpperPort: port}},
		{Action: vpp_acl.ACL_Rule_DENY},
	}}
}

func TestACLCreateUpdateDeleteAndRetrieveByTag(t *testing.T) {
	e := newEnv(t)
	d := NewACLDescriptor(e.deps())
	a := sampleACL("contiv-policy-a", 80)
	md, err := d.Create(vpp_acl.ACLKey(a.Name), a)
	if err != nil {
		t.Fatal(err)
	}
	idx := md.(*ACLMetadata).Index
	out := e.cli("show acl-plugin acl")
	if !strings.Contains(out, "tag {contiv-policy-a}") || !strings.Contains(out, "0: ipv4 permit+reflect src 10.1.1.2/32 dst 0.0.0.0/0 proto 6 sport 0-65535 dport 80") {
		t.Errorf("VPP after create:\n%s", out)
	}
	// update in place: same index
	b := sampleACL("contiv-policy-a", 81)
	md2, err := d.Update(vpp_acl.ACLKey(a.Name), a, b, md)
	if err != nil || md2.(*ACLMetadata).Index != idx {
		t.Fatalf("update = %v, %v; want index %d kept", md2, err, idx)
	}
	if out := e.cli("show acl-plugin acl"); !strings.Contains(out, "dport 81") || strings.Contains(out, "dport 80") {
		t.Errorf("VPP after update:\n%s", out)
	}
	// an untagged ACL in VPP is not the agent's
	if err := vppbase.Call(e.ch, &acl.ACLAddReplace{ACLIndex: noIndex, Count: 0}, &acl.ACLAddReplaceReply{}); err != nil {
		t.Fatal(err)
	}
	list, err := d.Retrieve([]kvapi.KVWithMetadata{{Key: vpp_acl.ACLKey(b.Name), Value: b, Origin: kvapi.FromNB}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != vpp_acl.ACLKey(b.Name) || list[0].Metadata.(*ACLMetadata).Index != idx {
		t.Fatalf("retrieve = %v", list)
	}
	if !d.ValueComparator(list[0].Key, list[0].Value, b) {
		t.Errorf("retrieved %v is not equivalent to NB's %v", list[0].Value, b)
	}
	if err := d.Delete(vpp_acl.ACLKey(b.Name), b, md2); err != nil {
		t.Fatal(err)
	}
	if out := e.cli("show acl-plugin acl"); strings.Contains(out, "contiv-policy-a") {
		t.Errorf("VPP after delete:\n%s", out)
	}
	// deleting again: VPP's NO_SUCH_ENTRY comes back
	var vppErr govppapi.VPPApiError
	if err := d.Delete(vpp_acl.ACLKey(b.Name), b, md2); !errors.As(err, &vppErr) || vppErr != govppapi.NO_SUCH_ENTRY {
		t.Errorf("second delete: %v", err)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	d := NewACLDescriptor(DescriptorDeps{})
	for _, tt := range []struct {
		acl  *vpp_acl.ACL
		want string
	}{
		{&vpp_acl.ACL{Name: "x"}, "has no rules"},
		{&vpp_acl.ACL{Name: strings.Repeat("n", 64), Rules: []*vpp_acl.ACL_Rule{{}}}, "longer than 63 bytes"},
		{&vpp_acl.ACL{Name: "x", Rules: []*vpp_acl.ACL_Rule{{SourceNetwork: "10.0.0.1/8"}}}, "host bits"},
		{&vpp_acl.ACL{Name: "x", Rules: []*vpp_acl.ACL_Rule{{SourceNetwork: "10.0.0.0/8", DestinationNetwork: "fd00::/8"}}}, "different address families"},
		{&vpp_acl.ACL{Name: "x", Rules: []*vpp_acl.ACL_Rule{{Protocol: 6, DestinationPortRange: &vpp_acl.ACL_Rule_PortRange{LowerPort: 90, UpperPort: 80}}}}, "destination_port_range 90-80"},
		{&vpp_acl.ACL{Name: "x", Rules: []*vpp_acl.ACL_Rule{{Protocol: 300}}}, "protocol 300"},
	} {
		err := d.Validate(vpp_acl.ACLKey(tt.acl.Name), tt.acl)
		var inv *kvapi.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%v) = %v, want an invalid-value error with %q", tt.acl, err, tt.want)
		}
	}
	if err := d.Validate(vpp_acl.ACLKey("ok"), sampleACL("ok", 80)); err != nil {
		t.Errorf("valid ACL refused: %v", err)
	}
}

func TestInterfaceListsAreSetWithOneMessage(t *testing.T) {
	e := newEnv(t)
	ad := NewACLDescriptor(e.deps())
	for _, n := range []string{"in", "out1", "out2"} {
		md, err := ad.Create(vpp_acl.ACLKey(n), sampleACL(n, 80))
		if err != nil {
			t.Fatal(err)
		}
		e.acls[n] = md
	}
	sw := e.loopback("tap-a")
	bd := NewInterfaceACLsDescriptor(e.deps())
	v1 := &vpp_acl.InterfaceACLs{Interface: "tap-a", InputAcls: []string{"in"}, OutputAcls: []string{"out1"}}
	if _, err := bd.Create(vpp_acl.InterfaceKey("tap-a"), v1); err != nil {
		t.Fatal(err)
	}
	e.sim.ResetMessageCounts()
	v2 := &vpp_acl.InterfaceACLs{Interface: "tap-a", InputAcls: []string{"in"}, OutputAcls: []string{"out2"}}
	if _, err := bd.Update(vpp_acl.InterfaceKey("tap-a"), v1, v2, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.TotalMessageCount(); n != 1 || e.sim.MessageCount("acl_interface_set_acl_list") != 1 {
		t.Errorf("rebinding sent %d messages (%v), want one acl_interface_set_acl_list", n, e.sim.MessageCounts())
	}
	got, err := bd.Retrieve(nil)
	if err != nil || len(got) != 1 || !proto.Equal(got[0].Value, v2) {
		t.Fatalf("retrieve = %v, %v", got, err)
	}
	out := e.cli("show acl-plugin interface")
	if !strings.Contains(out, "input acl(s): 0\n  output acl(s): 2\n") {
		t.Errorf("VPP lists:\n%s", out)
	}
	if err := bd.Delete(vpp_acl.InterfaceKey("tap-a"), v2, nil); err != nil {
		t.Fatal(err)
	}
	if out := e.cli("show acl-plugin interface"); out != "" {
		t.Errorf("lists left after delete:\n%s", out)
	}
	_ = sw
	// unknown ACL and unknown interface are errors naming them
	if _, err := bd.Create("", &vpp_acl.InterfaceACLs{Interface: "tap-a", OutputAcls: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown ACL: %v", err)
	}
	if _, err := bd.Create("", &vpp_acl.InterfaceACLs{Interface: "tap-x", OutputAcls: []string{"in"}}); err == nil || !strings.Contains(err.Error(), "tap-x") {
		t.Errorf("unknown interface: %v", err)
	}
}

// testIfaceDescriptor creates loopbacks for interface values and keeps
// ifaceidx metadata, standing in for the VPP interface descriptor.
func testIfaceDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	return &kvapi.KVDescriptor{
		Name:         ifaceidx.DescriptorName,
		NBKeyPrefix:  ifmodel.InterfacePrefix,
		KeySelector:  func(key string) bool { _, ok := ifmodel.ParseNameFromKey(key); return ok },
		KeyLabel:     func(key string) string { n, _ := ifmodel.ParseNameFromKey(key); return n },
		WithMetadata: true,
		Create: func(_ string, v proto.Message) (kvapi.Metadata, error) {
			rep := &interfaces.CreateLoopbackReply{}
			if err := vppbase.Call(ch, &interfaces.CreateLoopback{}, rep); err != nil {
				return nil, err
			}
			tag := &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: rep.SwIfIndex, Tag: v.(*ifmodel.Interface).GetName()}
			if err := vppbase.Call(ch, tag, &interfaces.SwInterfaceTagAddDelReply{}); err != nil {
				return nil, err
			}
			return &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex)}, nil
		},
		// Retrieve finds the loopbacks by tag, so a new scheduler over the same
		// VPP (an agent restart) knows them.
		Retrieve: func([]kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			var out []kvapi.KVWithMetadata
			mr := ch.SendMultiRequest(&interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
			for {
				det := &interfaces.SwInterfaceDetails{}
				last, err := mr.ReceiveReply(det)
				if err != nil || last {
					return out, err
				}
				if det.Tag != "" {
					out = append(out, kvapi.KVWithMetadata{Key: ifmodel.InterfaceKey(det.Tag), Value: &ifmodel.Interface{Name: det.Tag},
						Metadata: &ifaceidx.Metadata{SwIfIndex: uint32(det.SwIfIndex)}, Origin: kvapi.FromNB})
				}
			}
		},
		Delete: func(_ string, _ proto.Message, md kvapi.Metadata) error {
			return vppbase.Call(ch, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(md.(*ifaceidx.Metadata).SwIfIndex)}, &interfaces.DeleteLoopbackReply{})
		},
	}
}

// TestSchedulerRebindsAtomicallyAndDeletesTheOldACL: with the real scheduler,
// a transaction that adds ACL B, moves the interface from A to B and deletes
// A (in that order, as the policy renderer stages it) never leaves the
// interface without an ACL and deletes A once it is unused.
func TestSchedulerRebindsAtomicallyAndDeletesTheOldACL(t *testing.T) {
	e := newEnv(t)
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.RegisterKVDescriptor(testIfaceDescriptor(e.ch)); err != nil {
		t.Fatal(err)
	}
	p := &Plugin{Deps: Deps{Log: quietLog(), Scheduler: s, GoVPP: e.conn}}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	commit := func(kvs ...any) {
		t.Helper()
		txn := s.StartNBTransaction()
		for i := 0; i < len(kvs); i += 2 {
			v, _ := kvs[i+1].(proto.Message)
			txn.SetValue(kvs[i].(string), v)
		}
		if _, err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(out string) *vpp_acl.InterfaceACLs {
		return &vpp_acl.InterfaceACLs{Interface: "tap-a", InputAcls: []string{"contiv-policy-REFLECTION"}, OutputAcls: []string{out}}
	}
	refl := &vpp_acl.ACL{Name: "contiv-policy-REFLECTION", Rules: []*vpp_acl.ACL_Rule{{Action: vpp_acl.ACL_Rule_REFLECT}}}
	// the binding first: it waits for its interface and ACLs
	commit(vpp_acl.InterfaceKey("tap-a"), bind("A"), vpp_acl.ACLKey("A"), sampleACL("A", 80),
		vpp_acl.ACLKey(refl.Name), refl, ifmodel.InterfaceKey("tap-a"), &ifmodel.Interface{Name: "tap-a"})
	if st := s.GetValueStatus(vpp_acl.InterfaceKey("tap-a")); st.State != kvapi.StateConfigured {
		t.Fatalf("binding: %v %v", st.State, st.Error)
	}
	e.sim.ResetMessageCounts()
	commit(vpp_acl.ACLKey("B"), sampleACL("B", 81), vpp_acl.InterfaceKey("tap-a"), bind("B"), vpp_acl.ACLKey("A"), nil)
	counts := e.sim.MessageCounts()
	if counts["acl_interface_set_acl_list"] != 1 || counts["acl_del"] != 1 || counts["acl_add_replace"] != 1 {
		t.Errorf("messages = %v, want one add, one set list, one del", counts)
	}
	out := e.cli("show acl-plugin acl")
	if strings.Contains(out, "tag {A}") || !strings.Contains(out, "tag {B}") {
		t.Errorf("VPP ACLs:\n%s", out)
	}
	// a full resync over a fresh view finds everything in place
	txn := s.StartNBTransaction()
	for k, v := range map[string]proto.Message{vpp_acl.InterfaceKey("tap-a"): bind("B"), vpp_acl.ACLKey("B"): sampleACL("B", 81),
		vpp_acl.ACLKey(refl.Name): refl, ifmodel.InterfaceKey("tap-a"): &ifmodel.Interface{Name: "tap-a"}} {
		txn.SetValue(k, v)
	}
	e.sim.ResetMessageCounts()
	if _, err := txn.Commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"acl_add_replace", "acl_del", "acl_interface_set_acl_list"} {
		if n := e.sim.MessageCount(m); n != 0 {
			t.Errorf("resync of an unchanged state sent %d %s", n, m)
		}
	}
}

// TestFullResyncReplacingAnACLNeverLeavesTheInterfaceUnfiltered: a full
// resync whose NB state binds the interface to a new ACL and no longer has
// the old one (what the policy renderer stages when a pod's rules changed
// while the agent was away, or at a healing resync) must rebind the
// interface in one acl_interface_set_acl_list before deleting the old ACL:
// VPP must never see the interface without its output ACL, nor an acl_del of
// an ACL still applied. Both orders of the ACL names (the resync works in
// key order) are checked, and the first resync of a new agent over the same
// VPP (the policies changed while it was down).
//
// The resync reconciles in key order; before the scheduler's tearDown updated
// such a dependent in place (creating first the values its new content waits
// for), deleting the old ACL deleted the interface's lists (one
// acl_interface_set_acl_list with none) before the new ones were set, and the
// pod was unfiltered for a moment.
func TestFullResyncReplacingAnACLNeverLeavesTheInterfaceUnfiltered(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		restart        bool // the second resync is the first of a new agent
	}{
		{"new ACL sorts after the old one", "contiv-policy-A", "contiv-policy-B", false},
		{"new ACL sorts before the old one", "contiv-policy-Z", "contiv-policy-B", false},
		{"after an agent restart", "contiv-policy-A", "contiv-policy-B", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			var s *kvscheduler.Scheduler
			start := func() {
				t.Helper()
				var err error
				if s, err = kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()}); err != nil {
					t.Fatal(err)
				}
				sched := s
				t.Cleanup(func() { _ = sched.Close() })
				if err := s.RegisterKVDescriptor(testIfaceDescriptor(e.ch)); err != nil {
					t.Fatal(err)
				}
				p := &Plugin{Deps: Deps{Log: quietLog(), Scheduler: s, GoVPP: e.conn}}
				if err := p.Init(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close() })
			}
			start()
			refl := &vpp_acl.ACL{Name: "contiv-policy-REFLECTION", Rules: []*vpp_acl.ACL_Rule{{Action: vpp_acl.ACL_Rule_REFLECT}}}
			bind := func(out string) *vpp_acl.InterfaceACLs {
				return &vpp_acl.InterfaceACLs{Interface: "tap-a", InputAcls: []string{refl.Name}, OutputAcls: []string{out}}
			}
			resync := func(out string, port uint32) {
				t.Helper()
				txn := s.StartNBTransaction()
				for k, v := range map[string]proto.Message{ifmodel.InterfaceKey("tap-a"): &ifmodel.Interface{Name: "tap-a"},
					vpp_acl.ACLKey(refl.Name): refl, vpp_acl.ACLKey(out): sampleACL(out, port), vpp_acl.InterfaceKey("tap-a"): bind(out)} {
					txn.SetValue(k, v)
				}
				if _, err := txn.Commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true)); err != nil {
					t.Fatalf("resync to %s: %v", out, err)
				}
			}
			resync(c.old, 80)
			md, ok := s.GetMetadataMap(ifaceidx.DescriptorName).GetValue("tap-a")
			if !ok {
				t.Fatal("no metadata for tap-a")
			}
			sw := md.(*ifaceidx.Metadata).SwIfIndex
			if in, out := e.sim.InterfaceACLs(sw); fmt.Sprint(in, out) != fmt.Sprintf("[%s] [%s]", refl.Name, c.old) {
				t.Fatalf("before: tap-a lists %v %v", in, out)
			}
			if c.restart {
				start()
			}
			var (
				mu   sync.Mutex // the hook runs on the simulator's goroutine
				seen []string
			)
			e.sim.SetRequestHook(func(name string) {
				if !strings.HasPrefix(name, "acl_") || name == "acl_dump" || name == "acl_interface_list_dump" {
					return
				}
				in, out := e.sim.InterfaceACLs(sw)
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s -> %v %v", name, in, out))
				mu.Unlock()
			})
			e.sim.ResetMessageCounts()
			resync(c.new, 81)
			e.sim.SetRequestHook(nil)
			mu.Lock()
			defer mu.Unlock()
			for _, step := range seen {
				if strings.HasSuffix(step, "[] []") || strings.HasSuffix(step, " []") {
					t.Errorf("tap-a was unfiltered at a step of the resync; VPP saw:\n%s", strings.Join(seen, "\n"))
					break
				}
			}
			if in, out := e.sim.InterfaceACLs(sw); fmt.Sprint(in, out) != fmt.Sprintf("[%s] [%s]", refl.Name, c.new) {
				t.Errorf("after: tap-a lists %v %v", in, out)
			}
			if n := e.sim.MessageCount("acl_interface_set_acl_list"); n != 1 {
				t.Errorf("%d acl_interface_set_acl_list, want 1; VPP saw:\n%s", n, strings.Join(seen, "\n"))
			}
			if out := e.cli("show acl-plugin acl"); strings.Contains(out, "tag {"+c.old+"}") || !strings.Contains(out, "tag {"+c.new+"}") {
				t.Errorf("VPP ACLs after the resync:\n%s", out)
			}
			for _, k := range []string{vpp_acl.ACLKey(c.old), vpp_acl.ACLKey(c.new), vpp_acl.InterfaceKey("tap-a")} {
				if st := s.GetValueStatus(k); st.Error != "" {
					t.Errorf("%s: %v %v", k, st.State, st.Error)
				}
			}
		})
	}
}

// recordingChannel records the names of the requests sent through it (the
// simulator of this round does not implement acl_stats_intf_counters_enable:
// it answers VNET_API_ERROR_UNIMPLEMENTED, which the descriptor logs).
type recordingChannel struct {
	govppapi.Channel
	mu   sync.Mutex
	sent []string
}

func (c *recordingChannel) SendRequest(msg govppapi.Message) govppapi.RequestCtx {
	c.mu.Lock()
	c.sent = append(c.sent, msg.GetMessageName())
	c.mu.Unlock()
	return c.Channel.SendRequest(msg)
}

// take returns the acl_add_replace and acl_stats_intf_counters_enable
// requests sent since the last call.
func (c *recordingChannel) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, name := range c.sent {
		if name == "acl_stats_intf_counters_enable" || name == "acl_add_replace" {
			out = append(out, name)
		}
	}
	c.sent = nil
	return strings.Join(out, " ")
}

// TestACLMatchCountersAreEnabledOncePerResync: VPP counts ACL rule matches only
// after acl_stats_intf_counters_enable, a setting a VPP restart loses. The ACL
// descriptor sends it before its first ACL, not again for the next ones, and
// again after the next full resync (the one that follows a reconnect); VPP's
// refusal does not fail the ACL.
func TestACLMatchCountersAreEnabledOncePerResync(t *testing.T) {
	e := newEnv(t)
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	rec := &recordingChannel{Channel: e.ch}
	deps := e.deps()
	deps.Ch = rec
	log, hook := logtest.NewNullLogger()
	deps.Log = log
	if err := s.RegisterKVDescriptor(NewACLDescriptor(deps)); err != nil {
		t.Fatal(err)
	}
	commit := func(resync bool, acls ...string) string {
		t.Helper()
		txn := s.StartNBTransaction()
		for i, name := range acls {
			txn.SetValue(vpp_acl.ACLKey(name), sampleACL(name, uint32(80+i)))
		}
		ctx := context.Background()
		if resync {
			ctx = kvapi.WithResync(ctx, kvapi.FullResync, true)
		}
		if _, err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return rec.take()
	}
	if got := commit(true, "contiv-policy-a", "contiv-policy-b"); got != "acl_stats_intf_counters_enable acl_add_replace acl_add_replace" {
		t.Errorf("first resync sent %q, want the counters enabled before the ACLs", got)
	}
	if got := commit(false, "contiv-policy-c"); got != "acl_add_replace" {
		t.Errorf("a later ACL sent %q, want the counters enabled once", got)
	}
	if got := commit(true, "contiv-policy-a", "contiv-policy-b", "contiv-policy-c", "contiv-policy-d"); got != "acl_stats_intf_counters_enable acl_add_replace acl_add_replace" {
		t.Errorf("the next resync sent %q, want the counters enabled again before its ACLs (c replaced, d new)", got)
	}
	if n := e.sim.MessageCount("acl_stats_intf_counters_enable"); n != 2 {
		t.Errorf("VPP received %d acl_stats_intf_counters_enable, want 2", n)
	}
	// VPP answers with acl_del_reply's ID: the descriptor must take that for success.
	for _, en := range hook.AllEntries() {
		if en.Level <= logrus.WarnLevel {
			t.Errorf("the enable was not taken for a success: %s (%v)", en.Message, en.Data)
		}
	}
}
