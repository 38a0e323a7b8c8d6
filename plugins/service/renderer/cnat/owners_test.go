package cnat

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// nodePortIDs returns the identities of the set's translations on port 30080.
func nodePortIDs(txn *st.Txn, id renderer.ServiceID) []string {
	return slices.DeleteFunc(ids(setOf(txn, id)), func(s string) bool { return !strings.Contains(s, "/30080/") })
}

// assertNoOwnership fails unless nothing is owned any more.
func assertNoOwnership(t *testing.T, r *Renderer) {
	t.Helper()
	o := &r.ownership
	if len(o.owners) != 0 || len(o.byPort) != 0 || len(o.vips) != 0 || len(o.nodePorts) != 0 {
		t.Errorf("every service deleted: ownership %+v, want none", *o)
	}
}

// TestTwoServicesWithOneNodePort: of two services with node port 30080, the first
// rendered has it on every node IP, the other none of it (its cluster IP is its own);
// the owner deleted, the other takes the node port at its next change, on every node
// IP.
func TestTwoServicesWithOneNodePort(t *testing.T) {
	web := webService(pod1)
	twin := webService(pod2)
	twin.ID.Name, twin.ClusterIPs = "twin", []renderer.Address{addr("10.96.0.11")}
	r, txn := newRenderer(t, true, web, twin)
	wantNodePorts := []string{nodeIP4 + "/30080/TCP", peerIP4 + "/30080/TCP"}
	if got := nodePortIDs(txn, web.ID); !slices.Equal(got, wantNodePorts) {
		t.Errorf("web, first: node-port translations %q, want %q", got, wantNodePorts)
	}
	if got := ids(setOf(txn, twin.ID)); !slices.Equal(got, []string{"10.96.0.11/80/TCP"}) {
		t.Errorf("twin, second: set %q, want its cluster IP only", got)
	}

	if err := r.DeleteFlatService(newOrderedTxn(), web); err != nil {
		t.Fatal(err)
	}
	next := webService(pod2, "10.1.1.5")
	next.ID, next.ClusterIPs = twin.ID, twin.ClusterIPs
	up := newOrderedTxn()
	if err := r.UpdateFlatService(up, twin, next); err != nil {
		t.Fatal(err)
	}
	if got := nodePortIDs(up.Txn, twin.ID); !slices.Equal(got, wantNodePorts) {
		t.Errorf("twin's next change, web gone: node-port translations %q, want %q", got, wantNodePorts)
	}
	if err := r.DeleteFlatService(newOrderedTxn(), next); err != nil {
		t.Fatal(err)
	}
	assertNoOwnership(t, r)
}

// extOn returns default/ext: cluster IP 10.96.0.12 and the external IP ext, port
// 30080 (TCP) to pod2.
func extOn(ext string) *renderer.FlatService {
	svc := webService(pod2)
	svc.ID.Name, svc.ClusterIPs, svc.ExternalIPs = "ext", []renderer.Address{addr("10.96.0.12")}, []renderer.Address{addr(ext)}
	svc.Ports[0].Port.Port, svc.Ports[0].Port.NodePort = 30080, 0
	return svc
}

// TestExternalIPOfANodeOnAnotherServicesNodePort: a service's external IP that is a
// node's IP, on the port of another service's node port, is one identity claimed by
// both: the first rendered keeps it (the traffic to it reaches its backend), the
// other keeps the rest of its translations; deleting the keeper leaves the other's
// set alone.
func TestExternalIPOfANodeOnAnotherServicesNodePort(t *testing.T) {
	web := webService(pod1)
	ext := extOn(nodeIP4)
	const contested = nodeIP4 + "/30080/TCP"
	for _, tc := range []struct {
		name   string
		order  []*renderer.FlatService
		keeper *renderer.FlatService
		other  *renderer.FlatService
		want   string // backend of the contested address and port
	}{
		{"node port first", []*renderer.FlatService{web, ext}, web, ext, pod1},
		{"external IP first", []*renderer.FlatService{ext, web}, ext, web, pod2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTrafficNode(t)
			r, txn := newRenderer(t, true, tc.order...)
			n.commit(t, txn)
			if got := ids(setOf(txn, tc.keeper.ID)); !slices.Contains(got, contested) {
				t.Errorf("%s, first: set %q lacks %s", tc.keeper.ID, got, contested)
			}
			if got := ids(setOf(txn, tc.other.ID)); slices.Contains(got, contested) || len(got) == 0 {
				t.Errorf("%s, second: set %q, want its translations without %s", tc.other.ID, got, contested)
			}
			if got := ids(setOf(txn, web.ID)); !slices.Contains(got, peerIP4+"/30080/TCP") {
				t.Errorf("web: set %q lacks its node port on the other node %s", got, peerIP4)
			}
			got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, outside+":40000", nodeIP4+":30080", podsNIC)
			if len(got) != 1 || !strings.HasSuffix(got[0], " -> "+tc.want+":8080") {
				t.Errorf("%s:30080 from outside: the pods' NIC sent %q, want the SYN to %s's backend %s:8080", nodeIP4, got, tc.keeper.ID, tc.want)
			}

			del := newOrderedTxn()
			if err := r.DeleteFlatService(del, tc.keeper); err != nil {
				t.Fatal(err)
			}
			if setOf(del.Txn, tc.other.ID) != nil {
				t.Errorf("%s deleted: %s's set staged again", tc.keeper.ID, tc.other.ID)
			}
			if err := r.DeleteFlatService(newOrderedTxn(), tc.other); err != nil {
				t.Fatal(err)
			}
			assertNoOwnership(t, r)
		})
	}
}

// TestNodeJoiningOnAnExternalIPOfItsNodePort: a node joins whose IP is the external
// IP of a service exposing the port of another service's node port. The external IP
// was there first and keeps its translation; the node-port service gets the node's
// other IP only. The node leaving and both services deleted, nothing is owned.
func TestNodeJoiningOnAnExternalIPOfItsNodePort(t *testing.T) {
	const joining, joining6 = "192.168.16.30", "fd00:192:168:16::30"
	web := webService(pod1, "fd00:10:1::3")
	ext := extOn(joining)
	r, txn := newRenderer(t, true, web, ext)
	if got := ids(setOf(txn, ext.ID)); !slices.Contains(got, joining+"/30080/TCP") {
		t.Fatalf("ext: set %q lacks its external IP %s", got, joining)
	}
	before := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4))
	joined := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4),
		net.ParseIP(joining), net.ParseIP(joining6))
	join := newOrderedTxn()
	if err := r.UpdateFlatNodePortServices(join, joined, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	got := ids(setOf(join.Txn, web.ID))
	if slices.Contains(got, joining+"/30080/TCP") || !slices.Contains(got, joining6+"/30080/TCP") {
		t.Errorf("web after the join: set %q, want the node's IPv6 node port and not %s, ext's", got, joining+"/30080/TCP")
	}
	leave := newOrderedTxn()
	if err := r.UpdateFlatNodePortServices(leave, before, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	if got := ids(setOf(leave.Txn, web.ID)); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, joining+"/") || strings.HasPrefix(s, joining6+"/") }) {
		t.Errorf("web after the node left: set %q, want none of the node's", got)
	}
	for _, svc := range []*renderer.FlatService{web, ext} {
		if err := r.DeleteFlatService(newOrderedTxn(), svc); err != nil {
			t.Fatal(err)
		}
	}
	assertNoOwnership(t, r)
}

// TestALargeNodeJoinDecidesOwnershipInTheServicesOrder: a node joining a cluster of
// enough node-port services to plan their edits in parallel shares; of two services
// with one node port, the first in the order keeps it on the new node too, and
// leaving, the node's translations are released.
func TestALargeNodeJoinDecidesOwnershipInTheServicesOrder(t *testing.T) {
	const joining = "192.168.16.30"
	var services []*renderer.FlatService
	for i := range 3 * parallelEditMin {
		svc := webService(pod1)
		svc.ID.Name = "np" + strconv.Itoa(i)
		svc.ClusterIPs = []renderer.Address{addr("10.96.1." + strconv.Itoa(i%250+1))}
		svc.Ports[0].Port.Port, svc.Ports[0].Port.NodePort = uint16(1000+i), uint16(30100+i)
		services = append(services, svc)
	}
	twin := webService(pod2)
	twin.ID.Name, twin.ClusterIPs = "zz-twin", []renderer.Address{addr("10.96.2.1")}
	twin.Ports[0].Port.NodePort = services[7].Ports[0].Port.NodePort
	services = append(services, twin)
	r, _ := newRenderer(t, true, services...)
	joined := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4), net.ParseIP(joining))
	join := newOrderedTxn()
	if err := r.UpdateFlatNodePortServices(join, joined, services); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(int(twin.Ports[0].Port.NodePort))
	if got := ids(setOf(join.Txn, services[7].ID)); !slices.Contains(got, joining+"/"+port+"/TCP") {
		t.Errorf("%s, the node port's owner, after the join: %q lacks the new node's", services[7].ID, got)
	}
	if got := ids(setOf(join.Txn, services[len(services)-2].ID)); !slices.Contains(got, joining+"/"+strconv.Itoa(30100+len(services)-2)+"/TCP") {
		t.Errorf("%s after the join: %q lacks the new node's node port", services[len(services)-2].ID, got)
	}
	if s := setOf(join.Txn, twin.ID); s != nil {
		t.Errorf("%s, second with the node port: staged %q, want nothing", twin.ID, ids(s))
	}
	if p := r.ownership.nodePorts[portKey{port: uint32(twin.Ports[0].Port.NodePort)}]; p.id != services[7].ID || p.n != 3 {
		t.Errorf("node port %s: owner %+v, want %s with 3 translations", port, p, services[7].ID)
	}
	before := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(nodeIP6), net.ParseIP(peerIP4))
	if err := r.UpdateFlatNodePortServices(newOrderedTxn(), before, services); err != nil {
		t.Fatal(err)
	}
	if p := r.ownership.nodePorts[portKey{port: uint32(twin.Ports[0].Port.NodePort)}]; p.n != 2 {
		t.Errorf("node port %s after the node left: %+v, want 2 translations", port, p)
	}
	for _, svc := range services {
		if err := r.DeleteFlatService(newOrderedTxn(), svc); err != nil {
			t.Fatal(err)
		}
	}
	assertNoOwnership(t, r)
}
