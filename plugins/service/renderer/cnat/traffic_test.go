package cnat

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/cnatplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
)

// The traffic node: the simulator with two NICs in table 0, the uplink with the node
// IP 192.168.16.10/24 (an outside client 192.168.16.99 behind it) and the pods' NIC
// 10.1.1.1/24 with two local pods; the renderer's translations and routes committed
// through the real scheduler and the cnat and L3 descriptors.
const (
	uplinkNIC = "GigabitEthernet0/a/0"
	podsNIC   = "GigabitEthernet0/9/0"
	outside   = "192.168.16.99"
	pod1      = "10.1.1.3"
	pod2      = "10.1.1.4"
	outside6  = "fd00:192:168:16::99"
	pod1v6    = "fd00:10:1:1::3"
)

var (
	outsideMAC = [6]byte{2, 0, 0, 0, 0, 0x99}
	pod1MAC    = [6]byte{2, 0, 0, 0, 1, 3}
	pod2MAC    = [6]byte{2, 0, 0, 0, 1, 4}
)

type trafficNode struct {
	sim       *vppsim.Sim
	ch        govppapi.Channel
	sched     *kvscheduler.Scheduler
	macs      map[string][6]byte // NIC MACs
	mu        sync.Mutex
	sent      map[string][]string // flows sent by NIC
	icmp      []string            // ICMP errors sent: "dst type/code"
	clk       *testkit.Clock
	committed map[string]proto.Message
}

func newTrafficNode(t testing.TB) *trafficNode {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	clk := testkit.NewClockAt(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{podsNIC, uplinkNIC}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	n := &trafficNode{sim: sim, ch: ch, clk: clk, macs: make(map[string][6]byte), sent: make(map[string][]string), committed: make(map[string]proto.Message)}
	for nic, cfg := range map[string]struct {
		addrs []string
		neigh map[string][6]byte
	}{
		uplinkNIC: {[]string{nodeIP4 + "/24", nodeIP6 + "/112"}, map[string][6]byte{outside: outsideMAC, outside6: outsideMAC}},
		podsNIC:   {[]string{"10.1.1.1/24", "fd00:10:1:1::1/64"}, map[string][6]byte{pod1: pod1MAC, pod2: pod2MAC, pod1v6: pod1MAC}},
	} {
		i, ok := sim.InterfaceByName(nic)
		if !ok {
			t.Fatalf("no NIC %s", nic)
		}
		var mac [6]byte
		copy(mac[:], i.MAC)
		n.macs[nic] = mac
		sw := interface_types.InterfaceIndex(i.SwIfIndex)
		for _, a := range cfg.addrs {
			prefix, err := ip_types.ParseAddressWithPrefix(a)
			if err != nil {
				t.Fatal(err)
			}
			n.do(t, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: prefix}, &interfaces.SwInterfaceAddDelAddressReply{})
		}
		n.do(t, &interfaces.SwInterfaceSetFlags{SwIfIndex: sw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
		for ip, m := range cfg.neigh {
			n.neighbor(t, sw, ip, m)
		}
	}
	sim.SetTxHook(n.hook)
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: st.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cp := &cnatplugin.Plugin{Deps: cnatplugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: conn}}
	lp := &l3plugin.Plugin{Deps: l3plugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: conn}}
	for _, p := range []interface {
		Init() error
		Close() error
	}{cp, lp} {
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
	}
	n.sched = s
	return n
}

func (n *trafficNode) do(t testing.TB, req, reply govppapi.Message) {
	t.Helper()
	if err := n.ch.SendRequest(req).ReceiveReply(reply); err != nil {
		t.Fatalf("%s: %v", req.GetMessageName(), err)
	}
}

// hook records the TCP and UDP flows and the ICMP errors the NICs transmit.
func (n *trafficNode) hook(ifName string, frame []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f := st.Flow(frame); f != "" {
		n.sent[ifName] = append(n.sent[ifName], f)
		return
	}
	if len(frame) >= 14+20+2 && binary.BigEndian.Uint16(frame[12:14]) == 0x0800 && frame[14+9] == 1 {
		ip := frame[14:]
		icmp := ip[int(ip[0]&0x0f)*4:]
		n.icmp = append(n.icmp, fmt.Sprintf("%s %d/%d", netip.AddrFrom4([4]byte(ip[16:20])), icmp[0], icmp[1]))
	}
}

// take returns what NIC sent since the last take, and the ICMP errors.
func (n *trafficNode) take(nic string) ([]string, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out, icmp := n.sent[nic], n.icmp
	n.sent[nic], n.icmp = nil, nil
	return out, icmp
}

// neighbor adds the static neighbour ip with mac on interface sw.
func (n *trafficNode) neighbor(t testing.TB, sw interface_types.InterfaceIndex, ip string, mac [6]byte) {
	t.Helper()
	addr, err := ip_types.ParseAddress(ip)
	if err != nil {
		t.Fatal(err)
	}
	n.do(t, &ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: sw,
		Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: mac, IPAddress: addr}}, &ip_neighbor.IPNeighborAddDelReply{})
}

// uplinkNeighbor adds the static neighbour ip with mac on the uplink.
func (n *trafficNode) uplinkNeighbor(t testing.TB, ip string, mac [6]byte) {
	t.Helper()
	up, _ := n.sim.InterfaceByName(uplinkNIC)
	n.neighbor(t, interface_types.InterfaceIndex(up.SwIfIndex), ip, mac)
}

// commit programs the renderer's translation sets and routes staged in txn (nil:
// deleted), which must all be configured.
func (n *trafficNode) commit(t testing.TB, txn *st.Txn) {
	t.Helper()
	ops := make([]op, 0, len(txn.Values))
	for k, v := range txn.Values {
		ops = append(ops, op{k, v})
	}
	n.commitOps(t, ops)
}

// op is one staged operation: a put, or a delete (value nil).
type op struct {
	key   string
	value proto.Message
}

// commitOps programs the translation sets and routes among ops in their order (the
// scheduler applies a transaction in staging order), which must all be configured.
func (n *trafficNode) commitOps(t testing.TB, ops []op) {
	t.Helper()
	kt := n.sched.StartNBTransaction()
	var keys []string
	for _, o := range ops {
		k, v := o.key, o.value
		switch v.(type) {
		case *vpp_cnat.TranslationSet, *l3.Route, nil:
		default:
			continue // interface values: no interface descriptor here
		}
		if r, ok := v.(*l3.Route); ok && r.GetVrfId() != 0 {
			continue // one table here
		}
		if v == nil && n.committed[k] == nil {
			continue
		}
		kt.SetValue(k, v)
		n.committed[k] = v
		keys = append(keys, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kt.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	for _, k := range keys {
		if n.committed[k] == nil {
			continue
		}
		if s := n.sched.GetValueStatus(k); s.State != kvapi.StateConfigured {
			t.Fatalf("%s: %s %s", k, s.State, s.Error)
		}
	}
}

// send injects a TCP SYN or UDP datagram on nic from src to dst and returns the flows
// that left through out.
func (n *trafficNode) send(t *testing.T, nic string, srcMAC [6]byte, proto uint8, src, dst string, out string) ([]string, []string) {
	t.Helper()
	s, d := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst)
	n.take(out)
	if err := n.sim.InjectFrame(nic, st.L4Frame(proto, n.macs[nic], srcMAC, s.Addr().String(), s.Port(), d.Addr().String(), d.Port())); err != nil {
		t.Fatal(err)
	}
	return n.take(out)
}

// TestTrafficThroughTheCNATRenderer: packets through the simulator programmed with the
// renderer's values (serviceRenderer cnat). From outside: a cluster IP reaches a local
// backend with the client's address kept; a node port of a Cluster policy is
// source-NATed to the node IP (a port from 49152) and the backend's answer returns
// to the client from the node port; a node port of a Local policy keeps the client's
// address; a Service without endpoints is refused at once (ICMP 3/10).
func TestTrafficThroughTheCNATRenderer(t *testing.T) {
	n := newTrafficNode(t)
	web := webService(pod1)
	web.Ports[0].Backends[0].Endpoints[0].Local = true
	local := webService(pod2)
	local.ID.Name, local.ClusterIPs, local.TrafficPolicy = "local", []renderer.Address{addr("10.96.0.11")}, renderer.NodeLocal
	local.Ports[0].Port.NodePort = 30081
	empty := webService()
	empty.ID.Name, empty.ClusterIPs = "empty", []renderer.Address{addr("10.96.0.12")}
	empty.Ports[0].Port = renderer.ServicePort{Protocol: renderer.UDP, Port: 53}
	_, txn := newRenderer(t, true, web, local, empty)
	n.commit(t, txn)

	const client = outside + ":40000"
	if got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC); len(got) != 1 || got[0] != "tcp "+client+" -> "+pod1+":8080" {
		t.Errorf("cluster IP from outside: the pods' NIC sent %q, want the SYN to %s:8080 from the client", got, pod1)
	}
	got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, outside+":40001", nodeIP4+":30080", podsNIC)
	var snatPort uint16
	if len(got) == 1 {
		var sp uint16
		if _, err := fmt.Sscanf(got[0], "tcp "+nodeIP4+":%d -> "+pod1+":8080", &sp); err == nil {
			snatPort = sp
		}
	}
	if snatPort < 49152 {
		t.Fatalf("node port (Cluster) from outside: the pods' NIC sent %q, want the SYN to %s:8080 from %s:49152 or above", got, pod1, nodeIP4)
	}
	reply := fmt.Sprintf("%s:%d", nodeIP4, snatPort)
	if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, pod1+":8080", reply, uplinkNIC); len(got) != 1 || got[0] != "tcp "+nodeIP4+":30080 -> "+outside+":40001" {
		t.Errorf("the backend's answer: the uplink sent %q, want it from the node port to the client", got)
	}
	if got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, outside+":40002", nodeIP4+":30081", podsNIC); len(got) != 1 || got[0] != "tcp "+outside+":40002 -> "+pod2+":8080" {
		t.Errorf("node port (Local) from outside: the pods' NIC sent %q, want the SYN to %s:8080 from the client", got, pod2)
	}
	got, icmp := n.send(t, uplinkNIC, outsideMAC, st.ProtoUDP, outside+":40003", "10.96.0.12:53", podsNIC)
	if len(got) != 0 || len(icmp) != 1 || !strings.HasSuffix(icmp[0], outside+" 3/10") {
		t.Errorf("Service without endpoints: sent %q, ICMP %q, want 3/10 to the client at once", got, icmp)
	}
}

// TestPodReachesARemoteBackendAndGetsTheAnswerFromTheClusterIP: a pod's connection to
// a cluster IP whose backend is on another node (routed through the uplink) keeps the
// pod's address, and the remote backend's answer, arriving on the uplink, is
// reverse-translated to come from the cluster IP.
func TestPodReachesARemoteBackendAndGetsTheAnswerFromTheClusterIP(t *testing.T) {
	const peer, remote = "192.168.16.20", "10.1.2.3"
	peerMAC := [6]byte{2, 0, 0, 0, 0, 0x20}
	n := newTrafficNode(t)
	n.uplinkNeighbor(t, peer, peerMAC)
	_, txn := newRenderer(t, true, webService(remote))
	txn.Put(l3.RouteKey(0, "10.1.2.0/24", peer), &l3.Route{DstNetwork: "10.1.2.0/24", NextHopAddr: peer}) // the peer's pods
	n.commit(t, txn)

	const client = pod1 + ":40000"
	if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", uplinkNIC); len(got) != 1 || got[0] != "tcp "+client+" -> "+remote+":8080" {
		t.Fatalf("pod to the cluster IP: the uplink sent %q, want the SYN to %s:8080 from the pod", got, remote)
	}
	if got, _ := n.send(t, uplinkNIC, peerMAC, st.ProtoTCP, remote+":8080", client, podsNIC); len(got) != 1 || got[0] != "tcp 10.96.0.10:80 -> "+client {
		t.Errorf("the remote backend's answer: the pods' NIC sent %q, want it from the cluster IP", got)
	}
}

// TestIPv6ClusterIPOnADualStackNode: with the default serviceRenderer (nat44 for IPv4),
// the cnat renderer serves the IPv6 cluster IP of a dual-stack Service: a client's
// connection reaches the IPv6 backend with its address kept, and the answer comes
// back from the cluster IP.
func TestIPv6ClusterIPOnADualStackNode(t *testing.T) {
	n := newTrafficNode(t)
	_, txn := newRenderer(t, false, webService(pod1, pod1v6))
	n.commit(t, txn)
	client := "[" + outside6 + "]:40000"
	if got, _ := n.send(t, uplinkNIC, outsideMAC, st.ProtoTCP, client, "[fd00:10:96::a]:80", podsNIC); len(got) != 1 || got[0] != "tcp "+client+" -> ["+pod1v6+"]:8080" {
		t.Fatalf("IPv6 cluster IP: the pods' NIC sent %q, want the SYN to [%s]:8080 from the client", got, pod1v6)
	}
	if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, "["+pod1v6+"]:8080", client, uplinkNIC); len(got) != 1 || got[0] != "tcp [fd00:10:96::a]:80 -> "+client {
		t.Errorf("the backend's answer: the uplink sent %q, want it from the IPv6 cluster IP", got)
	}
}

// TestANodeLeavingTakesItsNodePortsOutOfTraffic: a service with two node ports; while
// a node is in the cluster, a pod's connection to either node port on that node's IP
// is translated here to the backend; once the node left, it goes out through the
// uplink to that IP unchanged (nothing of the node stays behind in VPP).
func TestANodeLeavingTakesItsNodePortsOutOfTraffic(t *testing.T) {
	const peer = "192.168.16.30"
	peerMAC := [6]byte{2, 0, 0, 0, 0, 0x30}
	n := newTrafficNode(t)
	n.uplinkNeighbor(t, peer, peerMAC)
	web := webService(pod1)
	web.Ports = append(web.Ports, web.Ports[0])
	web.Ports[1].Name, web.Ports[1].Port.Port, web.Ports[1].Port.NodePort = "https", 443, 30443
	r, txn := newRenderer(t, true, web)
	n.commit(t, txn)
	nodes := renderer.NewIPAddresses(net.ParseIP(nodeIP4), net.ParseIP(peer))
	joined := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatNodePortServices(joined, nodes, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	n.commit(t, joined.Txn)
	client := pod2 + ":40000"
	for _, port := range []string{"30080", "30443"} {
		if got, _ := n.send(t, podsNIC, pod2MAC, st.ProtoTCP, client, peer+":"+port, podsNIC); len(got) != 1 || !strings.HasSuffix(got[0], " -> "+pod1+":8080") {
			t.Fatalf("node %s in the cluster, a pod to its port %s: the pods' NIC sent %q, want the SYN to %s:8080", peer, port, got, pod1)
		}
	}
	nodes.Del(net.ParseIP(peer))
	left := &describedTxn{Txn: st.NewTxn()}
	if err := r.UpdateFlatNodePortServices(left, nodes, []*renderer.FlatService{web}); err != nil {
		t.Fatal(err)
	}
	n.commit(t, left.Txn)
	for i, port := range []string{"30080", "30443"} {
		client := fmt.Sprintf("%s:%d", pod2, 40001+i)
		want := "tcp " + client + " -> " + peer + ":" + port
		if got, _ := n.send(t, podsNIC, pod2MAC, st.ProtoTCP, client, peer+":"+port, uplinkNIC); len(got) != 1 || got[0] != want {
			t.Errorf("node %s left, a pod to its port %s: the uplink sent %q, want %q", peer, port, got, want)
		}
	}
}
