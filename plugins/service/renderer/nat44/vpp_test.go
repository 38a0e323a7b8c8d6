package nat44

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	epmodel "github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
)

// These tests run the renderer's output through the real KV scheduler and the real
// NAT and L3 descriptors into the VPP simulator, and trace packets through the NAT
// tables the simulator holds. The VPP interface descriptor is not written yet: a
// stand-in creates tagged loopbacks with the interfaces' addresses.

// loopbackIfDescriptor stands in for the VPP interface descriptor.
func loopbackIfDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	iface := func(v proto.Message) *ifmodel.Interface { return v.(*ifmodel.Interface) }
	request := func(req, reply govppapi.Message) error { return ch.SendRequest(req).ReceiveReply(reply) }
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
			reply := &interfaces.CreateLoopbackReply{}
			if err := request(&interfaces.CreateLoopback{}, reply); err != nil {
				return nil, err
			}
			sw := reply.SwIfIndex
			if err := request(&interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: sw, Tag: iface(v).Name}, &interfaces.SwInterfaceTagAddDelReply{}); err != nil {
				return nil, err
			}
			for _, a := range iface(v).IpAddresses {
				p := netip.MustParsePrefix(a)
				addr := ip_types.AddressWithPrefix{Address: ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(p.Addr().As4())}, Len: uint8(p.Bits())}
				if err := request(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: addr}, &interfaces.SwInterfaceAddDelAddressReply{}); err != nil {
					return nil, err
				}
			}
			return &ifaceidx.Metadata{SwIfIndex: uint32(sw), IPAddresses: iface(v).IpAddresses}, nil
		},
		Delete: func(_ string, _ proto.Message, md kvapi.Metadata) error {
			sw := interface_types.InterfaceIndex(md.(*ifaceidx.Metadata).SwIfIndex)
			return request(&interfaces.DeleteLoopback{SwIfIndex: sw}, &interfaces.DeleteLoopbackReply{})
		},
		Retrieve: func(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
			byName := make(map[string]kvapi.KVWithMetadata)
			for _, kv := range correlate {
				byName[iface(kv.Value).Name] = kv
			}
			var out []kvapi.KVWithMetadata
			req := ch.SendMultiRequest(&interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
			for {
				d := &interfaces.SwInterfaceDetails{}
				last, err := req.ReceiveReply(d)
				if err != nil {
					return nil, err
				}
				if last {
					return out, nil
				}
				if kv, ok := byName[d.Tag]; ok {
					out = append(out, kvapi.KVWithMetadata{Key: kv.Key, Value: kv.Value, Origin: kvapi.FromNB,
						Metadata: &ifaceidx.Metadata{SwIfIndex: uint32(d.SwIfIndex), IPAddresses: iface(kv.Value).IpAddresses}})
				}
			}
		},
	}
}

// agent is the scheduler with the interface stand-in and the real L3 and NAT
// descriptors, over a connection to the simulator, plus the configuration ipnet
// would own (interfaces, VRFs).
type agent struct {
	t      *testing.T
	vpp    *vpp
	s      *kvscheduler.Scheduler
	infra  map[string]proto.Message
	synced bool // the first resync went in; later ones are full resyncs
}

func newAgent(t *testing.T) *agent {
	t.Helper()
	v := startVPP(t, false)
	s, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: st.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.RegisterKVDescriptor(loopbackIfDescriptor(v.ch)); err != nil {
		t.Fatal(err)
	}
	l3p := &l3plugin.Plugin{Deps: l3plugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: v.conn}}
	natp := &natplugin.Plugin{Deps: natplugin.Deps{Log: st.QuietLog(), Scheduler: s, GoVPP: v.conn}}
	for _, p := range []interface {
		Init() error
		Close() error
	}{l3p, natp} {
		if err := p.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
	}
	a := &agent{t: t, vpp: v, s: s, infra: make(map[string]proto.Message)}
	for name, addrs := range map[string][]string{
		mainIf: {nodeIP + "/24"}, otherIf: {"10.10.10.5/24"}, hostIf: {"172.30.1.1/24"}, bviIf: {"192.168.30.1/24"},
		pod1If: {"10.1.1.1/32"}, pod2If: {"10.1.1.2/32"}, pod3If: {"10.1.1.6/32"},
	} {
		a.infra[ifmodel.InterfaceKey(name)] = &ifmodel.Interface{Name: name, IpAddresses: addrs}
	}
	a.infra[l3.VrfTableKey(mainVRF, l3.VrfTable_IPV4)] = &l3.VrfTable{Id: mainVRF, Label: "mainVRF"}
	a.infra[l3.VrfTableKey(podVRF, l3.VrfTable_IPV4)] = &l3.VrfTable{Id: podVRF, Label: "podVRF"}
	a.commit(a.infra, false)
	return a
}

// commit applies values (nil: delete) in one transaction; a resync replaces the whole
// configuration (infra included) and reconciles it with what VPP holds.
func (a *agent) commit(values map[string]proto.Message, resync bool) {
	a.t.Helper()
	txn := a.s.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resync {
		for k, v := range a.infra {
			txn.SetValue(k, v)
		}
		ctx = kvapi.WithResync(ctx, kvapi.FullResync, false)
	}
	if _, err := txn.Commit(ctx); err != nil {
		a.t.Fatalf("commit: %v", err)
	}
	for k, v := range values {
		if v == nil {
			continue
		}
		if s := a.s.GetValueStatus(k); s.State != kvapi.StateConfigured {
			a.t.Errorf("%s: %s %s", k, s.State, s.Error)
		}
	}
}

// translate asks the simulator where a packet goes.
func (a *agent) translate(proto uint8, src, dst string) []string {
	var out []string
	for _, p := range a.vpp.sim.Translate(vppsim.Packet{Protocol: proto, Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst)}) {
		out = append(out, p.Src.String()+" -> "+p.Dst.String())
	}
	sort.Strings(out)
	return out
}

func TestServicesProgrammedIntoVPP(t *testing.T) {
	e := newEnv(t, envOptions{vpp: true})
	a := e.agent

	n := a.vpp.sim.NAT()
	if !n.Enabled || !n.Forwarding || len(n.Addresses) != 2 {
		t.Errorf("VPP NAT after resync: %+v", n)
	}
	if got := a.vpp.sim.LookupDNAT(17, netip.MustParseAddr(nodeIP), 4789); len(got) != 1 || got[0].VRF != mainVRF {
		t.Errorf("VXLAN identity mapping: %+v", got)
	}

	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 30080))
	svc.ExternalIps = []string{"20.20.20.20"}
	_, txn := e.putService(svc)
	a.commit(txn.Values, false)
	_, txn = e.putEndpoints(st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))))
	a.commit(txn.Values, false)

	tests := []struct {
		name     string
		src, dst string
		want     []string
	}{
		{"pod to cluster IP: self-twice-NAT only towards itself", pod1IP + ":4000", "10.96.0.10:80",
			[]string{natLoop + ":4000 -> " + pod1IP + ":8080", pod1IP + ":4000 -> " + remote1 + ":8080"}},
		{"client to external IP: twice-NAT", "8.8.8.8:5000", "20.20.20.20:80",
			[]string{natLoop + ":5000 -> " + pod1IP + ":8080", natLoop + ":5000 -> " + remote1 + ":8080"}},
		{"client to a node port on the worker's IP", "8.8.8.8:5000", workerIP + ":30080",
			[]string{"8.8.8.8:5000 -> " + pod1IP + ":8080", "8.8.8.8:5000 -> " + remote1 + ":8080"}},
		{"wrong port", "8.8.8.8:5000", "10.96.0.10:81", nil},
	}
	for _, tc := range tests {
		if got := a.translate(6, tc.src, tc.dst); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}

	// The pod became a backend: NAT inside and outside on its interface.
	var pod1Features []string
	for _, i := range a.vpp.sim.NAT().Interfaces {
		if md, ok := a.s.GetMetadataMap(ifaceidx.DescriptorName).GetValue(pod1If); ok && md.(*ifaceidx.Metadata).SwIfIndex == i.SwIfIndex {
			if i.Inside {
				pod1Features = append(pod1Features, "in")
			}
			if i.Outside {
				pod1Features = append(pod1Features, "out")
			}
		}
	}
	if !slices.Equal(pod1Features, []string{"in", "out"}) {
		t.Errorf("features of %s in VPP: %v", pod1If, pod1Features)
	}

	// A full resync of the same state (scheduler reconciling with what VPP holds)
	// changes nothing in VPP.
	before := fmt.Sprintf("%+v", a.vpp.sim.NAT())
	a.vpp.sim.ResetMessageCounts()
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key(svc.Name, svc.Namespace)] = svc
	kube[epmodel.Keyword][epmodel.Key("nginx", "default")] = st.Endpoints("default", "nginx",
		st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, "")))
	a.commit(e.resync(kube).Values, true)
	if after := fmt.Sprintf("%+v", a.vpp.sim.NAT()); after != before {
		t.Errorf("resync changed VPP's NAT:\n%s", st.DiffLines(strings.ReplaceAll(before, " ", "\n"), strings.ReplaceAll(after, " ", "\n")))
	}
	for name, n := range a.vpp.sim.MessageCounts() {
		if n > 0 && strings.Contains(name, "add_del") {
			t.Errorf("resync of an unchanged state sent %d %s", n, name)
		}
	}

	// Deleting the service removes its mappings from VPP.
	_, txn = e.deleteEndpoints("default", "nginx")
	a.commit(txn.Values, false)
	if got := a.vpp.sim.LookupDNAT(6, netip.MustParseAddr("10.96.0.10"), 80); got != nil {
		t.Errorf("deleted service still mapped: %+v", got)
	}
	if v := a.s.GetValueStatus(vpp_nat.DNAT44Key("default/nginx")); v.State != kvapi.StateNonexistent {
		t.Errorf("DNAT of the deleted service: %s", v.State)
	}
}
