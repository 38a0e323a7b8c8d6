package l3plugin_test

import (
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/l3plugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

func TestMain(m *testing.M) { os.Exit(linuxtest.Main(m)) }

// agent is one run of the Linux descriptors, driven directly, with a fake of
// the scheduler's interface metadata map.
type agent struct {
	t      *testing.T
	ifMeta linuxtest.MetadataMap
	iface  *kvapi.KVDescriptor
	route  *kvapi.KVDescriptor
	arp    *kvapi.KVDescriptor
}

func newAgent(t *testing.T) *agent {
	a := &agent{t: t, ifMeta: linuxtest.MetadataMap{}}
	ns := &nsplugin.Plugin{}
	getMeta := func() kvapi.MetadataMap { return a.ifMeta }
	log := linuxtest.Logger(t)
	a.iface = ifplugin.NewInterfaceDescriptor(ifplugin.DescriptorDeps{Log: log, NsPlugin: ns, IfMetadata: getMeta})
	deps := l3plugin.DescriptorDeps{Log: log, NsPlugin: ns, IfMetadata: getMeta}
	a.route = l3plugin.NewRouteDescriptor(deps)
	a.arp = l3plugin.NewARPDescriptor(deps)
	return a
}

// descriptor returns the descriptor that owns key.
func (a *agent) descriptor(key string) *kvapi.KVDescriptor {
	for _, d := range []*kvapi.KVDescriptor{a.iface, a.route, a.arp} {
		if d.KeySelector(key) {
			return d
		}
	}
	a.t.Fatalf("no descriptor for %s", key)
	return nil
}

func (a *agent) create(kv kvapi.KeyValuePair) {
	a.t.Helper()
	d := a.descriptor(kv.Key)
	if err := d.Validate(kv.Key, kv.Value); err != nil {
		a.t.Fatalf("Validate(%s): %v", kv.Key, err)
	}
	m, err := d.Create(kv.Key, kv.Value)
	if err != nil {
		a.t.Fatalf("Create(%s): %v", kv.Key, err)
	}
	if d.WithMetadata {
		a.ifMeta[d.KeyLabel(kv.Key)] = m
	}
}

func (a *agent) delete(kv kvapi.KeyValuePair) {
	a.t.Helper()
	d := a.descriptor(kv.Key)
	var m kvapi.Metadata
	if d.WithMetadata {
		m = a.ifMeta[d.KeyLabel(kv.Key)]
	}
	if err := d.Delete(kv.Key, kv.Value, m); err != nil {
		a.t.Fatalf("Delete(%s): %v", kv.Key, err)
	}
	if d.WithMetadata {
		delete(a.ifMeta, d.KeyLabel(kv.Key))
	}
}

// podConfig is what ipnet stages for one pod in VETH mode (docs/dev-guide/UPSTREAM.md §3), in
// creation order.
func podConfig(podPath, hostPath string) []kvapi.KeyValuePair {
	podNs := &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: podPath}
	hostNs := &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: hostPath}
	const cid = "0123456789abcdef0123"
	veth1 := &linuxif.Interface{
		Name: "veth1-" + cid, Type: linuxif.Interface_VETH, Namespace: podNs, HostIfName: "eth0",
		PhysAddress: "02:fe:12:34:56:78", IpAddresses: []string{"10.1.1.2/32"}, Mtu: 1450, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2-" + cid,
			RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
			TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED}},
	}
	veth2 := &linuxif.Interface{
		Name: "veth2-" + cid, Type: linuxif.Interface_VETH, Namespace: hostNs, HostIfName: cid[:15],
		Mtu: 1450, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: veth1.Name}},
	}
	loop := &linuxif.Interface{
		Name: "linux-loop-" + cid, Type: linuxif.Interface_LOOPBACK, Namespace: podNs, HostIfName: "lo",
		IpAddresses: []string{"127.0.0.1/8", "::1/128"}, Enabled: true,
	}
	gwRoute := &linuxl3.Route{OutgoingInterface: veth1.Name, Scope: linuxl3.Route_LINK, DstNetwork: "10.1.1.1/32"}
	defRoute := &linuxl3.Route{OutgoingInterface: veth1.Name, Scope: linuxl3.Route_GLOBAL, DstNetwork: "0.0.0.0/0", GwAddr: "10.1.1.1"}
	arp := &linuxl3.ARPEntry{Interface: veth1.Name, IpAddress: "10.1.1.1", HwAddress: "02:fe:ed:cb:a9:87"}
	return []kvapi.KeyValuePair{
		{Key: linuxif.InterfaceKey(loop.Name), Value: loop},
		{Key: linuxif.InterfaceKey(veth1.Name), Value: veth1},
		{Key: linuxif.InterfaceKey(veth2.Name), Value: veth2},
		{Key: linuxl3.ARPEntryKey(arp.Interface, arp.IpAddress), Value: arp},
		{Key: linuxl3.RouteKey(gwRoute.DstNetwork, gwRoute.OutgoingInterface), Value: gwRoute},
		{Key: linuxl3.RouteKey(defRoute.DstNetwork, defRoute.OutgoingInterface), Value: defRoute},
	}
}

// podRoutes lists the IPv4 main-table routes of a namespace as "dst gw scope".
func podRoutes(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range routes {
		gw := "-"
		if r.Gw != nil {
			gw = r.Gw.String()
		}
		out = append(out, r.Dst.String()+" "+gw+" "+r.Scope.String())
	}
	slices.Sort(out)
	return out
}

func TestPodWiringVethModeIsConfiguredAdoptedAndRemoved(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	_, hostPath := linuxtest.NewNamespace(t)
	podH, hostH := linuxtest.Handle(t, podPath), linuxtest.Handle(t, hostPath)
	cfg := podConfig(podPath, hostPath)
	a := newAgent(t)

	// Dependencies as the scheduler sees them.
	if deps := a.route.Dependencies(cfg[5].Key, cfg[5].Value); len(deps) != 2 ||
		deps[0].Key != cfg[1].Key || deps[1].Label != l3plugin.DepGatewayReachable || !deps[1].AnyOf.Matches(cfg[4].Key) {
		t.Fatalf("default route dependencies = %+v", deps)
	}
	if deps := a.arp.Dependencies(cfg[3].Key, cfg[3].Value); len(deps) != 1 || deps[0].Key != cfg[1].Key {
		t.Fatalf("ARP dependencies = %+v", deps)
	}

	for _, kv := range cfg {
		a.create(kv)
	}

	eth0, err := podH.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	addrs, _ := podH.AddrList(eth0, netlink.FAMILY_V4)
	if len(addrs) != 1 || addrs[0].IPNet.String() != "10.1.1.2/32" {
		t.Errorf("eth0 addresses = %v", addrs)
	}
	if _, err := hostH.LinkByName("0123456789abcde"); err != nil {
		t.Errorf("host end: %v", err)
	}
	wantRoutes := []string{"0.0.0.0/0 10.1.1.1 universe", "10.1.1.1/32 - link"}
	if got := podRoutes(t, podH); !slices.Equal(got, wantRoutes) {
		t.Errorf("pod routes = %v, want %v", got, wantRoutes)
	}
	neighs, err := podH.NeighList(eth0.Attrs().Index, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(neighs, func(n netlink.Neigh) bool { return n.IP.Equal(net.ParseIP("10.1.1.1")) }); i < 0 ||
		neighs[i].HardwareAddr.String() != "02:fe:ed:cb:a9:87" || neighs[i].State != netlink.NUD_PERMANENT {
		t.Errorf("pod neighbours = %+v", neighs)
	}

	// Re-applying the same values is a no-op.
	for _, kv := range cfg {
		d := a.descriptor(kv.Key)
		if !d.ValueComparator(kv.Key, kv.Value, proto.Clone(kv.Value)) {
			t.Errorf("ValueComparator(%s, clone) = false", kv.Key)
		}
		if d.Update != nil {
			var m kvapi.Metadata
			if d.WithMetadata {
				m = a.ifMeta[d.KeyLabel(kv.Key)]
			}
			if _, err := d.Update(kv.Key, kv.Value, proto.Clone(kv.Value), m); err != nil {
				t.Errorf("Update(%s, same): %v", kv.Key, err)
			}
		}
	}
	if got := podRoutes(t, podH); !slices.Equal(got, wantRoutes) {
		t.Errorf("pod routes after re-apply = %v", got)
	}

	// A restarted agent retrieves exactly the NB key-value pairs.
	fresh := newAgent(t)
	var retrieved []kvapi.KVWithMetadata
	for _, d := range []*kvapi.KVDescriptor{fresh.iface, fresh.route, fresh.arp} {
		var correlate []kvapi.KVWithMetadata
		for _, kv := range cfg {
			if d.KeySelector(kv.Key) {
				correlate = append(correlate, kvapi.KVWithMetadata{Key: kv.Key, Value: kv.Value})
			}
		}
		got, err := d.Retrieve(correlate)
		if err != nil {
			t.Fatalf("%s Retrieve: %v", d.Name, err)
		}
		for _, kv := range got {
			if d.WithMetadata {
				fresh.ifMeta[d.KeyLabel(kv.Key)] = kv.Metadata
			}
		}
		retrieved = append(retrieved, got...)
	}
	if len(retrieved) != len(cfg) {
		t.Fatalf("retrieved %d values, want %d: %v", len(retrieved), len(cfg), retrieved)
	}
	for _, kv := range cfg {
		i := slices.IndexFunc(retrieved, func(r kvapi.KVWithMetadata) bool { return r.Key == kv.Key })
		if i < 0 || !proto.Equal(retrieved[i].Value, kv.Value) || retrieved[i].Origin != kvapi.FromNB {
			t.Errorf("retrieved %s = %+v, want %v", kv.Key, retrieved, kv.Value)
		}
	}

	// The restarted agent deletes everything, in reverse order.
	for i := len(cfg) - 1; i >= 0; i-- {
		fresh.delete(cfg[i])
	}
	if got := podRoutes(t, podH); len(got) != 0 {
		t.Errorf("pod routes after delete = %v", got)
	}
	for path, h := range map[string]*netlink.Handle{podPath: podH, hostPath: hostH} {
		links, _ := h.LinkList()
		if len(links) != 1 || links[0].Attrs().Name != "lo" {
			t.Errorf("links left in %s: %v", path, links)
		}
	}
	lo, _ := podH.LinkByName("lo")
	if lo.Attrs().Flags&net.FlagUp == 0 {
		t.Error("pod loopback set down on delete")
	}
}

func TestRouteChangeIsARecreateAndRetrieveReportsTheKernelGateway(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	podH := linuxtest.Handle(t, podPath)
	a := newAgent(t)
	iface := &linuxif.Interface{
		Name: "tap1", Type: linuxif.Interface_LOOPBACK, HostIfName: "lo", Enabled: true,
		Namespace:   &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: podPath},
		IpAddresses: []string{"172.30.1.2/24"},
	}
	route := &linuxl3.Route{OutgoingInterface: "tap1", DstNetwork: "10.1.0.0/16", GwAddr: "172.30.1.1", Metric: 10}
	key := linuxl3.RouteKey(route.DstNetwork, route.OutgoingInterface)
	a.create(kvapi.KeyValuePair{Key: linuxif.InterfaceKey(iface.Name), Value: iface})
	t.Cleanup(func() { a.delete(kvapi.KeyValuePair{Key: linuxif.InterfaceKey(iface.Name), Value: iface}) })

	deps := a.route.Dependencies(key, route)
	if len(deps) != 2 || !deps[1].AnyOf.Matches(linuxif.InterfaceAddressKey("tap1", "172.30.1.2/24")) {
		t.Fatalf("dependencies = %+v: the covering interface address must satisfy the gateway", deps)
	}
	a.create(kvapi.KeyValuePair{Key: key, Value: route})
	if a.route.Update != nil {
		t.Error("routes are updated in place; want delete and create")
	}
	other := proto.Clone(route).(*linuxl3.Route)
	other.GwAddr = "172.30.1.3"
	if a.route.ValueComparator(key, route, other) {
		t.Error("different gateways compare equal")
	}
	got, err := a.route.Retrieve([]kvapi.KVWithMetadata{{Key: key, Value: other}})
	if err != nil || len(got) != 1 || got[0].Value.(*linuxl3.Route).GwAddr != "172.30.1.1" {
		t.Fatalf("Retrieve = %+v, %v; want the kernel's gateway 172.30.1.1", got, err)
	}
	a.delete(kvapi.KeyValuePair{Key: key, Value: route})
	for _, r := range podRoutes(t, podH) {
		if strings.HasPrefix(r, "10.1.0.0/16") {
			t.Errorf("route left: %s", r)
		}
	}
}

func TestRouteOnUnconfiguredInterfaceIsRetriable(t *testing.T) {
	a := newAgent(t)
	route := &linuxl3.Route{OutgoingInterface: "nothere", DstNetwork: "10.1.0.0/16", Scope: linuxl3.Route_LINK}
	_, err := a.route.Create(linuxl3.RouteKey(route.DstNetwork, "nothere"), route)
	if err == nil || !a.route.IsRetriableFailure(err) || !strings.Contains(err.Error(), "nothere") {
		t.Fatalf("Create = %v, want a retriable error naming the interface", err)
	}
	if err := a.route.Delete(linuxl3.RouteKey(route.DstNetwork, "nothere"), route, nil); err != nil {
		t.Fatalf("Delete of a route whose interface is gone = %v", err)
	}
}

func TestGatewayReachableRule(t *testing.T) {
	route := &linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "0.0.0.0/0", GwAddr: "10.1.1.1"}
	deps := l3plugin.RouteDependencies(route)
	if len(deps) != 2 || deps[0].Key != linuxif.InterfaceKey("if1") || deps[0].Label != l3plugin.DepInterface {
		t.Fatalf("dependencies = %+v", deps)
	}
	gw := deps[1].AnyOf
	tests := []struct {
		key  string
		want bool
	}{
		{linuxl3.RouteKey("10.1.1.1/32", "if1"), true},
		{linuxl3.RouteKey("10.1.1.1/32", "if10"), false},
		{linuxl3.RouteKey("10.1.1.0/24", "if1"), false},
		{linuxif.InterfaceAddressKey("if1", "10.1.1.2/24"), true},
		{linuxif.InterfaceAddressKey("if1", "10.1.1.2/32"), false},
		{linuxif.InterfaceAddressKey("if1", "10.2.1.2/24"), false},
		{linuxif.InterfaceAddressKey("if2", "10.1.1.2/24"), false},
		{linuxif.InterfaceAddressKey("if1", "fd00::1/64"), false},
	}
	for _, tc := range tests {
		if got := gw.Matches(tc.key); got != tc.want {
			t.Errorf("gateway-reachable matches %s = %v, want %v", tc.key, got, tc.want)
		}
	}
	for _, r := range []*linuxl3.Route{
		{OutgoingInterface: "if1", DstNetwork: "10.1.1.1/32", Scope: linuxl3.Route_LINK},
		{OutgoingInterface: "if1", DstNetwork: "::/0", GwAddr: "fe80::1"},
	} {
		if deps := l3plugin.RouteDependencies(r); len(deps) != 1 {
			t.Errorf("%v: dependencies = %+v, want only the interface", r, deps)
		}
	}
}

func TestRouteAndARPValidationNameTheBadValue(t *testing.T) {
	a := newAgent(t)
	routes := []struct {
		r   *linuxl3.Route
		msg string
	}{
		{&linuxl3.Route{DstNetwork: "10.0.0.0/8"}, "empty outgoing_interface"},
		{&linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "10.0.0.300/8"}, `dst_network "10.0.0.300/8"`},
		{&linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "10.0.0.0/8", GwAddr: "10.1.1"}, `gw_addr "10.1.1"`},
		{&linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "10.0.0.0/8", GwAddr: "fd00::1"}, "different IP versions"},
		{&linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "10.0.0.0/8", GwAddr: "10.1.1.1", Scope: linuxl3.Route_LINK}, "LINK-scope"},
	}
	for _, tc := range routes {
		err := a.route.Validate(linuxl3.RouteKey(tc.r.DstNetwork, tc.r.OutgoingInterface), tc.r)
		var inv *kvapi.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.msg) || a.route.IsRetriableFailure(err) {
			t.Errorf("Validate(%v) = %v, want an invalid-value error containing %q", tc.r, err, tc.msg)
		}
	}
	arps := []struct {
		e   *linuxl3.ARPEntry
		msg string
	}{
		{&linuxl3.ARPEntry{IpAddress: "10.1.1.1", HwAddress: "02:00:00:00:00:01"}, "empty interface"},
		{&linuxl3.ARPEntry{Interface: "if1", IpAddress: "10.1.1.x", HwAddress: "02:00:00:00:00:01"}, `ip_address "10.1.1.x"`},
		{&linuxl3.ARPEntry{Interface: "if1", IpAddress: "10.1.1.1", HwAddress: "02:00:00"}, `hw_address "02:00:00"`},
	}
	for _, tc := range arps {
		err := a.arp.Validate(linuxl3.ARPEntryKey(tc.e.Interface, tc.e.IpAddress), tc.e)
		var inv *kvapi.InvalidValueError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Validate(%v) = %v, want an invalid-value error containing %q", tc.e, err, tc.msg)
		}
	}
	ok := &linuxl3.Route{OutgoingInterface: "if1", DstNetwork: "10.0.0.0/8", GwAddr: "10.1.1.1"}
	if err := a.route.Validate(linuxl3.RouteKey("10.0.0.0/8", "if1"), ok); err != nil {
		t.Errorf("valid route: %v", err)
	}
	if err := a.route.Validate(linuxl3.RouteKey("10.0.0.0/8", "if2"), ok); err == nil {
		t.Error("route under another key accepted")
	}
}
