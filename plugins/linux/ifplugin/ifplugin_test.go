package ifplugin_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

func TestMain(m *testing.M) { os.Exit(linuxtest.Main(m)) }

// env drives the interface descriptor directly, with a fake metadata map
// filled the way the scheduler would.
type env struct {
	t    *testing.T
	ns   *nsplugin.Plugin
	meta linuxtest.MetadataMap
	d    *kvapi.KVDescriptor
}

func newEnv(t *testing.T, locator ifplugin.TapLocator) *env {
	e := &env{t: t, ns: &nsplugin.Plugin{}, meta: linuxtest.MetadataMap{}}
	e.d = ifplugin.NewInterfaceDescriptor(ifplugin.DescriptorDeps{
		Log:        linuxtest.Logger(t),
		NsPlugin:   e.ns,
		IfMetadata: func() kvapi.MetadataMap { return e.meta },
		TapLocator: locator,
	})
	return e
}

func (e *env) create(iface *linuxif.Interface) *ifplugin.InterfaceMetadata {
	e.t.Helper()
	key := linuxif.InterfaceKey(iface.GetName())
	if err := e.d.Validate(key, iface); err != nil {
		e.t.Fatalf("Validate(%s): %v", iface.GetName(), err)
	}
	m, err := e.d.Create(key, iface)
	if err != nil {
		e.t.Fatalf("Create(%s): %v", iface.GetName(), err)
	}
	e.meta[iface.GetName()] = m
	return m.(*ifplugin.InterfaceMetadata)
}

func (e *env) delete(iface *linuxif.Interface) {
	e.t.Helper()
	if err := e.d.Delete(linuxif.InterfaceKey(iface.GetName()), iface, e.meta[iface.GetName()]); err != nil {
		e.t.Fatalf("Delete(%s): %v", iface.GetName(), err)
	}
	delete(e.meta, iface.GetName())
}

func named(name string) *linuxif.NetNamespace {
	return &linuxif.NetNamespace{Type: linuxif.NetNamespace_NAME, Reference: name}
}

func fdRef(path string) *linuxif.NetNamespace {
	return &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: path}
}

// linkNames lists the links of a namespace.
func linkNames(t *testing.T, h *netlink.Handle) []string {
	t.Helper()
	links, err := h.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	return names
}

// mustLink finds a link by name.
func mustLink(t *testing.T, h *netlink.Handle, name string) netlink.Link {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

// addrs lists the IPv4 addresses of a link.
func addrs(t *testing.T, h *netlink.Handle, l netlink.Link) []string {
	t.Helper()
	list, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range list {
		out = append(out, a.IPNet.String())
	}
	return out
}

func vethPair(podNs, hostNs *linuxif.NetNamespace) (pod, host *linuxif.Interface) {
	pod = &linuxif.Interface{
		Name: "veth1-abc", Type: linuxif.Interface_VETH, Namespace: podNs, HostIfName: "eth0",
		PhysAddress: "02:fe:aa:bb:cc:dd", IpAddresses: []string{"10.1.1.2/32"}, Mtu: 1450, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2-abc",
			RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED,
			TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED}},
	}
	host = &linuxif.Interface{
		Name: "veth2-abc", Type: linuxif.Interface_VETH, Namespace: hostNs, HostIfName: "abcdef012345678",
		Mtu: 1450, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth1-abc"}},
	}
	return pod, host
}

func TestVethPairAcrossNamespacesIsCreatedInTwoStepsAndRemoved(t *testing.T) {
	podName, podPath := linuxtest.NewNamespace(t)
	_, hostPath := linuxtest.NewNamespace(t)
	pod, host := vethPair(named(podName), fdRef(hostPath))
	podH, hostH := linuxtest.Handle(t, podPath), linuxtest.Handle(t, hostPath)
	e := newEnv(t, nil)

	if deps := e.d.Dependencies(linuxif.InterfaceKey(host.Name), host); len(deps) != 1 ||
		deps[0].Key != linuxif.InterfaceKey(pod.Name) || deps[0].Label != ifplugin.DepVethPeer {
		t.Fatalf("secondary end dependencies = %+v, want the primary's key", deps)
	}
	if deps := e.d.Dependencies(linuxif.InterfaceKey(pod.Name), pod); len(deps) != 0 {
		t.Fatalf("primary end dependencies = %+v, want none", deps)
	}

	// The secondary cannot be created before the primary: retriable.
	_, err := e.d.Create(linuxif.InterfaceKey(host.Name), host)
	if err == nil || !e.d.IsRetriableFailure(err) {
		t.Fatalf("Create(secondary first) = %v, want a retriable error", err)
	}

	pm := e.create(pod)
	if got := linkNames(t, podH); len(got) != 3 { // lo, eth0, the detached peer
		t.Fatalf("pod namespace links after primary = %v", got)
	}
	hm := e.create(host)
	if got := linkNames(t, podH); len(got) != 2 {
		t.Fatalf("pod namespace links = %v, want lo and eth0", got)
	}
	eth0 := mustLink(t, podH, "eth0")
	hostEnd := mustLink(t, hostH, "abcdef012345678")
	if eth0.Type() != "veth" || hostEnd.Type() != "veth" {
		t.Fatalf("types %s / %s", eth0.Type(), hostEnd.Type())
	}
	a := eth0.Attrs()
	if a.HardwareAddr.String() != "02:fe:aa:bb:cc:dd" || a.MTU != 1450 || a.Flags&net.FlagUp == 0 || a.OperState != netlink.OperUp {
		t.Errorf("eth0 = mac %s mtu %d flags %v oper %v", a.HardwareAddr, a.MTU, a.Flags, a.OperState)
	}
	if got := addrs(t, podH, eth0); len(got) != 1 || got[0] != "10.1.1.2/32" {
		t.Errorf("eth0 addresses = %v", got)
	}
	if hostEnd.Attrs().MTU != 1450 || hostEnd.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("host end = %+v", hostEnd.Attrs())
	}
	if pm.LinkIndex != a.Index || pm.HostIfName != "eth0" || hm.LinkIndex != hostEnd.Attrs().Index {
		t.Errorf("metadata %+v %+v", pm, hm)
	}
	if a.ParentIndex != hostEnd.Attrs().Index || hostEnd.Attrs().ParentIndex != a.Index {
		t.Errorf("ends are not peers: %d->%d, %d->%d", a.Index, a.ParentIndex, hostEnd.Attrs().Index, hostEnd.Attrs().ParentIndex)
	}

	// Re-applying the same values is a no-op.
	for _, v := range []*linuxif.Interface{pod, host} {
		same := proto.Clone(v).(*linuxif.Interface)
		if !e.d.ValueComparator(linuxif.InterfaceKey(v.Name), v, same) {
			t.Errorf("ValueComparator(%s, clone) = false", v.Name)
		}
		m, err := e.d.Update(linuxif.InterfaceKey(v.Name), v, same, e.meta[v.Name])
		if err != nil || m.(*ifplugin.InterfaceMetadata).LinkIndex != e.meta[v.Name].(*ifplugin.InterfaceMetadata).LinkIndex {
			t.Errorf("Update(%s, same) = %+v, %v", v.Name, m, err)
		}
	}
	if got := addrs(t, podH, mustLink(t, podH, "eth0")); len(got) != 1 {
		t.Errorf("addresses after re-apply = %v", got)
	}

	// A restarted agent adopts both ends.
	fresh := newEnv(t, nil)
	correlate := []kvapi.KVWithMetadata{
		{Key: linuxif.InterfaceKey(pod.Name), Value: pod},
		{Key: linuxif.InterfaceKey(host.Name), Value: host},
	}
	got, err := fresh.d.Retrieve(correlate)
	if err != nil {
		t.Fatalf("Retrieve: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("Retrieve returned %d values, want 2: %+v", len(got), got)
	}
	for i, kv := range got {
		if kv.Key != correlate[i].Key || !proto.Equal(kv.Value, correlate[i].Value) || kv.Origin != kvapi.FromNB {
			t.Errorf("Retrieve[%d] = %s %v (%v), want %s %v", i, kv.Key, kv.Value, kv.Origin, correlate[i].Key, correlate[i].Value)
		}
	}

	// Deleting the secondary hands the end back to the primary's namespace.
	e.delete(host)
	if got := linkNames(t, hostH); len(got) != 1 {
		t.Errorf("host namespace links after deleting the secondary = %v", got)
	}
	if got := linkNames(t, podH); len(got) != 3 {
		t.Errorf("pod namespace links after deleting the secondary = %v", got)
	}
	// ... so it can be created again.
	e.create(host)
	e.delete(host)
	e.delete(pod)
	if got := linkNames(t, podH); len(got) != 1 || got[0] != "lo" {
		t.Errorf("pod namespace links after delete = %v", got)
	}
	// Deleting what is already gone is fine.
	e.meta[pod.Name] = pm
	e.delete(pod)
}

func TestVethUpdateChangesAddressesMACAndMTUInPlace(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	_, hostPath := linuxtest.NewNamespace(t)
	pod, host := vethPair(fdRef(podPath), fdRef(hostPath))
	podH := linuxtest.Handle(t, podPath)
	e := newEnv(t, nil)
	e.create(pod)
	e.create(host)
	t.Cleanup(func() { e.delete(host); e.delete(pod) })

	changed := proto.Clone(pod).(*linuxif.Interface)
	changed.IpAddresses = []string{"10.1.1.3/24"}
	changed.PhysAddress = "02:fe:00:00:00:01"
	changed.Mtu = 1400
	key := linuxif.InterfaceKey(pod.Name)
	if e.d.UpdateWithRecreate(key, pod, changed, e.meta[pod.Name]) {
		t.Fatal("address/MAC/MTU change asks for a recreate")
	}
	if _, err := e.d.Update(key, pod, changed, e.meta[pod.Name]); err != nil {
		t.Fatal(err)
	}
	l := mustLink(t, podH, "eth0")
	if got := addrs(t, podH, l); len(got) != 1 || got[0] != "10.1.1.3/24" {
		t.Errorf("addresses = %v", got)
	}
	if l.Attrs().HardwareAddr.String() != "02:fe:00:00:00:01" || l.Attrs().MTU != 1400 {
		t.Errorf("link = %+v", l.Attrs())
	}
	moved := proto.Clone(pod).(*linuxif.Interface)
	moved.Namespace = nil
	if !e.d.UpdateWithRecreate(key, pod, moved, e.meta[pod.Name]) {
		t.Error("namespace change does not recreate")
	}
	pod.IpAddresses, pod.PhysAddress, pod.Mtu = changed.IpAddresses, changed.PhysAddress, changed.Mtu
}

func TestVethChecksumOffloadIsDisabled(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	pod, host := vethPair(fdRef(podPath), fdRef(podPath))
	host.HostIfName = "host-end"
	e := newEnv(t, nil)
	e.create(pod)
	e.create(host)
	t.Cleanup(func() { e.delete(host); e.delete(pod) })

	read := func(name string) (rx, tx bool) {
		err := e.ns.WithNamespace(fdRef(podPath), func() error {
			sock, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
			if err != nil {
				return err
			}
			defer unix.Close(sock)
			rx, tx, err = linuxcalls.ChecksumOffload(sock, name)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return rx, tx
	}
	if rx, tx := read("eth0"); rx || tx {
		t.Errorf("eth0 checksum offload rx=%v tx=%v, want both off", rx, tx)
	}
	if rx, tx := read("host-end"); !rx || !tx {
		t.Errorf("host-end (default) checksum offload rx=%v tx=%v, want the kernel default (on)", rx, tx)
	}
	// Retrieve reports what the kernel has when the value sets it.
	enabled := proto.Clone(pod).(*linuxif.Interface)
	enabled.GetVeth().RxChecksumOffloading = linuxif.VethLink_CHKSM_OFFLOAD_ENABLED
	got, err := newEnv(t, nil).d.Retrieve([]kvapi.KVWithMetadata{{Key: linuxif.InterfaceKey(pod.Name), Value: enabled}})
	if err != nil || len(got) != 1 {
		t.Fatalf("Retrieve = %v, %v", got, err)
	}
	if !proto.Equal(got[0].Value, pod) {
		t.Errorf("Retrieve = %v, want %v", got[0].Value, pod)
	}
}

func TestTapToVppIsMovedIntoThePodNamespaceAndReturnedOnDelete(t *testing.T) {
	_, hostPath := linuxtest.NewNamespace(t)
	podName, podPath := linuxtest.NewNamespace(t)
	hostH, podH := linuxtest.Handle(t, hostPath), linuxtest.Handle(t, podPath)
	// What VPP does: a TAP under its own name in its namespace.
	err := (&nsplugin.Plugin{}).WithNamespace(fdRef(hostPath), func() error {
		return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "tap-test0"}, Mode: netlink.TUNTAP_MODE_TAP})
	})
	if err != nil {
		t.Skipf("skipped: cannot create a TAP: %v", err)
	}
	locator := func(vppTap string) (ifplugin.TapLocation, bool) {
		if vppTap != "vpp-tap-abc" {
			return ifplugin.TapLocation{}, false
		}
		return ifplugin.TapLocation{HostIfName: "tap-test0", Namespace: fdRef(hostPath)}, true
	}
	tap := &linuxif.Interface{
		Name: "linux-tap-abc", Type: linuxif.Interface_TAP_TO_VPP, Namespace: named(podName), HostIfName: "eth0",
		PhysAddress: "02:fe:11:22:33:44", IpAddresses: []string{"10.1.1.5/32"}, Mtu: 1450, Enabled: true,
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "vpp-tap-abc"}},
	}
	e := newEnv(t, locator)
	deps := e.d.Dependencies(linuxif.InterfaceKey(tap.Name), tap)
	if len(deps) != 1 || deps[0].Key != vppif.InterfaceKey("vpp-tap-abc") || deps[0].Label != ifplugin.DepVppTap {
		t.Fatalf("dependencies = %+v, want the VPP TAP key", deps)
	}
	m := e.create(tap)
	if m.TapOrigin == nil || m.TapOrigin.HostIfName != "tap-test0" {
		t.Errorf("metadata origin = %+v", m.TapOrigin)
	}
	if got := linkNames(t, hostH); len(got) != 1 {
		t.Errorf("host namespace still has %v", got)
	}
	l := mustLink(t, podH, "eth0")
	if _, ok := l.(*netlink.Tuntap); !ok {
		t.Fatalf("eth0 is a %s", l.Type())
	}
	if a := l.Attrs(); a.HardwareAddr.String() != "02:fe:11:22:33:44" || a.MTU != 1450 || a.Flags&net.FlagUp == 0 {
		t.Errorf("eth0 = mac %s mtu %d flags %v", a.HardwareAddr, a.MTU, a.Flags)
	}
	if got := addrs(t, podH, l); len(got) != 1 || got[0] != "10.1.1.5/32" {
		t.Errorf("eth0 addresses = %v", got)
	}

	// Restart: adopted as is, origin from the locator.
	got, err := newEnv(t, locator).d.Retrieve([]kvapi.KVWithMetadata{{Key: linuxif.InterfaceKey(tap.Name), Value: tap}})
	if err != nil || len(got) != 1 || !proto.Equal(got[0].Value, tap) {
		t.Fatalf("Retrieve = %+v, %v", got, err)
	}
	if rm := got[0].Metadata.(*ifplugin.InterfaceMetadata); rm.TapOrigin.HostIfName != "tap-test0" || rm.LinkIndex != l.Attrs().Index {
		t.Errorf("retrieved metadata = %+v", rm)
	}

	e.delete(tap)
	if got := linkNames(t, podH); len(got) != 1 {
		t.Errorf("pod namespace after delete = %v", got)
	}
	back := mustLink(t, hostH, "tap-test0")
	if got := addrs(t, hostH, back); len(got) != 0 {
		t.Errorf("returned TAP keeps addresses %v", got)
	}
	// The TAP is found again after a delete.
	e.create(tap)
	e.delete(tap)
}

func TestTapToVppAlreadyInPlaceIsConfiguredWithoutALocator(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	podH := linuxtest.Handle(t, podPath)
	err := (&nsplugin.Plugin{}).WithNamespace(fdRef(podPath), func() error {
		return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, Mode: netlink.TUNTAP_MODE_TAP})
	})
	if err != nil {
		t.Skipf("skipped: cannot create a TAP: %v", err)
	}
	tap := &linuxif.Interface{
		Name: "linux-tap-x", Type: linuxif.Interface_TAP_TO_VPP, Namespace: fdRef(podPath), HostIfName: "eth0",
		IpAddresses: []string{"10.1.1.6/32"}, Enabled: true,
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "vpp-tap-x"}},
	}
	e := newEnv(t, nil)
	e.create(tap)
	if got := addrs(t, podH, mustLink(t, podH, "eth0")); len(got) != 1 {
		t.Errorf("addresses = %v", got)
	}
	e.delete(tap)
	l := mustLink(t, podH, "eth0") // left in place for VPP to delete
	if got := addrs(t, podH, l); len(got) != 0 {
		t.Errorf("addresses after delete = %v", got)
	}
}

func TestTapToVppNotFoundIsRetriableAndNamed(t *testing.T) {
	_, hostPath := linuxtest.NewNamespace(t)
	_, podPath := linuxtest.NewNamespace(t)
	locator := func(string) (ifplugin.TapLocation, bool) {
		return ifplugin.TapLocation{HostIfName: "tap-nothere", Namespace: fdRef(hostPath)}, true
	}
	tap := &linuxif.Interface{
		Name: "linux-tap-y", Type: linuxif.Interface_TAP_TO_VPP, Namespace: fdRef(podPath), HostIfName: "eth0",
		Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "vpp-tap-y"}},
	}
	e := newEnv(t, locator)
	_, err := e.d.Create(linuxif.InterfaceKey(tap.Name), tap)
	if err == nil || !e.d.IsRetriableFailure(err) {
		t.Fatalf("Create = %v, want a retriable error", err)
	}
	for _, want := range []string{"tap-nothere", hostPath, "vpp-tap-y"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestLoopbackInNamespaceIsUpWithItsAddressesAndKeptOnDelete(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	podH := linuxtest.Handle(t, podPath)
	lo := &linuxif.Interface{
		Name: "linux-loop-abc", Type: linuxif.Interface_LOOPBACK, Namespace: fdRef(podPath), HostIfName: "lo",
		IpAddresses: []string{"127.0.0.1/8", "::1/128", "10.99.0.1/32"}, Enabled: true,
	}
	e := newEnv(t, nil)
	e.create(lo)
	l := mustLink(t, podH, "lo")
	if l.Attrs().Flags&net.FlagUp == 0 {
		t.Fatal("lo is down")
	}
	if got := addrs(t, podH, l); len(got) != 2 || got[0] != "127.0.0.1/8" || got[1] != "10.99.0.1/32" {
		t.Errorf("lo addresses = %v", got)
	}
	if d := e.d.DerivedValues(linuxif.InterfaceKey(lo.Name), lo); len(d) != 3 {
		t.Errorf("derived = %v, want the three addresses only", d)
	}
	got, err := newEnv(t, nil).d.Retrieve([]kvapi.KVWithMetadata{{Key: linuxif.InterfaceKey(lo.Name), Value: lo}})
	if err != nil || len(got) != 1 || !proto.Equal(got[0].Value, lo) {
		t.Fatalf("Retrieve = %+v, %v", got, err)
	}
	e.delete(lo)
	l = mustLink(t, podH, "lo")
	if got := addrs(t, podH, l); len(got) != 1 || got[0] != "127.0.0.1/8" || l.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("lo after delete: addresses %v flags %v", got, l.Attrs().Flags)
	}
}

func TestCreateInMissingNamespaceIsRetriable(t *testing.T) {
	linuxtest.RequireRoot(t)
	e := newEnv(t, nil)
	missing := linuxtest.NamePrefix() + "gone"
	lo := &linuxif.Interface{Name: "lo-x", Type: linuxif.Interface_LOOPBACK, Namespace: named(missing), Enabled: true}
	_, err := e.d.Create(linuxif.InterfaceKey(lo.Name), lo)
	if err == nil || !e.d.IsRetriableFailure(err) || !strings.Contains(err.Error(), "/var/run/netns/"+missing) {
		t.Fatalf("Create = %v, want a retriable error naming the namespace", err)
	}
	// Deleting from a namespace that is gone succeeds: the link went with it.
	if err := e.d.Delete(linuxif.InterfaceKey(lo.Name), lo, nil); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	got, err := e.d.Retrieve([]kvapi.KVWithMetadata{{Key: linuxif.InterfaceKey(lo.Name), Value: lo}})
	if err != nil || len(got) != 0 {
		t.Fatalf("Retrieve = %v, %v; want nothing", got, err)
	}
}

func TestVethHostNameTakenIsNotRetriable(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	pod, _ := vethPair(fdRef(podPath), nil)
	e := newEnv(t, nil)
	e.create(pod)
	t.Cleanup(func() { e.delete(pod) })
	other := proto.Clone(pod).(*linuxif.Interface)
	other.Name, other.GetVeth().PeerIfName = "veth1-zzz", "veth2-zzz"
	_, err := e.d.Create(linuxif.InterfaceKey(other.Name), other)
	if err == nil || e.d.IsRetriableFailure(err) || !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), podPath) {
		t.Fatalf("Create(duplicate host name) = %v, want a non-retriable EEXIST naming %s", err, podPath)
	}
}

func TestRetrieveIgnoresLinksTheAgentDidNotCreate(t *testing.T) {
	_, podPath := linuxtest.NewNamespace(t)
	err := (&nsplugin.Plugin{}).WithNamespace(fdRef(podPath), func() error {
		return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "eth0"}, Mode: netlink.TUNTAP_MODE_TAP})
	})
	if err != nil {
		t.Skipf("skipped: cannot create a TAP: %v", err)
	}
	pod, _ := vethPair(fdRef(podPath), nil)
	got, err := newEnv(t, nil).d.Retrieve([]kvapi.KVWithMetadata{{Key: linuxif.InterfaceKey(pod.Name), Value: pod}})
	if err != nil || len(got) != 0 {
		t.Fatalf("Retrieve = %v, %v; want nothing (eth0 is a TAP, not a veth)", got, err)
	}
}
