package lbfirewall

import (
	"context"
	"encoding/binary"
	"io"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// The node of the traffic tests: the uplink GbE (192.168.16.10/24, NAT outside) with
// outside clients on its wire, and a NIC standing for the pod interfaces (NAT inside)
// with the backend pod. Two LoadBalancer services are NATed as the NAT44 renderer
// does (out2in-only static mappings of ingress IP:80 to the pod's 8080): "web"
// restricted to 192.168.16.48/28, "open" without ranges.
const (
	uplink    = "GbE"
	podsNIC   = "GigabitEthernet0/9/0"
	podIP     = "10.1.1.2"
	webLBIP   = "192.0.2.10"
	openLBIP  = "192.0.2.20"
	inRange   = "192.168.16.50"
	outRange  = "192.168.16.100"
	svcPort   = 80
	podPort   = 8080
	webRanges = "192.168.16.48/28"
)

var (
	podMAC      = [6]byte{0x02, 0, 0, 0, 1, 2}
	inRangeMAC  = [6]byte{0x02, 0, 0, 0, 3, 50}
	outRangeMAC = [6]byte{0x02, 0, 0, 0, 3, 100}
)

type node struct {
	t      *testing.T
	sim    *vppsim.Sim
	ch     govppapi.Channel
	sched  *kvscheduler.Scheduler
	sw     map[string]uint32
	gbeMAC [6]byte

	mu sync.Mutex
	tx []sent
}

type sent struct {
	ifName string
	frame  []byte
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func newNode(t *testing.T) *node {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{uplink, podsNIC}, Log: quiet()})
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
	ch.SetReplyTimeout(5 * time.Second)
	t.Cleanup(ch.Close)
	n := &node{t: t, sim: sim, ch: ch, sw: map[string]uint32{}}
	for _, name := range []string{uplink, podsNIC} {
		itf, ok := sim.InterfaceByName(name)
		if !ok {
			t.Fatalf("no interface %s", name)
		}
		n.sw[name] = itf.SwIfIndex
		if name == uplink {
			copy(n.gbeMAC[:], itf.MAC)
		}
	}
	n.wire()
	sim.SetTxHook(func(ifName string, frame []byte) {
		n.mu.Lock()
		n.tx = append(n.tx, sent{ifName, append([]byte(nil), frame...)})
		n.mu.Unlock()
	})
	n.startScheduler(conn)
	return n
}

func addr4(s string) ip_types.Address {
	return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(netip.MustParseAddr(s).As4())}
}

func (n *node) call(req, rep govppapi.Message) {
	n.t.Helper()
	if err := n.ch.SendRequest(req).ReceiveReply(rep); err != nil {
		n.t.Fatalf("%s: %v", req.GetMessageName(), err)
	}
}

// wire addresses both NICs, adds the neighbours and the NAT of the two services.
func (n *node) wire() {
	gbe, pods := interface_types.InterfaceIndex(n.sw[uplink]), interface_types.InterfaceIndex(n.sw[podsNIC])
	for sw, pfx := range map[interface_types.InterfaceIndex]string{gbe: "192.168.16.10/24", pods: "10.1.1.1/24"} {
		p, err := ip_types.ParseAddressWithPrefix(pfx)
		if err != nil {
			n.t.Fatal(err)
		}
		n.call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: p}, &interfaces.SwInterfaceAddDelAddressReply{})
		n.call(&interfaces.SwInterfaceSetFlags{SwIfIndex: sw, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
	}
	for _, nb := range []struct {
		sw  interface_types.InterfaceIndex
		ip  string
		mac [6]byte
	}{{pods, podIP, podMAC}, {gbe, inRange, inRangeMAC}, {gbe, outRange, outRangeMAC}} {
		n.call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: nb.sw,
			Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: nb.mac, IPAddress: addr4(nb.ip)}}, &ip_neighbor.IPNeighborAddDelReply{})
	}
	n.call(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: 1024}, &nat44_ed.Nat44EdPluginEnableDisableReply{})
	n.call(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true}, &nat44_ed.Nat44ForwardingEnableDisableReply{})
	n.call(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_INSIDE, SwIfIndex: pods}, &nat44_ed.Nat44InterfaceAddDelFeatureReply{})
	n.call(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, Flags: nat_types.NAT_IS_OUTSIDE, SwIfIndex: gbe}, &nat44_ed.Nat44InterfaceAddDelFeatureReply{})
	for _, lbIP := range []string{webLBIP, openLBIP} {
		n.call(&nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY, Protocol: 6,
			LocalIPAddress: netip.MustParseAddr(podIP).As4(), LocalPort: podPort, ExternalIPAddress: netip.MustParseAddr(lbIP).As4(), ExternalPort: svcPort,
			ExternalSwIfIndex: ^interface_types.InterfaceIndex(0)}, &nat44_ed.Nat44AddDelStaticMappingV2Reply{})
	}
}

// startScheduler runs the scheduler with the real ACL plugin and an interface
// descriptor that knows the two NICs.
func (n *node) startScheduler(conn *core.Connection) {
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quiet()})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = s.Close() })
	err = s.RegisterKVDescriptor(&kvapi.KVDescriptor{
		Name:         ifaceidx.DescriptorName,
		NBKeyPrefix:  ifmodel.InterfacePrefix,
		KeySelector:  func(key string) bool { _, ok := ifmodel.ParseNameFromKey(key); return ok },
		KeyLabel:     func(key string) string { name, _ := ifmodel.ParseNameFromKey(key); return name },
		WithMetadata: true,
		Create: func(key string, _ proto.Message) (kvapi.Metadata, error) {
			name, _ := ifmodel.ParseNameFromKey(key)
			return &ifaceidx.Metadata{SwIfIndex: n.sw[name]}, nil
		},
		Delete: func(string, proto.Message, kvapi.Metadata) error { return nil },
	})
	if err != nil {
		n.t.Fatal(err)
	}
	acl := &aclplugin.Plugin{Deps: aclplugin.Deps{Log: quiet(), Scheduler: s, GoVPP: conn}}
	if err := acl.Init(); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { _ = acl.Close() })
	txn := s.StartNBTransaction()
	for name := range n.sw {
		txn.SetValue(ifmodel.InterfaceKey(name), &ifmodel.Interface{Name: name})
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		n.t.Fatal(err)
	}
	n.sched = s
}

// txn keeps the staging order, as the controller's transaction does.
type txn struct {
	keys   []string
	values map[string]proto.Message
}

func (t *txn) stage(k string, v proto.Message) {
	if t.values == nil {
		t.values = map[string]proto.Message{}
	}
	if _, ok := t.values[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.values[k] = v
}
func (t *txn) Put(k string, v proto.Message) { t.stage(k, v) }
func (t *txn) Delete(k string)               { t.stage(k, nil) }
func (t *txn) Get(k string) proto.Message    { return t.values[k] }

// commit applies the staged values to the scheduler (and so to the simulator).
func (n *node) commit(t *txn) {
	n.t.Helper()
	s := n.sched.StartNBTransaction()
	for _, k := range t.keys {
		s.SetValue(k, t.values[k])
	}
	if _, err := s.Commit(context.Background()); err != nil {
		n.t.Fatal(err)
	}
}

// reaches sends a TCP SYN from an outside client through the uplink and tells
// whether it left towards the pod.
func (n *node) reaches(src string, srcMAC [6]byte, dst string, dport uint16) bool {
	n.t.Helper()
	n.mu.Lock()
	n.tx = nil
	n.mu.Unlock()
	if err := n.sim.InjectFrame(uplink, synFrame(n.gbeMAC, srcMAC, src, 40000, dst, dport)); err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.tx {
		f := s.frame
		if s.ifName != podsNIC || len(f) < 38 || binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
			continue
		}
		dstIP := netip.AddrFrom4([4]byte(f[30:34]))
		srcIP := netip.AddrFrom4([4]byte(f[26:30]))
		if dstIP.String() == podIP && binary.BigEndian.Uint16(f[36:38]) == podPort && srcIP.String() == src {
			return true
		}
	}
	return false
}

// synFrame builds an Ethernet frame with an IPv4 TCP SYN (no TCP checksum).
func synFrame(dstMAC, srcMAC [6]byte, src string, sport uint16, dst string, dport uint16) []byte {
	return st.L4Frame(st.ProtoTCP, dstMAC, srcMAC, src, sport, dst, dport)
}

func lb(name, ip string, ranges ...string) *svcmodel.Service {
	return &svcmodel.Service{Name: name, Namespace: "default", ServiceType: "LoadBalancer", ClusterIp: "10.96.0.10",
		LbIngressIps: []string{ip}, LoadbalancerSourceRanges: ranges,
		Port: []*svcmodel.Service_ServicePort{{Name: "http", Protocol: "TCP", Port: svcPort, NodePort: 30080}}}
}

type probe struct {
	name    string
	src     string
	mac     [6]byte
	dst     string
	reaches bool
}

func (n *node) expect(when string, probes ...probe) {
	n.t.Helper()
	for _, p := range probes {
		if got := n.reaches(p.src, p.mac, p.dst, svcPort); got != p.reaches {
			n.t.Errorf("%s: %s (%s -> %s:%d) reaches the pod: %v, want %v", when, p.name, p.src, p.dst, svcPort, got, p.reaches)
		}
	}
}

var (
	inRangeToWeb   = probe{"client in range to the restricted LB IP", inRange, inRangeMAC, webLBIP, true}
	outRangeToWeb  = probe{"client out of range to the restricted LB IP", outRange, outRangeMAC, webLBIP, false}
	outRangeToOpen = probe{"client out of range to the LB IP of a service without ranges", outRange, outRangeMAC, openLBIP, true}
)

func TestSourceRangesFilterTheLBIPOnly(t *testing.T) {
	n := newNode(t)
	fw := New(Deps{Log: quiet(), Lists: ifacls.NewAgentLists(), Uplinks: []string{uplink}})
	web, open := lb("web", webLBIP, webRanges), lb("open", openLBIP)

	n.expect("before any range", inRangeToWeb, probe{"client out of range to the restricted LB IP", outRange, outRangeMAC, webLBIP, true}, outRangeToOpen)

	tx := &txn{}
	fw.ResyncServices(tx, controller.KeyValuePairs{svcmodel.Key("web", "default"): web, svcmodel.Key("open", "default"): open})
	n.commit(tx)
	n.expect("after the resync", inRangeToWeb, outRangeToWeb, outRangeToOpen)
	if got := n.reachesPodDirectly(); !got {
		t.Error("a client out of range no longer reaches a pod IP routed through the node")
	}

	// The ranges widen to the whole subnet, then go.
	widened := lb("web", webLBIP, "192.168.16.0/24")
	tx = &txn{}
	if _, err := fw.UpdateService(tx, web, widened); err != nil {
		t.Fatal(err)
	}
	n.commit(tx)
	n.expect("after widening the ranges", inRangeToWeb, probe{"client in the widened range", outRange, outRangeMAC, webLBIP, true})

	tx = &txn{}
	if _, err := fw.UpdateService(tx, widened, lb("web", webLBIP)); err != nil {
		t.Fatal(err)
	}
	n.commit(tx)
	n.expect("after removing the ranges", inRangeToWeb, probe{"any client", outRange, outRangeMAC, webLBIP, true})
	if v := tx.values[vpp_acl.InterfaceKey(uplink)]; v != nil || !hasKey(tx, vpp_acl.InterfaceKey(uplink)) {
		t.Errorf("the uplink's list was not removed with the last range: %v", v)
	}
}

// reachesPodDirectly sends a SYN from the client out of range to the pod's own IP
// and port.
func (n *node) reachesPodDirectly() bool {
	return n.reaches(outRange, outRangeMAC, podIP, podPort)
}

func hasKey(t *txn, k string) bool {
	_, ok := t.values[k]
	return ok
}

func TestSourceRangesKeepThePolicyACLsOfTheUplink(t *testing.T) {
	n := newNode(t)
	lists := ifacls.NewAgentLists()
	fw := New(Deps{Log: quiet(), Lists: lists, Uplinks: []string{uplink}})

	// The policy renderer's part of the uplink: REFLECTION as input (permit+reflect
	// any), an output ACL.
	reflection := &vpp_acl.ACL{Name: "contiv-policy-REFLECTION", Rules: []*vpp_acl.ACL_Rule{{Action: vpp_acl.ACL_Rule_REFLECT}}}
	global := &vpp_acl.ACL{Name: "contiv-policy-NODE-GLOBAL", Rules: []*vpp_acl.ACL_Rule{{Action: vpp_acl.ACL_Rule_PERMIT}}}
	tx := &txn{}
	tx.Put(vpp_acl.ACLKey(reflection.Name), reflection)
	tx.Put(vpp_acl.ACLKey(global.Name), global)
	lists.Set(tx, ifacls.PolicyOwner, uplink, ifacls.Part{Input: []string{reflection.Name}, Output: []string{global.Name}})
	n.commit(tx)

	tx = &txn{}
	if _, err := fw.UpdateService(tx, nil, lb("web", webLBIP, webRanges)); err != nil {
		t.Fatal(err)
	}
	n.commit(tx)
	got, _ := tx.values[vpp_acl.InterfaceKey(uplink)].(*vpp_acl.InterfaceACLs)
	want := &vpp_acl.InterfaceACLs{Interface: uplink, InputAcls: []string{ACLName(svcID("web")), reflection.Name}, OutputAcls: []string{global.Name}}
	if !proto.Equal(got, want) {
		t.Errorf("uplink lists %v, want %v (the ranges, then the policy's, no permit-rest in between)", got, want)
	}
	n.expect("with the policy ACLs", inRangeToWeb, outRangeToWeb)

	// The policy's part goes: the list ends with the permit of the rest.
	tx = &txn{}
	lists.Set(tx, ifacls.PolicyOwner, uplink, ifacls.Part{})
	n.commit(tx)
	got, _ = tx.values[vpp_acl.InterfaceKey(uplink)].(*vpp_acl.InterfaceACLs)
	want = &vpp_acl.InterfaceACLs{Interface: uplink, InputAcls: []string{ACLName(svcID("web")), PermitRestName}}
	if !proto.Equal(got, want) {
		t.Errorf("uplink lists %v, want %v", got, want)
	}
	n.expect("without the policy ACLs", inRangeToWeb, outRangeToWeb)
	if !n.reachesPodDirectly() {
		t.Error("other traffic through the uplink is dropped")
	}
}

func svcID(name string) renderer.ServiceID {
	return renderer.ServiceID{Namespace: "default", Name: name}
}
