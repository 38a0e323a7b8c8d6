package cnat

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// orderedTxn records the operations staged in their order (as the controller's
// transaction keeps them for the scheduler), and the last value of each key.
type orderedTxn struct {
	*st.Txn
	ops     []op
	changes []string
}

func newOrderedTxn() *orderedTxn { return &orderedTxn{Txn: st.NewTxn()} }

func (o *orderedTxn) Put(key string, value proto.Message) {
	o.Txn.Put(key, value)
	o.ops = append(o.ops, op{key, value})
}

func (o *orderedTxn) Delete(key string) {
	o.Txn.Delete(key)
	o.ops = append(o.ops, op{key, nil})
}

func (o *orderedTxn) Describe(change string) { o.changes = append(o.changes, change) }

// index returns the position of the first put (put) or delete of key in o.ops, -1
// when there is none.
func (o *orderedTxn) index(key string, put bool) int {
	return slices.IndexFunc(o.ops, func(x op) bool { return x.key == key && (x.value != nil) == put })
}

// setOf returns the translation set staged under the service's key in txn (nil: none,
// or deleted).
func setOf(txn *st.Txn, id renderer.ServiceID) *vpp_cnat.TranslationSet {
	s, _ := txn.Values[vpp_cnat.TranslationSetKey(id.String())].(*vpp_cnat.TranslationSet)
	return s
}

// ids returns the identities of a set's translations, in the set's order.
func ids(s *vpp_cnat.TranslationSet) []string {
	var out []string
	for _, t := range s.GetTranslations() {
		out = append(out, vpp_cnat.TranslationIDOf(t))
	}
	return out
}

// sortInSetOrder sorts translation identities ("vip/port/PROTO") in the order of sets
// (vpp_cnat.CompareInSet).
func sortInSetOrder(t *testing.T, list []string) {
	t.Helper()
	parse := func(id string) *vpp_cnat.Translation {
		rest, proto, ok1 := cutLast(id, "/")
		vip, port, ok2 := cutLast(rest, "/")
		n, err := strconv.ParseUint(port, 10, 32)
		p, known := vpp_cnat.Protocol_value[proto]
		if !ok1 || !ok2 || err != nil || !known {
			t.Fatalf("%q: not a translation identity", id)
		}
		return &vpp_cnat.Translation{VipAddress: vip, VipPort: uint32(n), Protocol: vpp_cnat.Protocol(p)}
	}
	slices.SortFunc(list, func(a, b string) int { return vpp_cnat.CompareInSet(parse(a), parse(b)) })
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// shared returns the identities of next's translations that are the very messages of
// prev's translation of the same identity.
func shared(prev, next *vpp_cnat.TranslationSet) []string {
	byID := make(map[string]*vpp_cnat.Translation)
	for _, t := range prev.GetTranslations() {
		byID[vpp_cnat.TranslationIDOf(t)] = t
	}
	var out []string
	for _, t := range next.GetTranslations() {
		if byID[vpp_cnat.TranslationIDOf(t)] == t {
			out = append(out, vpp_cnat.TranslationIDOf(t))
		}
	}
	return out
}

// without returns list less the given elements.
func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// TestOneSetPerServiceInIdentityOrder: a resync stages one translation set per
// service, labelled "<namespace>/<name>", holding all its translations sorted by
// identity; a service without translation has no set.
func TestOneSetPerServiceInIdentityOrder(t *testing.T) {
	web, empty := webService(pod1, pod1v6), webService()
	empty.ID.Name, empty.ClusterIPs = "empty", []renderer.Address{addr("10.96.0.12")}
	_, txn := newRenderer(t, true, web, empty)
	set := setOf(txn, web.ID)
	want := []string{"10.96.0.10/80/TCP", nodeIP4 + "/30080/TCP", peerIP4 + "/30080/TCP", "fd00:10:96::a/80/TCP", nodeIP6 + "/30080/TCP"}
	sortInSetOrder(t, want)
	if got := ids(set); set.GetLabel() != "default/web" || !slices.Equal(got, want) {
		t.Errorf("set %q with %q, want default/web with %q", set.GetLabel(), got, want)
	}
	for k, v := range txn.Values {
		if _, ok := v.(*vpp_cnat.Translation); ok {
			t.Errorf("%s: a translation staged on its own", k)
		}
	}
	if _, staged := txn.Values[vpp_cnat.TranslationSetKey("default/empty")]; staged {
		t.Error("a service without translation has a set")
	}
}

// TestNodeJoinAndLeaveChangeOnlyTheNodeIPTranslations: when a node joins, every
// node-port service gets a new set with the translations of the new node IP added and
// every other translation the very message of its previous set; a service without
// node port is not staged. When the node leaves, only its translations go.
func TestNodeJoinAndLeaveChangeOnlyTheNodeIPTranslations(t *testing.T) {
	web := webService(pod1, pod1v6)
	udp := webService(pod2)
	udp.ID.Name, udp.ClusterIPs = "dns", []renderer.Address{addr("10.96.0.11")}
	udp.Ports[0].Port = renderer.ServicePort{Protocol: renderer.UDP, Port: 53, NodePort: 30053}
	plain := webService(pod1)
	plain.ID.Name, plain.ClusterIPs, plain.Ports[0].Port.NodePort = "plain", []renderer.Address{addr("10.96.0.12")}, 0
	r, txn := newRenderer(t, true, web, udp, plain)
	before := map[renderer.ServiceID]*vpp_cnat.TranslationSet{web.ID: setOf(txn, web.ID), udp.ID: setOf(txn, udp.ID)}

	const joined = "192.168.16.30"
	nodes := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4), net.ParseIP(joined))
	up := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatNodePortServices(up, nodes, []*renderer.FlatService{web, udp}); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{vpp_cnat.TranslationSetKey("default/dns"), vpp_cnat.TranslationSetKey("default/web")}
	if got := up.Keys(); !slices.Equal(got, wantKeys) {
		t.Fatalf("node joined: staged %q, want the sets of the node-port services %q", got, wantKeys)
	}
	after := map[renderer.ServiceID]*vpp_cnat.TranslationSet{}
	for svc, newID := range map[*renderer.FlatService]string{web: joined + "/30080/TCP", udp: joined + "/30053/UDP"} {
		prev, next := before[svc.ID], setOf(up.Txn, svc.ID)
		after[svc.ID] = next
		want := append(ids(prev), newID)
		sortInSetOrder(t, want)
		if got := ids(next); !slices.Equal(got, want) {
			t.Errorf("%s after the join: %q, want %q", svc.ID, got, want)
		}
		if got := shared(prev, next); !slices.Equal(got, ids(prev)) {
			t.Errorf("%s after the join: %q are the previous messages, want every previous translation %q", svc.ID, got, ids(prev))
		}
		tr := st.Translation(up.Values, joined, uint32(svc.Ports[0].Port.NodePort), next.GetTranslations()[0].GetProtocol())
		if !tr.GetIsRealIp() {
			t.Errorf("%s: the joined node's translation %v is not interposed", svc.ID, tr)
		}
		// Its paths are those the port's other node-port translation has, the same
		// slice (no paths built; the descriptor converts and checks them once).
		other := st.Translation(up.Values, nodeIP4, uint32(svc.Ports[0].Port.NodePort), tr.GetProtocol())
		if len(tr.GetPaths()) == 0 || &tr.GetPaths()[0] != &other.GetPaths()[0] {
			t.Errorf("%s: the joined node's translation has paths of its own %v, not those of %s's translation", svc.ID, tr.GetPaths(), nodeIP4)
		}
	}

	nodes.Del(net.ParseIP(joined))
	down := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatNodePortServices(down, nodes, []*renderer.FlatService{web, udp}); err != nil {
		t.Fatal(err)
	}
	if got := down.Keys(); !slices.Equal(got, wantKeys) {
		t.Fatalf("node left: staged %q, want the sets of the node-port services %q", got, wantKeys)
	}
	for _, svc := range []*renderer.FlatService{web, udp} {
		prev, next := after[svc.ID], setOf(down.Txn, svc.ID)
		if got, want := ids(next), ids(before[svc.ID]); !slices.Equal(got, want) {
			t.Errorf("%s after the leave: %q, want %q", svc.ID, got, want)
		}
		if got := shared(prev, next); !slices.Equal(got, ids(next)) {
			t.Errorf("%s after the leave: %q are the previous messages, want all of %q", svc.ID, got, ids(next))
		}
	}
}

// TestNodeLeaveDropsEveryNodePortOfAMultiPortService: a service with two node ports
// has a translation of each on every node IP; when a node leaves, both of its go,
// wherever the order of sets puts them (by port first: a node IP's translations are
// not next to each other), and nothing else does.
func TestNodeLeaveDropsEveryNodePortOfAMultiPortService(t *testing.T) {
	web := webService(pod1)
	web.Ports = append(web.Ports, web.Ports[0])
	web.Ports[1].Name, web.Ports[1].Port.Port, web.Ports[1].Port.NodePort = "https", 443, 30443
	const low, high = "10.3.0.7", "192.168.16.30" // their texts sort before and after the cluster IP's
	nodes := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(peerIP4), net.ParseIP(low), net.ParseIP(high))
	r, _ := newRenderer(t, true, web)
	up := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatNodePortServices(up, nodes, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	joined := ids(setOf(up.Txn, web.ID))
	for _, gone := range []string{low, high} {
		nodes.Del(net.ParseIP(gone))
		down := &describedTxn{Txn: st.NewTxn()}
		if err := r.UpdateFlatNodePortServices(down, nodes, []*renderer.FlatService{web}); err != nil {
			t.Fatal(err)
		}
		got := ids(setOf(down.Txn, web.ID))
		joined = without(joined, gone+"/30080/TCP", gone+"/30443/TCP")
		if !slices.Equal(got, joined) {
			t.Errorf("after %s left: %q, want %q", gone, got, joined)
		}
	}
	if len(joined) != 6 { // 2 ports x (the cluster IP and the two nodes left)
		t.Errorf("the set ends with %q, want the cluster IP's and two node IPs' translations of both ports", joined)
	}
}

// TestRenamedServiceDeletesItsOldSetBeforePuttingTheNew: a service whose ID changes
// (same translations) stages the deletion of the old set before the put of the new:
// the scheduler applies them in that order, and VPP, which knows a translation by VIP,
// port and protocol only, would otherwise delete the new set's translations with the
// old set. Through the scheduler and the simulator the cluster IP is still translated.
func TestRenamedServiceDeletesItsOldSetBeforePuttingTheNew(t *testing.T) {
	n := newTrafficNode(t)
	old := webService(pod1)
	r, txn := newRenderer(t, true, old)
	n.commit(t, txn)
	renamed := webService(pod1)
	renamed.ID.Name = "web2"
	up := newOrderedTxn()
	if err := r.UpdateFlatService(up, old, renamed); err != nil {
		t.Fatal(err)
	}
	del, put := up.index(vpp_cnat.TranslationSetKey("default/web"), false), up.index(vpp_cnat.TranslationSetKey("default/web2"), true)
	if del < 0 || put < 0 || del > put {
		t.Fatalf("rename staged %v: want the deletion of default/web's set before the put of default/web2's", up.ops)
	}
	if got, want := ids(setOf(up.Txn, renamed.ID)), ids(setOf(txn, old.ID)); !slices.Equal(got, want) {
		t.Errorf("the renamed service's set holds %q, want %q", got, want)
	}
	n.commitOps(t, up.ops)
	const client = outside + ":40000"
	if got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC); len(got) != 1 || got[0] != "tcp "+client+" -> "+pod1+":8080" {
		t.Errorf("after the rename the pods' NIC sent %q for the cluster IP, want the SYN to %s:8080", got, pod1)
	}
}

// TestTwoServicesClaimingOneVIPAndPort: of two services exposing 10.96.0.10:80, only
// the first rendered has it in its set; the other's set holds its other translations.
// Deleting the owner stages its set's deletion and nothing of the other's, whose
// translations keep working (traffic through the simulator); the other takes the
// address and port at its next change.
func TestTwoServicesClaimingOneVIPAndPort(t *testing.T) {
	owner := webService(pod1)
	owner.Ports[0].Port.NodePort = 0
	other := webService(pod2)
	other.ID.Name, other.Ports[0].Port.NodePort = "other", 0
	other.Ports = append(other.Ports, renderer.FlatPort{Name: "alt", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: 81},
		Backends: other.Ports[0].Backends, ExternalBackends: other.Ports[0].Backends, HasEndpoints: true, NoIPv6Endpoints: true})
	n := newTrafficNode(t)
	r, txn := newRenderer(t, true, owner, other)
	n.commit(t, txn)
	const vip = "10.96.0.10/80/TCP"
	if got := ids(setOf(txn, owner.ID)); !slices.Contains(got, vip) {
		t.Errorf("owner's set %q lacks %s", got, vip)
	}
	if got := ids(setOf(txn, other.ID)); !slices.Equal(got, []string{"10.96.0.10/81/TCP"}) {
		t.Errorf("the other's set %q, want only its own 10.96.0.10/81/TCP", got)
	}
	probe := func(port string) []string {
		got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, outside+":40000", "10.96.0.10:"+port, podsNIC)
		return got
	}
	if got := probe("80"); len(got) != 1 || got[0] != "tcp "+outside+":40000 -> "+pod1+":8080" {
		t.Errorf("port 80 before: %q, want the owner's backend %s", got, pod1)
	}

	del := newOrderedTxn()
	if err := r.DeleteFlatService(del, owner); err != nil {
		t.Fatal(err)
	}
	if _, staged := del.Values[vpp_cnat.TranslationSetKey("default/other")]; staged || del.index(vpp_cnat.TranslationSetKey("default/web"), false) < 0 {
		t.Errorf("owner deleted: staged %q, want the deletion of its set and nothing of the other's", del.Keys())
	}
	n.commitOps(t, del.ops)
	if got := probe("81"); len(got) != 1 || got[0] != "tcp "+outside+":40000 -> "+pod2+":8080" {
		t.Errorf("the other's port 81 after the owner's deletion: %q, want its backend %s", got, pod2)
	}

	next := webService(pod2, "10.1.1.5")
	next.ID, next.Ports[0].Port.NodePort = other.ID, 0
	next.Ports = append(next.Ports, other.Ports[1])
	up := newOrderedTxn()
	if err := r.UpdateFlatService(up, other, next); err != nil {
		t.Fatal(err)
	}
	if got := ids(setOf(up.Txn, other.ID)); !slices.Equal(got, []string{vip, "10.96.0.10/81/TCP"}) {
		t.Errorf("the other's next change: set %q, want it to take %s", got, vip)
	}
}

// TestServiceLosingItsLastTranslationDeletesItsSet: a service whose last endpoint goes
// has its set deleted, not an empty set staged, and its cluster IP gets the reject
// route; its endpoint back, the set is put again.
func TestServiceLosingItsLastTranslationDeletesItsSet(t *testing.T) {
	web := webService(pod1)
	web.ClusterIPs = web.ClusterIPs[:1]
	r, _ := newRenderer(t, true, web)
	none := webService()
	none.ClusterIPs = web.ClusterIPs
	txn := newOrderedTxn()
	if err := r.UpdateFlatService(txn, web, none); err != nil {
		t.Fatal(err)
	}
	key := vpp_cnat.TranslationSetKey("default/web")
	if v, staged := txn.Values[key]; !staged || v != nil {
		t.Errorf("last translation gone: %s staged as %v, want its deletion", key, v)
	}
	if rt, _ := txn.Values[l3.RouteKey(0, "10.96.0.10/32", "")].(*l3.Route); rt.GetType() != l3.Route_ICMP_PROHIBIT {
		t.Errorf("last translation gone: route %v, want ICMP_PROHIBIT", rt)
	}
	again := newOrderedTxn()
	if err := r.UpdateFlatService(again, none, web); err != nil {
		t.Fatal(err)
	}
	if got := ids(setOf(again.Txn, web.ID)); len(got) == 0 {
		t.Errorf("endpoint back: set %q, want its translations", got)
	}
	if r.ownership.staged() == 0 || r.rendered[web.ID].set == nil {
		t.Errorf("endpoint back: ownership %+v, record %+v", r.ownership, r.rendered[web.ID])
	}
}

// TestUnchangedServiceStagesNothing: an update that changes no translation of the
// service (the same content in a new FlatService) stages nothing.
func TestUnchangedServiceStagesNothing(t *testing.T) {
	r, _ := newRenderer(t, true, webService(pod1))
	txn := newOrderedTxn()
	if err := r.UpdateFlatService(txn, webService(pod1), webService(pod1)); err != nil {
		t.Fatal(err)
	}
	if len(txn.ops) != 0 {
		t.Errorf("unchanged service: staged %v", txn.ops)
	}
}

// TestNodeJoinCostsTheNewTranslationsOnly: a node joining or leaving builds the
// translations of its node IP, not the service's others: the allocations of a join
// and a leave do not grow with the translations the service has on other addresses
// (20 more external IPs: 40 more allocations per change when the service is
// rendered anew).
func TestNodeJoinCostsTheNewTranslationsOnly(t *testing.T) {
	allocsWith := func(externalIPs int) float64 {
		svc := webService(pod1, pod2)
		for i := range externalIPs {
			svc.ExternalIPs = append(svc.ExternalIPs, addr(fmt.Sprintf("20.0.0.%d", i+1)))
		}
		r, _ := newRenderer(t, true, svc)
		base := []net.IP{net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4)}
		without, with := renderer.NewIPAddresses(base...), renderer.NewIPAddresses(append(base, net.ParseIP("192.168.16.30"))...)
		next := with
		return testing.AllocsPerRun(20, func() {
			if err := r.UpdateFlatNodePortServices(&describedTxn{Txn: st.NewTxn()}, next, []*renderer.FlatService{svc}); err != nil {
				t.Fatal(err)
			}
			if next == with {
				next = without
			} else {
				next = with
			}
		})
	}
	few, many := allocsWith(1), allocsWith(21)
	if perIP := (many - few) / 20; perIP >= 1 {
		t.Errorf("a node join or leave allocates %.1f more per external IP of the service (%.0f with 1, %.0f with 21), want none: "+
			"the service's other translations are built anew", perIP, few, many)
	}
}

// TestAnAddressAndPortExposedTwiceByOneServiceIsInItsSetOnce: a service exposed on an
// external IP that is a node's, on a port equal to its node port, has that address,
// port and protocol twice; its set holds it once (a set holding it twice is invalid
// and would fail the whole set) and passes the model's validation.
func TestAnAddressAndPortExposedTwiceByOneServiceIsInItsSetOnce(t *testing.T) {
	svc := webService(pod1)
	svc.ExternalIPs = []renderer.Address{addr(nodeIP4)}
	svc.Ports[0].Port.Port = 30080
	_, txn := newRenderer(t, true, svc)
	set := setOf(txn, svc.ID)
	if err := vpp_cnat.ValidateTranslationSet(set); err != nil {
		t.Fatalf("set %q: %v", ids(set), err)
	}
	if n := len(slices.Compact(ids(set))); n != len(set.GetTranslations()) || !slices.Contains(ids(set), nodeIP4+"/30080/TCP") {
		t.Errorf("set %q: want %s/30080/TCP once", ids(set), nodeIP4)
	}
}

// resync resyncs r with the services and the node IPs given (master's and the peer's
// by default).
func resync(t *testing.T, r *Renderer, nodeIPs []string, services ...*renderer.FlatService) *st.Txn {
	t.Helper()
	if nodeIPs == nil {
		nodeIPs = []string{nodeIP4, nodeIP6, peerIP4}
	}
	ev := &renderer.FlatResyncEventData{NodeIPs: renderer.NewIPAddresses(), Services: services,
		FrontendIfs: renderer.NewInterfaces(mainIf, hostIf, bviIf, podIf), BackendIfs: renderer.NewInterfaces(hostIf, bviIf, podIf)}
	for _, ip := range nodeIPs {
		ev.NodeIPs.Add(net.ParseIP(ip))
	}
	txn := st.NewTxn()
	if err := r.ResyncFlat(txn, ev); err != nil {
		t.Fatal(err)
	}
	return txn
}

// TestResyncKeepsTheSetsOfUnchangedServices: a resync stages the very set of a service
// it was given unchanged (the same FlatService), so that the scheduler compares it at
// the cost of a pointer; a service changed, or depending on node IPs that changed (a
// node port, an external IP), gets a new set of the new content; ownership is decided
// anew in the resync's order.
func TestResyncKeepsTheSetsOfUnchangedServices(t *testing.T) {
	web := webService(pod1)
	plain := webService(pod1)
	plain.ID.Name, plain.ClusterIPs, plain.Ports[0].Port.NodePort = "plain", []renderer.Address{addr("10.96.0.12")}, 0
	ext := webService(pod2)
	ext.ID.Name, ext.ClusterIPs, ext.ExternalIPs, ext.Ports[0].Port.NodePort = "ext", nil, []renderer.Address{addr("20.0.0.9")}, 0
	r, first := newRenderer(t, true, web, plain, ext)
	again := resync(t, r, nil, web, plain, ext)
	for _, svc := range []*renderer.FlatService{web, plain, ext} {
		if setOf(again, svc.ID) != setOf(first, svc.ID) || setOf(again, svc.ID) == nil {
			t.Errorf("%s unchanged: a new set staged", svc.ID)
		}
	}

	const joined = "192.168.16.30"
	moved := resync(t, r, []string{nodeIP4, nodeIP6, peerIP4, joined}, web, plain, ext)
	if setOf(moved, plain.ID) != setOf(first, plain.ID) {
		t.Errorf("%s (cluster IP only) after a node joined: a new set staged", plain.ID)
	}
	if got := ids(setOf(moved, web.ID)); !slices.Contains(got, joined+"/30080/TCP") {
		t.Errorf("%s after a node joined: %q, want the new node's node port", web.ID, got)
	}
	if s := setOf(moved, ext.ID); s == setOf(first, ext.ID) || !proto.Equal(s, setOf(first, ext.ID)) {
		t.Errorf("%s (external IP) after a node joined: %v, want it rendered anew, the same content", ext.ID, s)
	}
	changed := webService(pod1, pod2)
	changed.ID = plain.ID
	changed.ClusterIPs, changed.Ports[0].Port.NodePort = plain.ClusterIPs, 0
	if got := dsts(setOf(resync(t, r, nil, web, changed, ext), plain.ID).GetTranslations()[0]); len(got) != 2 {
		t.Errorf("%s changed: paths to %q, want both endpoints", plain.ID, got)
	}

	// Two services claiming 10.96.0.10:80: the first in the resync's order owns it,
	// whatever a previous resync decided.
	rival := webService(pod2)
	rival.ID.Name, rival.Ports[0].Port.NodePort = "rival", 0
	r, _ = newRenderer(t, true, web, rival)
	swapped := resync(t, r, nil, rival, web)
	if got := ids(setOf(swapped, rival.ID)); !slices.Contains(got, "10.96.0.10/80/TCP") {
		t.Errorf("rival first in the resync: its set %q lacks 10.96.0.10/80/TCP", got)
	}
	if got := ids(setOf(swapped, web.ID)); slices.Contains(got, "10.96.0.10/80/TCP") {
		t.Errorf("web second in the resync: its set %q holds 10.96.0.10/80/TCP, the rival's", got)
	}
}

// TestStagedSetsAreInTheOrderOfSets: the sets a resync and a node join stage are in
// the order the set descriptor reads a change of fastest (vpp_cnat.InSetOrder).
func TestStagedSetsAreInTheOrderOfSets(t *testing.T) {
	web := webService(pod1, pod1v6)
	ext := extOn("192.168.16.30")
	r, txn := newRenderer(t, true, web, ext)
	join := newOrderedTxn()
	joined := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4), net.ParseIP("192.168.16.15"),
		net.ParseIP("fd00:192:168:16::f"))
	if err := r.UpdateFlatNodePortServices(join, joined, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	for _, staged := range []*st.Txn{txn, join.Txn} {
		for _, svc := range []*renderer.FlatService{web, ext} {
			if s := setOf(staged, svc.ID); s != nil && !vpp_cnat.InSetOrder(s.GetTranslations()) {
				t.Errorf("%s: set %q not in the order of sets", svc.ID, ids(s))
			}
		}
	}
	if setOf(join.Txn, web.ID) == nil {
		t.Error("the node join staged no set for web")
	}
}
