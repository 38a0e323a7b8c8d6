package healthcheck

import (
	"net"
	"testing"

	"google.golang.org/protobuf/proto"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// stagingTxn records what is staged (nil: a delete).
type stagingTxn map[string]proto.Message

func (t stagingTxn) Put(k string, v proto.Message) { t[k] = v }
func (t stagingTxn) Get(k string) proto.Message    { return t[k] }
func (t stagingTxn) Delete(k string)               { t[k] = nil }

func hostMapping(name string, port uint16) *vpp_nat.DNat44 {
	return &vpp_nat.DNat44{Label: MappingLabel(renderer.ServiceID{Namespace: "default", Name: name}),
		StMappings: []*vpp_nat.DNat44_StaticMapping{{ExternalIp: "192.168.16.1", ExternalPort: uint32(port), Protocol: vpp_nat.DNat44_TCP,
			LocalIps: []*vpp_nat.DNat44_StaticMapping_LocalIP{{VrfId: 1, LocalIp: "172.30.1.2", LocalPort: uint32(port)}},
			TwiceNat: vpp_nat.DNat44_StaticMapping_ENABLED}}}
}

func TestHealthCheckPortsAreMappedFromTheNodeIPToTheHost(t *testing.T) {
	s := NewServer(ServerDeps{Log: quiet()})
	t.Cleanup(func() { _ = s.Close() })
	tr := NewTracker(s, &Mappings{NodeIP: func() net.IP { return net.ParseIP("192.168.16.1") },
		HostIP: func() net.IP { return net.ParseIP("172.30.1.2") }, VRF: 1})
	port, other := freePort(t), freePort(t)
	key := vpp_nat.DNAT44Key(MappingLabel(renderer.ServiceID{Namespace: "default", Name: "web"}))

	txn := stagingTxn{}
	tr.ResyncServices(txn, controller.KeyValuePairs{svcmodel.Key("web", "default"): lbService("web", "Local", port),
		svcmodel.Key("cluster", "default"): lbService("cluster", "Cluster", other)})
	if len(txn) != 1 || !proto.Equal(txn[key], hostMapping("web", port)) {
		t.Fatalf("resync staged %v, want only %v", txn, hostMapping("web", port))
	}

	txn = stagingTxn{}
	change, err := tr.UpdateService(txn, lbService("web", "Local", port), lbService("web", "Local", other))
	if err != nil || change == "" || len(txn) != 1 || !proto.Equal(txn[key], hostMapping("web", other)) {
		t.Fatalf("port change: %q %v, staged %v", change, err, txn)
	}
	txn = stagingTxn{}
	if change, err := tr.UpdateService(txn, lbService("web", "Local", other), lbService("web", "Local", other)); err != nil || change != "" || len(txn) != 0 {
		t.Fatalf("no change: %q %v, staged %v", change, err, txn)
	}
	txn = stagingTxn{}
	if _, err := tr.UpdateService(txn, lbService("web", "Local", other), nil); err != nil || len(txn) != 1 || txn[key] != nil {
		t.Fatalf("delete: %v, staged %v, want the deletion of %s", err, txn, key)
	}
}

// TestHealthCheckPortsAreMappedWithCNATWhenNAT44IsOff: with serviceRenderer cnat the
// mapping is a cnat translation of the node IP (a real address) to the host, sourced
// from VPP's end of the interconnect so that the answer returns through VPP; nothing
// of NAT44 is staged.
func TestHealthCheckPortsAreMappedWithCNATWhenNAT44IsOff(t *testing.T) {
	s := NewServer(ServerDeps{Log: quiet()})
	t.Cleanup(func() { _ = s.Close() })
	tr := NewTracker(s, &Mappings{NodeIP: func() net.IP { return net.ParseIP("192.168.16.1") },
		HostIP: func() net.IP { return net.ParseIP("172.30.1.2") }, VRF: 1,
		CNAT: true, VPPIP: func() net.IP { return net.ParseIP("172.30.1.1") }})
	port := freePort(t)
	txn := stagingTxn{}
	tr.ResyncServices(txn, controller.KeyValuePairs{svcmodel.Key("web", "default"): lbService("web", "Local", port)})
	key := vpp_cnat.TranslationSetKey("DNAT-healthcheck/default/web")
	want := &vpp_cnat.TranslationSet{Label: "DNAT-healthcheck/default/web", Translations: []*vpp_cnat.Translation{{
		VipAddress: "192.168.16.1", VipPort: uint32(port), Protocol: vpp_cnat.Protocol_TCP,
		IsRealIp: true, AllocPort: true, Paths: []*vpp_cnat.Path{{Dst: &vpp_cnat.Endpoint{Address: "172.30.1.2", Port: uint32(port)},
			Src: &vpp_cnat.Endpoint{Address: "172.30.1.1"}}}}}}
	if len(txn) != 1 || !proto.Equal(txn[key], want) {
		t.Fatalf("resync staged %v, want only %s = %v", txn, key, want)
	}
	txn = stagingTxn{}
	if _, err := tr.UpdateService(txn, lbService("web", "Local", port), nil); err != nil || len(txn) != 1 || txn[key] != nil {
		t.Fatalf("delete: %v, staged %v, want the deletion of %s", err, txn, key)
	}
}
