package natplugin

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
)

func TestMain(m *testing.M) {
	// notice a restarted VPP quickly (read when a connection starts its
	// health check loop, before any test connects)
	core.HealthCheckProbeInterval = 50 * time.Millisecond
	os.Exit(m.Run())
}

// testIfaceDescriptor stands in for the VPP interface descriptor (written
// elsewhere): logical interfaces are tagged loopbacks with addresses; it
// keeps ifaceidx metadata like the real one.
func testIfaceDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	asIf := func(v proto.Message) *ifmodel.Interface { return v.(*ifmodel.Interface) }
	return &kvapi.KVDescriptor{
		Name:        ifaceidx.DescriptorName,
		NBKeyPrefix: ifmodel.InterfacePrefix,
		KeySelector: func(key string) bool { _, ok := ifmodel.ParseNameFromKey(key); return ok },
		KeyLabel: func(key string) string {
			name, _ := ifmodel.ParseNameFromKey(key)
			return name
		},
		WithMetadata: true,
		Create: func(_ string, v proto.Message) (kvapi.Metadata, error) {
			itf := asIf(v)
			rep := &interfaces.CreateLoopbackReply{}
			if err := vppbase.Call(ch, &interfaces.CreateLoopback{}, rep); err != nil {
				return nil, err
			}
			if err := vppbase.Call(ch, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: rep.SwIfIndex, Tag: itf.Name},
				&interfaces.SwInterfaceTagAddDelReply{}); err != nil {
				return nil, err
			}
			for _, a := range itf.IpAddresses {
				p := netip.MustParsePrefix(a)
				req := &interfaces.SwInterfaceAddDelAddress{SwIfIndex: rep.SwIfIndex, IsAdd: true,
					Prefix: ip_types.AddressWithPrefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4,
						Un: ip_types.AddressUnionIP4(p.Addr().As4())}, Len: uint8(p.Bits())}}
				if err := vppbase.Call(ch, req, &interfaces.SwInterfaceAddDelAddressReply{}); err != nil {
					return nil, err
				}
			}
			return &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex), IPAddresses: itf.IpAddresses}, nil
		},
		Delete: func(_ string, _ proto.Message, md kvapi.Metadata) error {
			sw := md.(*ifaceidx.Metadata).SwIfIndex
			return vppbase.Call(ch, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(sw)}, &interfaces.DeleteLoopbackReply{})
		},
		Retrieve: func(corr []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			byName := map[string]kvapi.KVWithMetadata{}
			for _, kv := range corr {
				byName[asIf(kv.Value).Name] = kv
			}
			list, err := govppmux.Dump[interfaces.SwInterfaceDetails](ch, &interfaces.SwInterfaceDump{SwIfIndex: interface_types.InterfaceIndex(noIndex)})
			if err != nil {
				return nil, err
			}
			var out []kvapi.KVWithMetadata
			for _, d := range list {
				if kv, ok := byName[d.Tag]; ok {
					out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: kv.Value, Origin: kvapi.FromNB,
						Metadata: &ifaceidx.Metadata{SwIfIndex: uint32(d.SwIfIndex), IPAddresses: asIf(kv.Value).IpAddresses}})
				}
			}
			return out, nil
		},
	}
}

// agent is the scheduler with the test interface descriptor and the real
// L3 and NAT plugins, over one govpp connection.
type agent struct {
	s   *kvscheduler.Scheduler
	l3  *l3plugin.Plugin
	nat *Plugin
}

func newAgent(t testing.TB, conn *core.Connection) *agent {
	t.Helper()
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	ch.SetReplyTimeout(5 * time.Second)
	t.Cleanup(ch.Close)
	if err := s.RegisterKVDescriptor(testIfaceDescriptor(ch)); err != nil {
		t.Fatal(err)
	}
	a := &agent{s: s,
		l3:  &l3plugin.Plugin{Deps: l3plugin.Deps{Log: quietLog(), Scheduler: s, GoVPP: conn}},
		nat: &Plugin{Deps: Deps{Log: quietLog(), Scheduler: s, GoVPP: conn}}}
	for _, p := range []interface {
		Init() error
		Close() error
	}{a.l3, a.nat} {
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
	}
	return a
}

// commit commits values (nil: delete) as one transaction.
func (a *agent) commit(ctx context.Context, values map[string]proto.Message) error {
	txn := a.s.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	_, err := txn.Commit(ctx)
	return err
}

// expectConfigured checks that every value is CONFIGURED.
func (a *agent) expectConfigured(t *testing.T, values map[string]proto.Message) {
	t.Helper()
	for _, k := range sortedKeys(values) {
		if st := a.s.GetValueStatus(k); st.State != kvapi.StateConfigured {
			t.Errorf("%s: %s %s %v", k, st.State, st.Error, st.Details)
		}
	}
}

// nodeConfig is what ipnet and the service renderer configure on a node,
// in small: interfaces, VRFs, routes of every type, a static neighbor, the
// global NAT and a service with two backends on two ports.
func nodeConfig() map[string]proto.Message {
	vals := map[string]proto.Message{}
	put := func(k string, v proto.Message) { vals[k] = v }
	for _, itf := range []*ifmodel.Interface{
		{Name: "main", IpAddresses: []string{"192.168.16.1/24"}},
		{Name: "tap1", IpAddresses: []string{"10.1.1.1/32"}},
		{Name: "vxlanBVI", IpAddresses: []string{"192.168.30.1/24"}},
	} {
		put(ifmodel.InterfaceKey(itf.Name), itf)
	}
	put(l3.VrfTableKey(1, l3.VrfTable_IPV4), &l3.VrfTable{Id: 1, Label: "mainVRF"})
	put(l3.VrfTableKey(2, l3.VrfTable_IPV4), &l3.VrfTable{Id: 2, Label: "podVRF"})
	for _, r := range []*l3.Route{
		{VrfId: 0, DstNetwork: "0.0.0.0/0", NextHopAddr: "192.168.16.100", OutgoingInterface: "main"},
		{VrfId: 2, DstNetwork: "10.1.1.2/32", NextHopAddr: "10.1.1.2", OutgoingInterface: "tap1"},
		{Type: l3.Route_INTER_VRF, VrfId: 2, DstNetwork: "0.0.0.0/0", ViaVrfId: 1},
		{Type: l3.Route_INTER_VRF, VrfId: 1, DstNetwork: "10.1.0.0/16", ViaVrfId: 2},
		{Type: l3.Route_DROP, VrfId: 2, DstNetwork: "10.96.0.0/12"},
		{VrfId: 1, DstNetwork: "10.2.0.0/16", NextHopAddr: "192.168.30.2", OutgoingInterface: "vxlanBVI", Weight: 2},
	} {
		put(l3.RouteKey(r.VrfId, r.DstNetwork, r.NextHopAddr), r)
	}
	arp := &l3.ARPEntry{Interface: "vxlanBVI", IpAddress: "192.168.30.2", PhysAddress: "12:2b:00:00:00:02", Static: true}
	put(l3.ARPEntryKey(arp.Interface, arp.IpAddress), arp)
	put(nat.GlobalNAT44Key, &nat.Nat44Global{
		Forwarding: true,
		NatInterfaces: []*nat.Nat44Global_Interface{
			{Name: "main", OutputFeature: true},
			{Name: "tap1", IsInside: true}, {Name: "tap1"},
			{Name: "vxlanBVI", IsInside: true}, {Name: "vxlanBVI"},
		},
		AddressPool: []*nat.Nat44Global_Address{
			{Address: "192.168.16.1", VrfId: noIndex},
			{Address: "10.1.1.254", VrfId: noIndex, TwiceNat: true},
		},
	})
	put(nat.DNAT44Key("default/web"), &nat.DNat44{Label: "default/web", StMappings: []*nat.DNat44_StaticMapping{
		{ExternalIp: "10.96.0.10", ExternalPort: 80, Protocol: nat.DNat44_TCP, TwiceNat: nat.DNat44_StaticMapping_SELF,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8080, 2, 1), lip("10.1.1.3", 8080, 2, 1)}},
		{ExternalIp: "10.96.0.10", ExternalPort: 443, Protocol: nat.DNat44_TCP, TwiceNat: nat.DNat44_StaticMapping_SELF,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.2", 8443, 2, 1), lip("10.1.1.3", 8443, 2, 1)}},
	}})
	put(nat.DNAT44Key("DNAT-identities"), &nat.DNat44{Label: "DNAT-identities", IdMappings: []*nat.DNat44_IdentityMapping{
		{IpAddress: "192.168.16.1", Port: 4789, Protocol: nat.DNat44_UDP},
		{IpAddress: "192.168.16.1", VrfId: 2, Protocol: nat.DNat44_UDP},
	}})
	return vals
}

// destinations traces a TCP packet through VPP's NAT tables: the
// destinations it may leave with, and the sources, sorted.
func destinations(sim *vppsim.Sim, src, dst string) (dsts, srcs []string) {
	out := sim.Translate(vppsim.Packet{Protocol: 6, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst)})
	for _, p := range out {
		dsts = append(dsts, p.Dst.String())
		srcs = append(srcs, p.Src.String())
	}
	sort.Strings(dsts)
	sort.Strings(srcs)
	return dsts, srcs
}

func TestSchedulerProgramsNodeAndService(t *testing.T) {
	e := newEnv(t)
	a := newAgent(t, e.conn)
	ctx := context.Background()
	cfg := nodeConfig()
	if err := a.commit(ctx, cfg); err != nil {
		t.Fatalf("commit: %v", err)
	}
	a.expectConfigured(t, cfg)
	for _, k := range []string{nat.InterfaceNAT44Key("main", false), nat.InterfaceNAT44Key("tap1", true),
		nat.AddressNAT44Key("10.1.1.254", true), nat.AddressNAT44Key("192.168.16.1", false)} {
		if st := a.s.GetValueStatus(k); st.State != kvapi.StateConfigured {
			t.Errorf("derived %s: %s %s", k, st.State, st.Error)
		}
	}

	// a TCP connection from another pod to the service goes to one of the
	// two backends, source kept; a backend reaching itself through the
	// service is source-NATed to the twice-NAT address
	dsts, srcs := destinations(e.sim, "10.1.1.9:40000", "10.96.0.10:80")
	if strings.Join(dsts, " ") != "10.1.1.2:8080 10.1.1.3:8080" || srcs[0] != "10.1.1.9:40000" || srcs[1] != "10.1.1.9:40000" {
		t.Errorf("10.1.1.9 -> 10.96.0.10:80 leaves as %v from %v", dsts, srcs)
	}
	out := e.sim.Translate(vppsim.Packet{Protocol: 6, Src: netip.MustParseAddrPort("10.1.1.2:40000"), Dst: netip.MustParseAddrPort("10.96.0.10:80")})
	for _, p := range out {
		if p.Dst.Addr() == netip.MustParseAddr("10.1.1.2") && p.Src.Addr() != netip.MustParseAddr("10.1.1.254") {
			t.Errorf("hairpin to itself not twice-NATed: %+v", p)
		}
	}
	if b := e.sim.LookupDNAT(17, netip.MustParseAddr("192.168.16.1"), 4789); len(b) != 1 || b[0].VRF != 0 {
		t.Errorf("VXLAN identity mapping: %+v", b)
	}

	// one backend goes away: only that mapping changes (LB of two becomes a
	// static mapping), the other port is not touched
	web := proto.Clone(cfg[nat.DNAT44Key("default/web")]).(*nat.DNat44)
	web.StMappings[0].LocalIps = web.StMappings[0].LocalIps[:1]
	e.sim.ResetMessageCounts()
	if err := a.commit(ctx, map[string]proto.Message{nat.DNAT44Key("default/web"): web}); err != nil {
		t.Fatal(err)
	}
	counts := e.sim.MessageCounts()
	delete(counts, "control_ping")
	if len(counts) != 2 || counts["nat44_add_del_lb_static_mapping"] != 1 || counts["nat44_add_del_static_mapping_v2"] != 1 {
		t.Errorf("update sent %v", counts)
	}
	if dsts, _ := destinations(e.sim, "10.1.1.9:40000", "10.96.0.10:80"); strings.Join(dsts, " ") != "10.1.1.2:8080" {
		t.Errorf("after update 10.96.0.10:80 -> %v", dsts)
	}
	if dsts, _ := destinations(e.sim, "10.1.1.9:40000", "10.96.0.10:443"); len(dsts) != 2 {
		t.Errorf("after update 10.96.0.10:443 -> %v", dsts)
	}

	// delete everything
	del := map[string]proto.Message{}
	for k := range cfg {
		del[k] = nil
	}
	if err := a.commit(ctx, del); err != nil {
		t.Fatalf("delete: %v", err)
	}
	n := e.sim.NAT()
	if n.Forwarding || len(n.Interfaces)+len(n.Addresses)+len(n.StaticMappings)+len(n.LBMappings)+len(n.IdentityMappings) != 0 {
		t.Errorf("NAT left: %+v", n)
	}
	for _, tb := range e.sim.Tables() {
		if tb.ID != 0 {
			t.Errorf("table %+v left", tb)
		}
	}
	if r := apiRoutes(e.sim); len(r) != 0 {
		t.Errorf("routes left: %v", r)
	}
	if len(e.sim.Neighbors()) != 0 || len(e.sim.Interfaces()) != 2 {
		t.Errorf("neighbors %+v, interfaces %+v", e.sim.Neighbors(), e.sim.Interfaces())
	}
}

// apiRoutes lists the routes added through the API, by VRF, interfaces
// named by tag.
func apiRoutes(sim *vppsim.Sim) []string {
	names := map[uint32]string{vppsim.NoIndex: "-"}
	for _, i := range sim.Interfaces() {
		names[i.SwIfIndex] = i.Tag
	}
	var out []string
	for _, tb := range sim.Tables() {
		for _, r := range sim.Routes(tb.ID, tb.IPv6) {
			if r.Source != "api" {
				continue
			}
			for _, p := range r.Paths {
				out = append(out, fmt.Sprintf("vrf%d %s %s dev %s via %v table %d w%d", tb.ID, r.Prefix, p.Type, names[p.SwIfIndex], p.NextHop, p.NextHopVRF, p.Weight))
			}
		}
	}
	sort.Strings(out)
	return out
}

// vppState is what the agent configured in VPP, with interfaces named by
// tag (sw_if_index values change across a VPP restart).
func vppState(sim *vppsim.Sim) []string {
	names := map[uint32]string{vppsim.NoIndex: "-"}
	for _, i := range sim.Interfaces() {
		names[i.SwIfIndex] = i.Tag
	}
	out := apiRoutes(sim)
	for _, tb := range sim.Tables() {
		out = append(out, fmt.Sprintf("table %d ipv6=%v %q", tb.ID, tb.IPv6, tb.Name))
	}
	for _, n := range sim.Neighbors() {
		out = append(out, fmt.Sprintf("neighbor %s %s %s static=%v", names[n.SwIfIndex], n.IP, n.MAC, n.Static))
	}
	n := sim.NAT()
	out = append(out, fmt.Sprintf("nat enabled=%v forwarding=%v", n.Enabled, n.Forwarding))
	for _, a := range n.Addresses {
		out = append(out, fmt.Sprintf("nat address %+v", a))
	}
	for _, i := range n.Interfaces {
		out = append(out, fmt.Sprintf("nat interface %s in=%v out=%v output=%v", names[i.SwIfIndex], i.Inside, i.Outside, i.OutputFeature))
	}
	for _, m := range n.StaticMappings {
		out = append(out, fmt.Sprintf("nat static %+v", m))
	}
	for _, m := range n.LBMappings {
		out = append(out, fmt.Sprintf("nat lb %+v", m))
	}
	for _, m := range n.IdentityMappings {
		out = append(out, fmt.Sprintf("nat identity %+v", m))
	}
	sort.Strings(out)
	return out
}

func TestSchedulerFullResyncAfterVPPRestart(t *testing.T) {
	vpp := newRestartableVPP(t)
	sim := vpp.sim
	a := newAgent(t, vpp.conn)
	ctx := context.Background()
	cfg := nodeConfig()
	if err := a.commit(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	want := vppState(sim)

	vpp.restart(t)
	if got := vppState(sim); len(apiRoutes(sim)) != 0 || len(got) >= len(want) {
		t.Fatalf("VPP not reset by the restart: %v", got)
	}
	full := kvapi.WithResync(ctx, kvapi.FullResync, false)
	if err := a.commit(full, cfg); err != nil {
		t.Fatalf("full resync: %v", err)
	}
	a.expectConfigured(t, cfg)
	if got := vppState(sim); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("state after resync:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// a second full resync finds nothing to do: only dumps are sent
	sim.ResetMessageCounts()
	if err := a.commit(full, cfg); err != nil {
		t.Fatal(err)
	}
	for m, n := range sim.MessageCounts() {
		if !strings.HasSuffix(m, "_dump") && !strings.HasSuffix(m, "_get") && m != "control_ping" && m != "nat44_show_running_config" {
			t.Errorf("idle resync sent %s x%d", m, n)
		}
	}
}

// restartableVPP is a simulator with a govpp connection that reconnects when it
// restarts (as govppmux does).
type restartableVPP struct {
	sim    *vppsim.Sim
	conn   *core.Connection
	events chan core.ConnectionEvent
}

func newRestartableVPP(t *testing.T) *restartableVPP {
	t.Helper()
	sock := t.TempDir() + "/api.sock"
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{"GigabitEthernet0/8/0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	conn, events, err := core.AsyncConnect(socketclient.NewVppClient(sock), 50, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	waitState(t, events, core.Connected)
	return &restartableVPP{sim: sim, conn: conn, events: events}
}

// restart empties VPP and waits for the connection to come back.
func (v *restartableVPP) restart(t *testing.T) {
	t.Helper()
	v.sim.Restart()
	waitState(t, v.events, core.Connected)
}

// waitState waits for a connection event with the given state.
func waitState(t *testing.T, events chan core.ConnectionEvent, want core.ConnectionState) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
			if ev.State == core.Failed {
				t.Fatalf("connection failed: %v", ev.Error)
			}
		case <-timeout:
			t.Fatalf("no %v event", want)
		}
	}
}

// the connection the tests give as GoVPP also serves streams
var _ govppapi.Connection = (*core.Connection)(nil)

func TestSchedulerDependenciesAndFailures(t *testing.T) {
	e := newEnv(t)
	a := newAgent(t, e.conn)
	ctx := context.Background()
	svc := &nat.DNat44{Label: "ns/a", StMappings: []*nat.DNat44_StaticMapping{{ExternalIp: "10.96.0.1", ExternalPort: 80,
		LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.5.0.2", 80, 5, 0)}}}}
	route := &l3.Route{Type: l3.Route_INTER_VRF, VrfId: 5, DstNetwork: "0.0.0.0/0"}
	first := map[string]proto.Message{nat.DNAT44Key("ns/a"): svc, l3.RouteKey(5, "0.0.0.0/0", ""): route}

	// without the global NAT configuration and VRF 5 both wait, and VPP
	// hears nothing
	e.sim.ResetMessageCounts()
	if err := a.commit(ctx, first); err != nil {
		t.Fatal(err)
	}
	for k := range first {
		if st := a.s.GetValueStatus(k); st.State != kvapi.StatePending {
			t.Errorf("%s: %s, want PENDING", k, st.State)
		}
	}
	details := strings.Join(a.s.GetValueStatus(nat.DNAT44Key("ns/a")).Details, " ")
	if !strings.Contains(details, DepNAT44Global) || !strings.Contains(details, l3.VrfTableKey(5, l3.VrfTable_IPV4)) {
		t.Errorf("pending details: %s", details)
	}
	if n := e.sim.TotalMessageCount(); n != 0 {
		t.Errorf("pending values sent %v", e.sim.MessageCounts())
	}

	// the dependencies arrive: both are created
	deps := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{}, l3.VrfTableKey(5, l3.VrfTable_IPV4): &l3.VrfTable{Id: 5}}
	if err := a.commit(ctx, deps); err != nil {
		t.Fatal(err)
	}
	a.expectConfigured(t, first)
	if b := e.sim.LookupDNAT(6, netip.MustParseAddr("10.96.0.1"), 80); len(b) != 1 || b[0].VRF != 5 {
		t.Errorf("DNAT backends %+v", b)
	}

	// a VPP failure in a reverted transaction leaves nothing behind
	svcB := &nat.DNat44{Label: "ns/b", StMappings: []*nat.DNat44_StaticMapping{{ExternalIp: "10.96.0.2", ExternalPort: 80,
		LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.5.0.3", 80, 0, 0)}}}}
	route2 := &l3.Route{Type: l3.Route_DROP, VrfId: 5, DstNetwork: "10.200.0.0/16"}
	if err := e.sim.FailMessage("nat44_add_del_static_mapping_v2", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	second := map[string]proto.Message{nat.DNAT44Key("ns/b"): svcB, l3.RouteKey(5, "10.200.0.0/16", ""): route2}
	if err := a.commit(kvapi.WithRevert(ctx), second); err == nil {
		t.Fatal("transaction with a failing mapping succeeded")
	}
	if b := e.sim.LookupDNAT(6, netip.MustParseAddr("10.96.0.2"), 80); b != nil {
		t.Errorf("failed DNAT in VPP: %+v", b)
	}
	for _, r := range apiRoutes(e.sim) {
		if strings.Contains(r, "10.200.0.0/16") {
			t.Errorf("reverted route left: %s", r)
		}
	}

	// removing the global configuration takes the DNATs out first; NAT
	// stays enabled
	if err := a.commit(ctx, map[string]proto.Message{nat.GlobalNAT44Key: nil}); err != nil {
		t.Fatal(err)
	}
	if st := a.s.GetValueStatus(nat.DNAT44Key("ns/a")); st.State != kvapi.StatePending {
		t.Errorf("DNAT without global configuration: %s", st.State)
	}
	if n := e.sim.NAT(); !n.Enabled || len(n.StaticMappings) != 0 {
		t.Errorf("NAT after removing the global configuration: %+v", n)
	}
}

// TestSchedulerRestartedAgentWithoutNATRemovesTheNATOfTheLastRun: an agent restarted
// without any NAT44 value (contiv.conf's serviceRenderer changed to cnat) finds the
// NAT44 configuration of its previous run in VPP at its first full resync and removes
// all of it: mappings, interface features and pool addresses, forwarding off. The
// agent is the only one that configures NAT44 on a Contiv node, so what Nat44Global's
// Retrieve finds is the agent's.
func TestSchedulerRestartedAgentWithoutNATRemovesTheNATOfTheLastRun(t *testing.T) {
	vpp := newRestartableVPP(t)
	ctx := context.Background()
	cfg := nodeConfig()
	if err := newAgent(t, vpp.conn).commit(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	withoutNAT := map[string]proto.Message{}
	for k, v := range cfg {
		if !strings.HasPrefix(k, "config/vpp/nat/") {
			withoutNAT[k] = v
		}
	}
	restarted := newAgent(t, vpp.conn)
	if err := restarted.commit(kvapi.WithResync(ctx, kvapi.FullResync, false), withoutNAT); err != nil {
		t.Fatalf("full resync: %v", err)
	}
	n := vpp.sim.NAT()
	if n.Forwarding || len(n.Addresses)+len(n.Interfaces)+len(n.StaticMappings)+len(n.LBMappings)+len(n.IdentityMappings) > 0 {
		t.Errorf("NAT44 left by the previous run: forwarding=%v addresses %+v interfaces %+v static %d lb %d identity %d",
			n.Forwarding, n.Addresses, n.Interfaces, len(n.StaticMappings), len(n.LBMappings), len(n.IdentityMappings))
	}
}
