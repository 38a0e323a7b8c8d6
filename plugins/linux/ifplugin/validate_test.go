package ifplugin_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

func validVeth() *linuxif.Interface {
	return &linuxif.Interface{
		Name: "veth1", Type: linuxif.Interface_VETH, HostIfName: "eth0",
		IpAddresses: []string{"10.1.1.2/32"}, PhysAddress: "02:fe:00:00:00:01", Mtu: 1500, Enabled: true,
		Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2"}},
	}
}

func TestValidationRejectsBadValuesNamingFieldAndValue(t *testing.T) {
	tests := []struct {
		name   string
		change func(i *linuxif.Interface)
		field  string
		msg    string
	}{
		{"host name longer than 15", func(i *linuxif.Interface) { i.HostIfName = "abcdefghijklmnop" },
			"host_if_name", `host_if_name "abcdefghijklmnop" is longer than 15 characters`},
		{"host name with slash", func(i *linuxif.Interface) { i.HostIfName = "a/b" }, "host_if_name", `"a/b"`},
		{"empty host name", func(i *linuxif.Interface) { i.HostIfName = "" }, "host_if_name", "empty host_if_name"},
		{"bad MAC", func(i *linuxif.Interface) { i.PhysAddress = "02:fe:zz:00:00:01" },
			"phys_address", `"02:fe:zz:00:00:01" is not a 6-byte MAC address`},
		{"bad IP", func(i *linuxif.Interface) { i.IpAddresses = []string{"10.1.1.300/32"} },
			"ip_addresses[0]", `ip address "10.1.1.300/32" is not an IP address with a prefix length`},
		{"IP without prefix length", func(i *linuxif.Interface) { i.IpAddresses = []string{"10.1.1.2/32", "10.1.1.3"} },
			"ip_addresses[1]", `"10.1.1.3"`},
		{"duplicate IP", func(i *linuxif.Interface) { i.IpAddresses = []string{"10.1.1.2/32", "10.1.1.2/32"} },
			"ip_addresses[1]", "listed twice"},
		{"MTU too small", func(i *linuxif.Interface) { i.Mtu = 20 }, "mtu", "mtu 20"},
		{"empty name", func(i *linuxif.Interface) { i.Name = "" }, "name", "empty name"},
		{"undefined type", func(i *linuxif.Interface) { i.Type = linuxif.Interface_UNDEFINED }, "type", "unsupported interface type"},
		{"veth without peer", func(i *linuxif.Interface) { i.GetVeth().PeerIfName = "" }, "veth.peer_if_name", "empty veth.peer_if_name"},
		{"veth peer is itself", func(i *linuxif.Interface) { i.GetVeth().PeerIfName = i.Name }, "veth.peer_if_name", "itself"},
		{"veth with tap settings", func(i *linuxif.Interface) { i.Link = &linuxif.Interface_Tap{Tap: &linuxif.TapLink{}} },
			"veth", "without veth settings"},
		{"microservice namespace", func(i *linuxif.Interface) {
			i.Namespace = &linuxif.NetNamespace{Type: linuxif.NetNamespace_MICROSERVICE, Reference: "ms1"}
		}, "namespace", "unsupported namespace reference"},
		{"bad pid namespace", func(i *linuxif.Interface) {
			i.Namespace = &linuxif.NetNamespace{Type: linuxif.NetNamespace_PID, Reference: "-1"}
		}, "namespace", `PID "-1"`},
		{"tap without VPP TAP", func(i *linuxif.Interface) {
			i.Type, i.Link = linuxif.Interface_TAP_TO_VPP, &linuxif.Interface_Tap{Tap: &linuxif.TapLink{}}
		}, "tap.vpp_tap_if_name", "empty tap.vpp_tap_if_name"},
		{"loopback with MAC", func(i *linuxif.Interface) { i.Type, i.Link = linuxif.Interface_LOOPBACK, nil },
			"phys_address", "cannot be set on a loopback"},
	}
	d := newEnv(t, nil).d
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := validVeth()
			tc.change(v)
			err := d.Validate(linuxif.InterfaceKey(v.Name), v)
			var inv *kvapi.InvalidValueError
			if !errors.As(err, &inv) {
				t.Fatalf("Validate = %v, want an InvalidValueError", err)
			}
			if !slices.Contains(inv.InvalidFields, tc.field) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Validate = %v (fields %v), want field %s and %q", err, inv.InvalidFields, tc.field, tc.msg)
			}
			if d.IsRetriableFailure(err) {
				t.Error("invalid value classified as retriable")
			}
		})
	}
	if err := d.Validate(linuxif.InterfaceKey("veth1"), validVeth()); err != nil {
		t.Fatalf("valid value: %v", err)
	}
	if err := d.Validate(linuxif.InterfaceKey("other"), validVeth()); err == nil {
		t.Fatal("key of another name accepted")
	}
	lo := &linuxif.Interface{Name: "lo1", Type: linuxif.Interface_LOOPBACK, IpAddresses: []string{"127.0.0.1/8"}}
	if err := d.Validate(linuxif.InterfaceKey("lo1"), lo); err != nil {
		t.Fatalf("loopback without host name: %v", err)
	}
}

func TestRetriableFailureClassification(t *testing.T) {
	d := newEnv(t, nil).d
	tests := []struct {
		err  error
		want bool
	}{
		{&nsplugin.NamespaceError{Path: "/var/run/netns/x", Op: "open", Err: unix.ENOENT, NotFound: true}, true},
		{fmt.Errorf("wrapped: %w", unix.ENODEV), true},
		{fmt.Errorf("wrapped: %w", unix.ENOENT), true},
		{fmt.Errorf("wrapped: %w", unix.ESRCH), true},
		{fmt.Errorf("wrapped: %w", linuxcalls.ErrLinkNotFound), true},
		{fmt.Errorf("wrapped: %w", netlink.LinkNotFoundError{}), true},
		{fmt.Errorf("wrapped: %w", unix.EEXIST), false},
		{fmt.Errorf("wrapped: %w", unix.EINVAL), false},
		{fmt.Errorf("wrapped: %w", unix.EPERM), false},
		{kvapi.NewInvalidValueError(errors.New("bad"), "mtu"), false},
		{fmt.Errorf("ns: %w", nsplugin.ErrUnsupportedReference), false},
		{errors.New("anything else"), false},
	}
	for _, tc := range tests {
		if got := d.IsRetriableFailure(tc.err); got != tc.want {
			t.Errorf("IsRetriableFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestDerivedValuesAnnounceHostNameInTheAgentNamespaceAndEveryAddress(t *testing.T) {
	v := validVeth()
	v.IpAddresses = []string{"10.1.1.2/24", "FD00::0001/64"}
	got := ifplugin.DerivedValues(v)
	want := map[string]string{
		"linux/interface/host-name/eth0":            "veth1",
		"linux/interface/veth1/address/10.1.1.2/24": "10.1.1.2/24",
		"linux/interface/veth1/address/fd00::1/64":  "fd00::1/64",
	}
	if len(got) != len(want) {
		t.Fatalf("DerivedValues = %v", got)
	}
	for _, kv := range got {
		if w, ok := want[kv.Key]; !ok || !proto.Equal(kv.Value, wrapperspb.String(w)) {
			t.Errorf("derived %s = %v, want %q", kv.Key, kv.Value, w)
		}
	}
	v.Namespace = &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: "/proc/1/ns/net"}
	for _, kv := range ifplugin.DerivedValues(v) {
		if strings.HasPrefix(kv.Key, linuxif.HostNamePrefix) {
			t.Errorf("host name derived for an interface in a pod namespace: %s", kv.Key)
		}
	}
}

func TestValueComparatorIgnoresSpellingAndOrder(t *testing.T) {
	a := validVeth()
	a.IpAddresses = []string{"10.1.1.2/32", "fd00::1/64"}
	b := proto.Clone(a).(*linuxif.Interface)
	b.IpAddresses = []string{"FD00::0001/64", "10.1.1.2/32"}
	b.PhysAddress = "02-FE-00-00-00-01"
	b.Namespace = &linuxif.NetNamespace{Type: linuxif.NetNamespace_UNDEFINED_NS}
	if !ifplugin.EquivalentInterfaces(a, b) {
		t.Error("equivalent values compare different")
	}
	b.Mtu = 9000
	if ifplugin.EquivalentInterfaces(a, b) {
		t.Error("different MTUs compare equal")
	}
}

func TestPrimaryEndIsTheOneSortingFirst(t *testing.T) {
	a := validVeth() // veth1 <-> veth2
	if deps := ifplugin.Dependencies(a); len(deps) != 0 {
		t.Errorf("veth1 deps = %v", deps)
	}
	b := validVeth()
	b.Name, b.GetVeth().PeerIfName = "veth2", "veth1"
	if deps := ifplugin.Dependencies(b); len(deps) != 1 || deps[0].Key != linuxif.InterfaceKey("veth1") {
		t.Errorf("veth2 deps = %v", deps)
	}
}
