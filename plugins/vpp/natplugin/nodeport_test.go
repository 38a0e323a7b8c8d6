package natplugin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// nodePortService is the DNat44 the service renderer builds for a NodePort
// service: the cluster IP port and, for each node, the node port on both of its IPs
// (the node IP and its management IP), every mapping with the same backends.
func nodePortService(svc, nodes, backends int) *nat.DNat44 {
	locals := func() []*nat.DNat44_StaticMapping_LocalIP {
		out := make([]*nat.DNat44_StaticMapping_LocalIP, backends)
		for k := range out {
			out[k] = lip(fmt.Sprintf("10.1.%d.%d", k, svc&0xff), 8080, 0, 1)
		}
		return out
	}
	label := fmt.Sprintf("default/np%d", svc)
	d := &nat.DNat44{Label: label, StMappings: []*nat.DNat44_StaticMapping{{
		ExternalIp: fmt.Sprintf("10.96.%d.%d", svc>>8, svc&0xff), ExternalPort: 80, Protocol: nat.DNat44_TCP,
		TwiceNat: nat.DNat44_StaticMapping_SELF, LocalIps: locals()}}}
	for n := range nodes {
		for _, ip := range []string{fmt.Sprintf("192.168.16.%d", n+1), fmt.Sprintf("10.20.0.%d", n+1)} {
			d.StMappings = append(d.StMappings, &nat.DNat44_StaticMapping{ExternalIp: ip,
				ExternalPort: uint32(30000 + svc), Protocol: nat.DNat44_TCP, TwiceNat: nat.DNat44_StaticMapping_SELF,
				LocalIps: locals()})
		}
	}
	return d
}

// nodePortServiceAsRendered is nodePortService built the way the service renderer
// builds it: the mappings of the port share one list of locals, and the backend
// addresses are the strings the renderer keeps (the same strings in every rendering).
func nodePortServiceAsRendered(svc, nodes, backends int, addrs []string) *nat.DNat44 {
	d := nodePortService(svc, nodes, 0)
	locals := make([]*nat.DNat44_StaticMapping_LocalIP, backends)
	for k := range locals {
		locals[k] = lip(addrs[(svc*backends+k)%len(addrs)], 8080, 0, 1)
	}
	for _, sm := range d.StMappings {
		sm.LocalIps = locals
	}
	return d
}

// normalizedNAT is the simulator's NAT state in a canonical order, for comparing two
// VPPs that got the same configuration along different paths.
func normalizedNAT(s *vppsim.Sim) vppsim.NAT {
	n := s.NAT()
	for i := range n.LBMappings {
		slices.SortFunc(n.LBMappings[i].Locals, func(a, b vppsim.Backend) int {
			return strings.Compare(a.Addr.String(), b.Addr.String())
		})
	}
	slices.SortFunc(n.LBMappings, func(a, b vppsim.LBMapping) int {
		return strings.Compare(a.External.String(), b.External.String())
	})
	slices.SortFunc(n.StaticMappings, func(a, b vppsim.StaticMapping) int {
		return strings.Compare(a.External.String(), b.External.String())
	})
	return n
}

// expectSameNATAsFreshCreate creates want in a fresh simulator and compares its NAT
// state with the one of got.
func expectSameNATAsFreshCreate(t *testing.T, got *vppsim.Sim, want map[string]proto.Message) {
	t.Helper()
	fresh := newEnv(t)
	if err := newAgent(t, fresh.conn).commit(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if g, w := normalizedNAT(got), normalizedNAT(fresh.sim); !reflect.DeepEqual(g, w) {
		t.Errorf("VPP after the update differs from a fresh create:\n got %+v\nwant %+v", g, w)
	}
}

// TestNodePortUpdateProgramsOnlyTheChangedMappings: a node joining adds, in VPP,
// exactly the two mappings of its IPs per NodePort (nothing is rewritten); a node
// leaving deletes exactly those; an endpoint added to the service adds one local in
// place to each of its LB mappings. After each step VPP holds what a fresh create of
// the new value gives.
func TestNodePortUpdateProgramsOnlyTheChangedMappings(t *testing.T) {
	const services, backends = 3, 4
	e := newEnv(t)
	a := newAgent(t, e.conn)
	vals := func(nodes, backends int) map[string]proto.Message {
		v := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
		for s := range services {
			d := nodePortService(s, nodes, backends)
			v[nat.DNAT44Key(d.Label)] = d
		}
		return v
	}
	if err := a.commit(context.Background(), vals(3, backends)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name           string
		nodes, backend int
		want           map[string]int64
	}{
		{"node joins", 4, backends, map[string]int64{"nat44_add_del_lb_static_mapping": 2 * services}},
		{"node leaves", 3, backends, map[string]int64{"nat44_add_del_lb_static_mapping": 2 * services}},
		// one local per mapping: the cluster IP and 2 x 3 node ports
		{"endpoint added", 3, backends + 1, map[string]int64{"nat44_lb_static_mapping_add_del_local": 7 * services}},
		{"endpoint removed", 3, backends, map[string]int64{"nat44_lb_static_mapping_add_del_local": 7 * services}},
	}
	for _, st := range steps {
		want := vals(st.nodes, st.backend)
		e.sim.ResetMessageCounts()
		if err := a.commit(context.Background(), want); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := e.sim.MessageCounts(); !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: VPP received %v, want exactly %v", st.name, got, st.want)
		}
		expectSameNATAsFreshCreate(t, e.sim, want)
	}
}

// TestEndpointsChangeOfRenderedNodePortServiceChangesLocalsInPlace: every mapping of a
// NodePort service as the renderer builds it (one list of locals shared by the
// mappings of the port) changes when a backend is replaced: each LB mapping gets one
// local added and one removed, nothing else, whether the mappings keep their order or
// come in another one; VPP then holds what a fresh create of the new value gives.
func TestEndpointsChangeOfRenderedNodePortServiceChangesLocalsInPlace(t *testing.T) {
	const nodes, backends = 3, 4
	addrs := []string{"10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.7", "10.1.0.8"}
	e := newEnv(t)
	a := newAgent(t, e.conn)
	global := &nat.Nat44Global{Forwarding: true}
	v := nodePortServiceAsRendered(0, nodes, backends, addrs)
	key := nat.DNAT44Key(v.Label)
	if err := a.commit(context.Background(), map[string]proto.Message{nat.GlobalNAT44Key: global, key: v}); err != nil {
		t.Fatal(err)
	}
	mappings := int64(len(v.StMappings)) // the cluster IP and 2 per node
	for i, reorder := range []bool{false, true, false} {
		next := nodePortServiceAsRendered(0, nodes, backends, addrs[i+1:]) // the first backend out, a new one in
		if reorder {
			slices.Reverse(next.StMappings)
		}
		want := map[string]proto.Message{nat.GlobalNAT44Key: global, key: next}
		e.sim.ResetMessageCounts()
		if err := a.commit(context.Background(), want); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		wantMsgs := map[string]int64{"nat44_lb_static_mapping_add_del_local": 2 * mappings}
		if got := e.sim.MessageCounts(); !reflect.DeepEqual(got, wantMsgs) {
			t.Errorf("change %d (reordered: %v): VPP received %v, want exactly %v", i, reorder, got, wantMsgs)
		}
		expectSameNATAsFreshCreate(t, e.sim, want)
	}
}

// TestUpdateOfReorderedMappingsSendsOnlyTheDifference: the mappings of the new value
// are listed in another order, a node's mappings appear in the middle and another
// node's go, and one mapping's locals change: VPP gets exactly the adds and deletes
// of those mappings and the local changes, and ends up as after a fresh create.
func TestUpdateOfReorderedMappingsSendsOnlyTheDifference(t *testing.T) {
	e := newEnv(t)
	a := newAgent(t, e.conn)
	old := nodePortService(1, 4, 3)
	global := &nat.Nat44Global{Forwarding: true}
	if err := a.commit(context.Background(), map[string]proto.Message{nat.GlobalNAT44Key: global, nat.DNAT44Key(old.Label): old}); err != nil {
		t.Fatal(err)
	}
	upd := nodePortService(1, 5, 3)
	ms := upd.StMappings
	// drop node 2 (mappings 5 and 6), move node 5 (9 and 10) to the front, reverse the rest
	rest := append(append([]*nat.DNat44_StaticMapping{}, ms[:5]...), ms[7:9]...)
	slices.Reverse(rest)
	upd.StMappings = append([]*nat.DNat44_StaticMapping{ms[9], ms[10]}, rest...)
	upd.StMappings[3].LocalIps = append(upd.StMappings[3].LocalIps, lip("10.1.9.9", 8080, 0, 1))
	want := map[string]proto.Message{nat.GlobalNAT44Key: global, nat.DNAT44Key(upd.Label): upd}
	e.sim.ResetMessageCounts()
	if err := a.commit(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	wantMsgs := map[string]int64{"nat44_add_del_lb_static_mapping": 4, "nat44_lb_static_mapping_add_del_local": 1}
	if got := e.sim.MessageCounts(); !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("VPP received %v, want exactly %v", got, wantMsgs)
	}
	expectSameNATAsFreshCreate(t, e.sim, want)
}

// TestFailedUpdateAmongPipelinedUpdatesKeepsItsOldMappings: the updates of a node join
// go to VPP together; when one request of one service fails, that service's other
// request is undone, so VPP holds its old mappings (the scheduler's assumption for a
// failed update) while the other services are updated; committing again completes it.
func TestFailedUpdateAmongPipelinedUpdatesKeepsItsOldMappings(t *testing.T) {
	const services, backends = 5, 3
	e := newEnv(t)
	a := newAgent(t, e.conn)
	vals := func(nodes func(svc int) int) map[string]proto.Message {
		v := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
		for s := range services {
			d := nodePortService(s, nodes(s), backends)
			v[nat.DNAT44Key(d.Label)] = d
		}
		return v
	}
	if err := a.commit(context.Background(), vals(func(int) int { return 3 })); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.FailMessage("nat44_add_del_lb_static_mapping", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	joined := vals(func(int) int { return 4 })
	err := a.commit(context.Background(), joined)
	var te *kvapi.TransactionError
	if !errors.As(err, &te) || len(te.FailedKeys()) != 1 {
		t.Fatalf("commit error = %v, want one service failed", err)
	}
	failed := te.FailedKeys()[0]
	partly := vals(func(int) int { return 4 })
	partly[failed] = nodePortService(int(failed[len(failed)-1]-'0'), 3, backends)
	expectSameNATAsFreshCreate(t, e.sim, partly)
	if st := a.s.GetValueStatus(failed); st.State != kvapi.StateFailed {
		t.Errorf("%s is %v, want FAILED", failed, st.State)
	}
	if err := a.commit(context.Background(), joined); err != nil {
		t.Fatal(err)
	}
	expectSameNATAsFreshCreate(t, e.sim, joined)
	a.expectConfigured(t, joined)
}

// BenchmarkNodeJoin1kNodePorts measures one node joining a cluster of 50 nodes with
// 1,000 NodePort services of 10 endpoints each (101 mappings per service, 101k in
// VPP): the transaction that adds the new node's two IPs to every service, through
// the real scheduler and the simulator over the socket. Reported: time per commit
// and the messages VPP received (2 per service), CPU time of the whole process per
// commit (scheduler, descriptors, govpp, simulator, GC).
func BenchmarkNodeJoin1kNodePorts(b *testing.B) {
	benchmarkNodeJoin(b, func(s, nodes, backends int) *nat.DNat44 { return nodePortService(s, nodes, backends) })
}

// BenchmarkNodeJoin1kNodePortsAsRendered is BenchmarkNodeJoin1kNodePorts with the
// values built as the service renderer builds them (nodePortServiceAsRendered): the
// mappings of a port share their locals, the address strings are the renderer's.
func BenchmarkNodeJoin1kNodePortsAsRendered(b *testing.B) {
	addrs := make([]string, 5000)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("10.1.%d.%d", i>>8, i&0xff)
	}
	benchmarkNodeJoin(b, func(s, nodes, backends int) *nat.DNat44 { return nodePortServiceAsRendered(s, nodes, backends, addrs) })
}

func benchmarkNodeJoin(b *testing.B, service func(s, nodes, backends int) *nat.DNat44) {
	const services, nodes, backends = 1000, 50, 10
	e := newEnv(b)
	a := newAgent(b, e.conn)
	before := map[string]proto.Message{nat.GlobalNAT44Key: &nat.Nat44Global{Forwarding: true}}
	after := map[string]proto.Message{}
	for s := range services {
		d := service(s, nodes, backends)
		before[nat.DNAT44Key(d.Label)] = d
		after[nat.DNAT44Key(d.Label)] = service(s, nodes+1, backends)
	}
	if err := a.commit(context.Background(), before); err != nil {
		b.Fatal(err)
	}
	next := []map[string]proto.Message{after, before} // join, leave, join, ...
	e.sim.ResetMessageCounts()
	var joins time.Duration
	var nJoins int
	cpu := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := a.commit(context.Background(), next[i%2]); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			joins += time.Since(start)
			nJoins++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(e.sim.TotalMessageCount())/float64(b.N), "vpp-msgs/op")
	b.ReportMetric(joins.Seconds()/float64(nJoins), "join-s/op")
}
