package policy

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/aclplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
)

// The traffic model of the Kubernetes network-policy tests: namespaces x, y,
// z (label ns=<name>) with pods a, b, c (label pod=<name>) on this node,
// each serving TCP and UDP on ports 80 and 81 (named serve-<port>-<tcp|udp>).
// Every pod is a TAP of the simulator; the test plays the pods' network
// stacks: a probe sends a TCP SYN (or a UDP datagram) through VPP, the
// destination answers SYN-ACK (or echoes), and the probe succeeds when the
// answer reaches the source.

var (
	tNamespaces = []string{"x", "y", "z"}
	tPods       = []string{"a", "b", "c"}
	tPorts      = []uint16{80, 81}
)

type tPod struct {
	id    podmodel.ID
	ip    netip.Addr
	ip6   netip.Addr // the IPv6 address of a dual-stack pod (traffic6_test.go)
	mac   [6]byte
	sw    uint32
	vppIf string // VPP name of the TAP
	mac2  [6]byte
}

func (p *tPod) logical() string { return "pod-" + p.id.Namespace + "-" + p.id.Name }

type trafficEnv struct {
	t      *testing.T
	sim    *vppsim.Sim
	ch     govppapi.Channel
	sched  *kvscheduler.Scheduler
	plugin *Plugin
	pods   []*tPod
	byVPP  map[string]*tPod
	mu     sync.Mutex
	tx     []txFrame
	sport  uint16
	ifaces map[string]uint32 // logical interface names -> sw_if_index
}

type txFrame struct {
	ifName string
	frame  []byte
}

func tQuiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// trafficIPNet, trafficIPAM, trafficConf: this node without overlay and host
// interconnect, the NIC GbE, pod names mapped to their TAPs.
type trafficIPNet struct{ env *trafficEnv }

func (n trafficIPNet) GetPodIfNames(ns, name string) (string, string, string, bool) {
	for _, p := range n.env.pods {
		if p.id.Namespace == ns && p.id.Name == name {
			return p.logical(), "eth0", "", true
		}
	}
	return "", "", "", false
}
func (trafficIPNet) GetHostInterconnectIfName() string { return "" }
func (trafficIPNet) GetVxlanBVIIfName() string         { return "" }
func (trafficIPNet) GetNodeIP() (net.IP, *net.IPNet) {
	return net.ParseIP("192.168.16.10"), cidr("192.168.16.0/24")
}
func (trafficIPNet) GetHostIPs() []net.IP { return nil }

type trafficIPAM struct{ fakeIPAM }

type trafficConf struct{}

func (trafficConf) IsIPv6() bool                                      { return false }
func (trafficConf) GetMainInterfaceName() string                      { return "GbE" }
func (trafficConf) GetOtherVPPInterfaces() contivconf.OtherInterfaces { return nil }

var _ IPAM = trafficIPAM{}

func newTrafficEnv(t *testing.T) *trafficEnv {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, StatsSocketPath: filepath.Join(filepath.Dir(sock), "stats.sock"),
		NICs: []string{"GbE"}, Log: tQuiet()})
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
	e := &trafficEnv{t: t, sim: sim, ch: ch, byVPP: map[string]*tPod{}, sport: 20000}
	e.wire()
	e.wireOutside()
	sim.SetTxHook(func(ifName string, frame []byte) {
		e.mu.Lock()
		e.tx = append(e.tx, txFrame{ifName, append([]byte(nil), frame...)})
		e.mu.Unlock()
	})
	e.startAgent(conn)
	return e
}

func (e *trafficEnv) call(req, rep govppapi.Message) {
	e.t.Helper()
	if err := e.ch.SendRequest(req).ReceiveReply(rep); err != nil {
		e.t.Fatalf("%s: %v", req.GetMessageName(), err)
	}
}

// wire creates the pod gateway loopback and one TAP per pod, unnumbered to
// it, with the pod's /32 route and static neighbour.
func (e *trafficEnv) wire() {
	lo := &interfaces.CreateLoopbackReply{}
	e.call(&interfaces.CreateLoopback{}, lo)
	gw, _ := ip_types.ParseAddressWithPrefix("10.1.1.1/32")
	e.call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: lo.SwIfIndex, IsAdd: true, Prefix: gw}, &interfaces.SwInterfaceAddDelAddressReply{})
	e.call(&interfaces.SwInterfaceSetFlags{SwIfIndex: lo.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
	for n, ns := range tNamespaces {
		for i, name := range tPods {
			p := &tPod{id: podmodel.ID{Namespace: ns, Name: name}, ip: netip.AddrFrom4([4]byte{10, 1, 1, byte(10*(n+1) + i + 1)}),
				mac: [6]byte{0x02, 0xfe, 0, 0, byte(n), byte(i)}}
			rep := &tapv2.TapCreateV3Reply{}
			e.call(&tapv2.TapCreateV3{ID: ^uint32(0), UseRandomMac: true}, rep)
			p.sw = uint32(rep.SwIfIndex)
			e.call(&interfaces.SwInterfaceSetUnnumbered{SwIfIndex: lo.SwIfIndex, UnnumberedSwIfIndex: rep.SwIfIndex, IsAdd: true},
				&interfaces.SwInterfaceSetUnnumberedReply{})
			e.call(&interfaces.SwInterfaceSetFlags{SwIfIndex: rep.SwIfIndex, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
			addr := ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(p.ip.As4())}
			e.call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: rep.SwIfIndex,
				Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: p.mac, IPAddress: addr}}, &ip_neighbor.IPNeighborAddDelReply{})
			e.call(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: ip_types.Prefix{Address: addr, Len: 32}, NPaths: 1,
				Paths: []fib_types.FibPath{{SwIfIndex: uint32(rep.SwIfIndex), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4,
					Nh: fib_types.FibPathNh{Address: addr.Un}}}}}, &ip.IPRouteAddDelReply{})
			for _, itf := range e.sim.Interfaces() {
				if itf.SwIfIndex == p.sw {
					p.vppIf = itf.Name
					copy(p.mac2[:], itf.MAC)
				}
			}
			e.pods = append(e.pods, p)
			e.byVPP[p.vppIf] = p
		}
	}
}

// The outside world: the NIC GbE has the node address and SNATs (NAT44-ED
// output feature) what leaves through it, as Contiv's natExternalTraffic
// does; the default route points to a gateway on its wire.
var (
	tNodeIP  = netip.MustParseAddr("192.168.16.10")
	tGateway = netip.MustParseAddr("192.168.16.1")
	tGwMAC   = [6]byte{0x02, 0xee, 0, 0, 0, 1}
)

func (e *trafficEnv) wireOutside() {
	addr := func(a netip.Addr) ip_types.Address {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	nodePfx, _ := ip_types.ParseAddressWithPrefix(tNodeIP.String() + "/24")
	e.call(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: 1, IsAdd: true, Prefix: nodePfx}, &interfaces.SwInterfaceAddDelAddressReply{})
	e.call(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}, &interfaces.SwInterfaceSetFlagsReply{})
	e.call(&ip_neighbor.IPNeighborAddDel{IsAdd: true, Neighbor: ip_neighbor.IPNeighbor{SwIfIndex: 1,
		Flags: ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC, MacAddress: tGwMAC, IPAddress: addr(tGateway)}}, &ip_neighbor.IPNeighborAddDelReply{})
	e.call(&ip.IPRouteAddDel{IsAdd: true, Route: ip.IPRoute{Prefix: ip_types.Prefix{Address: addr(netip.IPv4Unspecified())}, NPaths: 1,
		Paths: []fib_types.FibPath{{SwIfIndex: 1, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4, Nh: fib_types.FibPathNh{Address: addr(tGateway).Un}}}}},
		&ip.IPRouteAddDelReply{})
	e.call(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true, Sessions: 63 * 1024}, &nat44_ed.Nat44EdPluginEnableDisableReply{})
	e.call(&nat44_ed.Nat44ForwardingEnableDisable{Enable: true}, &nat44_ed.Nat44ForwardingEnableDisableReply{})
	e.call(&nat44_ed.Nat44EdAddDelOutputInterface{IsAdd: true, SwIfIndex: 1}, &nat44_ed.Nat44EdAddDelOutputInterfaceReply{})
	e.call(&nat44_ed.Nat44AddDelAddressRange{FirstIPAddress: tNodeIP.As4(), LastIPAddress: tNodeIP.As4(), VrfID: ^uint32(0), IsAdd: true},
		&nat44_ed.Nat44AddDelAddressRangeReply{})
}

// probeOutside opens a TCP connection from a pod to an outside address; the
// outside host answers what leaves GbE (SNATed to the node address).
func (e *trafficEnv) probeOutside(src *tPod, dst netip.Addr, port uint16) bool {
	return e.probeOutsideFamily(false, src, dst, port)
}

// probeOutsideFamily is probeOutside over IPv4, or with v6 over IPv6 (from
// the pod's ip6; NAT44 leaves IPv6 alone, so the packet keeps its source).
func (e *trafficEnv) probeOutsideFamily(v6 bool, src *tPod, dst netip.Addr, port uint16) bool {
	build, read, srcIP, leaves := frame, parse, src.ip, tNodeIP
	if v6 {
		build, read, srcIP, leaves = l4Frame6, parseL4Frame6, src.ip6, src.ip6
	}
	e.sport++
	sport := e.sport
	e.takeTx()
	if err := e.sim.InjectFrame(src.vppIf, build(src.mac2, src.mac, srcIP, dst, true, sport, port, synFlag)); err != nil {
		e.t.Fatal(err)
	}
	var gbeMAC [6]byte
	if itf, ok := e.sim.InterfaceByName("GbE"); ok {
		copy(gbeMAC[:], itf.MAC)
	}
	for _, f := range e.takeTx() {
		p, ok := read(f.frame)
		if !ok || f.ifName != "GbE" || p.dst != dst || p.dport != port || p.flags != synFlag {
			continue
		}
		if p.src != leaves {
			e.t.Errorf("%s -> %s left GbE with source %s, want %s", src.id, dst, p.src, leaves)
		}
		if err := e.sim.InjectFrame("GbE", build(gbeMAC, tGwMAC, dst, p.src, true, port, p.sport, synFlag|ackFlag)); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, f := range e.takeTx() {
		p, ok := read(f.frame)
		if ok && f.ifName == src.vppIf && p.src == dst && p.dst == srcIP && p.sport == port && p.dport == sport {
			return true
		}
	}
	return false
}

// startAgent runs the scheduler with the real ACL plugin and an interface
// descriptor that knows the TAPs, and the policy plugin.
func (e *trafficEnv) startAgent(conn *core.Connection) {
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: tQuiet()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	sw := map[string]uint32{"GbE": 1}
	for _, p := range e.pods {
		sw[p.logical()] = p.sw
	}
	e.ifaces = sw
	err = s.RegisterKVDescriptor(&kvapi.KVDescriptor{
		Name:         ifaceidx.DescriptorName,
		NBKeyPrefix:  ifmodel.InterfacePrefix,
		KeySelector:  func(key string) bool { _, ok := ifmodel.ParseNameFromKey(key); return ok },
		KeyLabel:     func(key string) string { n, _ := ifmodel.ParseNameFromKey(key); return n },
		WithMetadata: true,
		Create: func(key string, _ proto.Message) (kvapi.Metadata, error) {
			n, _ := ifmodel.ParseNameFromKey(key)
			return &ifaceidx.Metadata{SwIfIndex: sw[n]}, nil
		},
		Delete: func(string, proto.Message, kvapi.Metadata) error { return nil },
	})
	if err != nil {
		e.t.Fatal(err)
	}
	acl := &aclplugin.Plugin{Deps: aclplugin.Deps{Log: tQuiet(), Scheduler: s, GoVPP: conn}}
	if err := acl.Init(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = acl.Close() })
	txn := s.StartNBTransaction()
	for name := range sw {
		txn.SetValue(ifmodel.InterfaceKey(name), &ifmodel.Interface{Name: name})
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.sched = s
	e.plugin = NewPlugin(Deps{Log: tQuiet(), ContivConf: trafficConf{}, IPAM: trafficIPAM{fakeIPAM{pods: map[podmodel.ID]string{}}},
		IPNet: trafficIPNet{env: e}, PodManager: fakePods{pods: podmanager.LocalPods{}}})
	if err := e.plugin.Init(); err != nil {
		e.t.Fatal(err)
	}
}

// orderedTxn keeps the staging order, as the controller's transaction does.
type orderedTxn struct {
	keys   []string
	values map[string]proto.Message
}

func (t *orderedTxn) stage(k string, v proto.Message) {
	if t.values == nil {
		t.values = map[string]proto.Message{}
	}
	if _, ok := t.values[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.values[k] = v
}
func (t *orderedTxn) Put(k string, v proto.Message) { t.stage(k, v) }
func (t *orderedTxn) Delete(k string)               { t.stage(k, nil) }
func (t *orderedTxn) Get(k string) proto.Message    { return t.values[k] }

// commit applies a transaction of the policy plugin; a resync replaces
// everything (the interfaces included, as the agent's resync would).
func (e *trafficEnv) commit(t *orderedTxn, resync bool) {
	e.t.Helper()
	txn := e.sched.StartNBTransaction()
	ctx := context.Background()
	if resync {
		ctx = kvapi.WithResync(ctx, kvapi.FullResync, false)
		for name := range e.ifaces {
			txn.SetValue(ifmodel.InterfaceKey(name), &ifmodel.Interface{Name: name})
		}
	}
	for _, k := range t.keys {
		txn.SetValue(k, t.values[k])
	}
	if _, err := txn.Commit(ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *trafficEnv) kubeState(policies ...*pm.Policy) controller.KubeStateData {
	st := controller.NewKubeStateData(podmodel.Keyword, nsmodel.Keyword, pm.Keyword)
	for _, ns := range tNamespaces {
		st[nsmodel.Keyword][nsmodel.Key(ns)] = &nsmodel.Namespace{Name: ns, Label: []*nsmodel.Namespace_Label{{Key: "ns", Value: ns}}}
	}
	for _, p := range e.pods {
		m := &podmodel.Pod{Name: p.id.Name, Namespace: p.id.Namespace, IpAddress: p.ip.String(),
			Label: []*podmodel.Pod_Label{{Key: "pod", Value: p.id.Name}}}
		if p.ip6.IsValid() {
			m.IpAddresses = []string{p.ip.String(), p.ip6.String()}
		}
		c := &podmodel.Pod_Container{Name: "srv"}
		for _, port := range tPorts {
			c.Port = append(c.Port, &podmodel.Pod_Container_Port{Name: fmt.Sprintf("serve-%d-tcp", port), ContainerPort: int32(port)},
				&podmodel.Pod_Container_Port{Name: fmt.Sprintf("serve-%d-udp", port), ContainerPort: int32(port), Protocol: podmodel.Pod_Container_Port_UDP})
		}
		m.Container = []*podmodel.Pod_Container{c}
		st[podmodel.Keyword][podmodel.Key(p.id.Name, p.id.Namespace)] = m
	}
	for _, pol := range policies {
		st[pm.Keyword][pm.Key(pol.Name, pol.Namespace)] = pol
	}
	return st
}

func (e *trafficEnv) resync(policies ...*pm.Policy) {
	e.t.Helper()
	txn := &orderedTxn{}
	if err := e.plugin.Resync(controller.NewDBResync(), e.kubeState(policies...), 1, txn); err != nil {
		e.t.Fatal(err)
	}
	e.commit(txn, true)
}

func (e *trafficEnv) update(ev controller.Event) {
	e.t.Helper()
	txn := &orderedTxn{}
	if _, err := e.plugin.Update(ev, txn); err != nil {
		e.t.Fatal(err)
	}
	e.commit(txn, false)
}

// frame builds an Ethernet/IPv4/TCP-or-UDP frame.
func frame(dstMAC, srcMAC [6]byte, src, dst netip.Addr, tcp bool, sport, dport uint16, flags uint8) []byte {
	l4len := 8
	proto := uint8(17)
	if tcp {
		l4len, proto = 20, 6
	}
	b := make([]byte, 14+20+l4len)
	copy(b[0:6], dstMAC[:])
	copy(b[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	h := b[14:34]
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:4], uint16(20+l4len))
	h[8], h[9] = 64, proto
	s4, d4 := src.As4(), dst.As4()
	copy(h[12:16], s4[:])
	copy(h[16:20], d4[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i : i+2]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(h[10:12], ^uint16(sum))
	l4 := b[34:]
	binary.BigEndian.PutUint16(l4[0:2], sport)
	binary.BigEndian.PutUint16(l4[2:4], dport)
	if tcp {
		l4[12] = 5 << 4
		l4[13] = flags
		binary.BigEndian.PutUint16(l4[14:16], 65535)
	} else {
		binary.BigEndian.PutUint16(l4[4:6], 8)
	}
	return b
}

// parsed is what a pod's stack reads of a frame.
type parsed struct {
	src, dst     netip.Addr
	tcp          bool
	sport, dport uint16
	flags        uint8
}

func parse(b []byte) (parsed, bool) {
	if len(b) < 34 || binary.BigEndian.Uint16(b[12:14]) != 0x0800 {
		return parsed{}, false
	}
	h := b[14:]
	ihl := int(h[0]&0x0f) * 4
	p := parsed{src: netip.AddrFrom4([4]byte(h[12:16])), dst: netip.AddrFrom4([4]byte(h[16:20]))}
	l4 := h[ihl:]
	switch h[9] {
	case 6:
		if len(l4) < 20 {
			return parsed{}, false
		}
		p.tcp, p.flags = true, l4[13]
	case 17:
		if len(l4) < 8 {
			return parsed{}, false
		}
	default:
		return parsed{}, false
	}
	p.sport, p.dport = binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
	return p, true
}

const (
	synFlag = 0x02
	ackFlag = 0x10
)

func (e *trafficEnv) takeTx() []txFrame {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.tx
	e.tx = nil
	return out
}

// probe opens a connection (TCP) or sends a datagram (UDP) from src to dst
// and says whether the answer came back.
func (e *trafficEnv) probe(src, dst *tPod, tcp bool, port uint16) bool {
	return e.probeFamily(false, src, dst, tcp, port)
}

// probeFamily is probe over IPv4, or with v6 over IPv6 (the pods' ip6).
func (e *trafficEnv) probeFamily(v6 bool, src, dst *tPod, tcp bool, port uint16) bool {
	build, read, addr := frame, parse, func(p *tPod) netip.Addr { return p.ip }
	if v6 {
		build, read, addr = l4Frame6, parseL4Frame6, func(p *tPod) netip.Addr { return p.ip6 }
	}
	e.sport++
	sport := e.sport
	e.takeTx()
	if err := e.sim.InjectFrame(src.vppIf, build(src.mac2, src.mac, addr(src), addr(dst), tcp, sport, port, synFlag)); err != nil {
		e.t.Fatal(err)
	}
	// the destination's stack answers what reached it
	for _, f := range e.takeTx() {
		p, ok := read(f.frame)
		if !ok || f.ifName != dst.vppIf || p.dst != addr(dst) || p.dport != port || p.tcp != tcp || (tcp && p.flags != synFlag) {
			continue
		}
		if err := e.sim.InjectFrame(dst.vppIf, build(dst.mac2, dst.mac, addr(dst), p.src, tcp, port, p.sport, synFlag|ackFlag)); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, f := range e.takeTx() {
		p, ok := read(f.frame)
		if ok && f.ifName == src.vppIf && p.src == addr(dst) && p.dst == addr(src) && p.sport == port && p.dport == sport {
			return true
		}
	}
	return false
}

// matrix probes every pair of distinct pods on every port and protocol.
type probeKey struct {
	src, dst podmodel.ID
	tcp      bool
	port     uint16
}

func (e *trafficEnv) matrix() map[probeKey]bool {
	out := map[probeKey]bool{}
	for _, s := range e.pods {
		for _, d := range e.pods {
			if s == d {
				continue
			}
			for _, tcp := range []bool{true, false} {
				for _, port := range tPorts {
					out[probeKey{s.id, d.id, tcp, port}] = e.probe(s, d, tcp, port)
				}
			}
		}
	}
	return out
}

// expect evaluates the truth of a case for every probe.
func (e *trafficEnv) expect(allowed func(k probeKey) bool) map[probeKey]bool {
	out := map[probeKey]bool{}
	for _, s := range e.pods {
		for _, d := range e.pods {
			if s == d {
				continue
			}
			for _, tcp := range []bool{true, false} {
				for _, port := range tPorts {
					k := probeKey{s.id, d.id, tcp, port}
					out[k] = allowed(k)
				}
			}
		}
	}
	return out
}

// render prints one protocol/port matrix: rows sources, columns destinations.
func (e *trafficEnv) render(m map[probeKey]bool, tcp bool, port uint16) []string {
	head := "      "
	for _, d := range e.pods {
		head += d.id.Namespace + "/" + d.id.Name + " "
	}
	lines := []string{head}
	for _, s := range e.pods {
		line := s.id.Namespace + "/" + s.id.Name + "   "
		for _, d := range e.pods {
			switch {
			case s == d:
				line += "  -  "
			case m[probeKey{s.id, d.id, tcp, port}]:
				line += "  .  "
			default:
				line += "  X  "
			}
		}
		lines = append(lines, line)
	}
	return lines
}

func (e *trafficEnv) check(name string, want map[probeKey]bool) {
	e.t.Helper()
	got := e.matrix()
	var b strings.Builder
	bad := false
	for _, tcp := range []bool{true, false} {
		for _, port := range tPorts {
			same := true
			for k, w := range want {
				if k.tcp == tcp && k.port == port && got[k] != w {
					same = false
				}
			}
			if same {
				continue
			}
			bad = true
			proto := "UDP"
			if tcp {
				proto = "TCP"
			}
			fmt.Fprintf(&b, "\n%s %s/%d: expected (left) and observed (right); . reachable, X blocked\n", name, proto, port)
			l, r := e.render(want, tcp, port), e.render(got, tcp, port)
			for i := range l {
				fmt.Fprintf(&b, "%s   |   %s\n", l[i], r[i])
			}
		}
	}
	if bad {
		e.t.Error(b.String())
	}
}

func tsel(k, v string) *pm.Policy_LabelSelector {
	return &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: k, Value: v}}}
}

func tport(tcp bool, n int32) *pm.Policy_Port {
	p := &pm.Policy_Port{Port: &pm.Policy_Port_PortNameOrNumber{Number: n}}
	if !tcp {
		p.Protocol = pm.Policy_Port_UDP
	}
	return p
}

func is(id podmodel.ID, ns, name string) bool { return id.Namespace == ns && id.Name == name }

// TestTrafficMatrixMatchesKubernetes probes every pair of the x/y/z × a/b/c
// model on TCP and UDP 80 and 81 for each case and compares the whole
// reachability matrix with what Kubernetes defines.
func TestTrafficMatrixMatchesKubernetes(t *testing.T) {
	if testing.Short() {
		t.Skip("traffic matrix: 288 probes per case")
	}
	xa := &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: "pod", Value: "a"}}}
	cases := []struct {
		name     string
		policies []*pm.Policy
		allowed  func(k probeKey) bool
	}{
		{"no policies", nil, func(probeKey) bool { return true }},
		{"default deny ingress in x", []*pm.Policy{{Namespace: "x", Name: "deny", Pods: &pm.Policy_LabelSelector{}}},
			func(k probeKey) bool { return k.dst.Namespace != "x" }},
		{"default deny egress of x/a", []*pm.Policy{{Namespace: "x", Name: "deny", Pods: xa, PolicyType: pm.Policy_EGRESS}},
			func(k probeKey) bool { return !is(k.src, "x", "a") }},
		{"allow x/a from x/b only", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: tsel("pod", "b")}}}}}},
			func(k probeKey) bool { return !is(k.dst, "x", "a") || is(k.src, "x", "b") }},
		{"allow x/a from namespace y", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: tsel("ns", "y")}}}}}},
			func(k probeKey) bool { return !is(k.dst, "x", "a") || k.src.Namespace == "y" }},
		{"allow x/a from pod b AND namespace y", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: tsel("ns", "y"), Pods: tsel("pod", "b")}}}}}},
			func(k probeKey) bool { return !is(k.dst, "x", "a") || is(k.src, "y", "b") }},
		{"allow x/a from an ipBlock with except", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{
				Cidr: "10.1.1.20/30", Except: []string{"10.1.1.22/32"}}}}}}}}, // .20-.23: y/a .21, y/b .22, y/c .23
			func(k probeKey) bool { return !is(k.dst, "x", "a") || is(k.src, "y", "a") || is(k.src, "y", "c") }},
		{"allow x/a on the named port serve-80-tcp", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{
				Type: pm.Policy_Port_PortNameOrNumber_NAME, Name: "serve-80-tcp"}}}}}}},
			func(k probeKey) bool { return !is(k.dst, "x", "a") || (k.tcp && k.port == 80) }},
		{"allow x/a on the port range TCP 80-81", []*pm.Policy{{Namespace: "x", Name: "p", Pods: xa,
			IngressRule: []*pm.Policy_IngressRule{{Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{Number: 80}, EndPort: 81}}}}}},
			func(k probeKey) bool { return !is(k.dst, "x", "a") || k.tcp }},
		{"x/a may only send UDP 81 to y/b; z/c only receives from x", []*pm.Policy{
			{Namespace: "x", Name: "eg", Pods: xa, PolicyType: pm.Policy_EGRESS,
				EgressRule: []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{tport(false, 81)}, To: []*pm.Policy_Peer{{Namespaces: tsel("ns", "y"), Pods: tsel("pod", "b")}}}}},
			{Namespace: "z", Name: "in", Pods: tsel("pod", "c"), IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Namespaces: tsel("ns", "x")}}}}},
		},
			func(k probeKey) bool {
				if is(k.src, "x", "a") && !(is(k.dst, "y", "b") && !k.tcp && k.port == 81) {
					return false
				}
				return !is(k.dst, "z", "c") || k.src.Namespace == "x"
			}},
	}
	e := newTrafficEnv(t)
	for _, c := range cases {
		e.resync(c.policies...)
		e.check(c.name, e.expect(c.allowed))
	}

	// a policy added, changed and deleted while the pods keep probing
	e.resync()
	pol := &pm.Policy{Namespace: "x", Name: "live", Pods: xa,
		IngressRule: []*pm.Policy_IngressRule{{From: []*pm.Policy_Peer{{Pods: tsel("pod", "b")}}}}}
	e.update(&controller.KubeStateChange{Resource: pm.Keyword, Key: pm.Key("live", "x"), NewValue: pol})
	e.check("policy added", e.expect(func(k probeKey) bool { return !is(k.dst, "x", "a") || is(k.src, "x", "b") }))
	changed := proto.Clone(pol).(*pm.Policy)
	changed.IngressRule[0].From = []*pm.Policy_Peer{{Namespaces: tsel("ns", "z")}}
	changed.IngressRule[0].Port = []*pm.Policy_Port{tport(false, 80)}
	e.update(&controller.KubeStateChange{Resource: pm.Keyword, Key: pm.Key("live", "x"), PrevValue: pol, NewValue: changed})
	e.check("policy changed", e.expect(func(k probeKey) bool {
		return !is(k.dst, "x", "a") || (k.src.Namespace == "z" && !k.tcp && k.port == 80)
	}))
	e.update(&controller.KubeStateChange{Resource: pm.Keyword, Key: pm.Key("live", "x"), PrevValue: changed})
	e.check("policy deleted", e.expect(func(probeKey) bool { return true }))
}

// TestTrafficEgressToOutsideHoldsDespiteSNAT: a pod allowed to reach one
// outside address on one port reaches exactly that, although the NIC
// SNATs before its output ACL (VPP 25.10), and nothing else; the other pods
// are not restricted.
func TestTrafficEgressToOutsideHoldsDespiteSNAT(t *testing.T) {
	e := newTrafficEnv(t)
	xa, xb := e.pods[0], e.pods[1]
	google, other := netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("8.8.4.4")
	check := func(what string, src *tPod, dst netip.Addr, port uint16, want bool) {
		t.Helper()
		if got := e.probeOutside(src, dst, port); got != want {
			t.Errorf("%s: %s -> %s:%d reachable = %v, want %v", what, src.id, dst, port, got, want)
		}
	}
	e.resync()
	check("no policy", xa, other, 80, true)
	e.resync(&pm.Policy{Namespace: "x", Name: "out", Pods: tsel("pod", "a"), PolicyType: pm.Policy_EGRESS,
		EgressRule: []*pm.Policy_EgressRule{{Port: []*pm.Policy_Port{tport(true, 80)},
			To: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "8.8.8.8/32"}}}}}})
	check("allowed destination and port", xa, google, 80, true)
	check("other port", xa, google, 443, false)
	check("other destination", xa, other, 80, false)
	check("unrestricted pod", xb, other, 443, true)
	if e.probe(xa, xb, true, 80) {
		t.Error("x/a reaches x/b although its egress allows only 8.8.8.8:80")
	}
}
