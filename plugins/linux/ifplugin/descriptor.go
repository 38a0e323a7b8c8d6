package ifplugin

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/internal/linuxcalls"
	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

const (
	// InterfaceDescriptorName names the descriptor of Linux interfaces (and
	// its metadata map).
	InterfaceDescriptorName = "linux-interface"

	// DepVethPeer labels the dependency of the secondary end of a VETH pair on
	// its primary end.
	DepVethPeer = "veth-peer-exists"
	// DepVppTap labels the dependency of a TAP_TO_VPP interface on its VPP TAP.
	DepVppTap = "vpp-tap-exists"

	// MaxHostNameLen is the longest kernel interface name.
	MaxHostNameLen = 15
	// LoopbackHostName is the host name of a LOOPBACK value without one.
	LoopbackHostName = "lo"

	vethTempPrefix = "ctvtmp"
)

// InterfaceMetadata is what the descriptor keeps about a configured interface,
// under its logical name.
type InterfaceMetadata struct {
	// LinkIndex is the kernel index of the link in its namespace.
	LinkIndex int
	// HostIfName is the kernel name of the link.
	HostIfName string
	// Type is the kind of the interface.
	Type linuxif.Interface_Type
	// Namespace is the namespace of the link (nil: the agent's).
	Namespace *linuxif.NetNamespace
	// TapOrigin is, for TAP_TO_VPP, where the TAP was found; Delete returns it
	// there.
	TapOrigin *TapLocation
}

// TapLocation is where the Linux side of a VPP TAP is.
type TapLocation struct {
	// HostIfName is its kernel name.
	HostIfName string
	// Namespace is its namespace (nil: the agent's).
	Namespace *linuxif.NetNamespace
}

// TapLocator tells where VPP created the Linux side of the VPP TAP with the
// given logical name; ok is false when it does not know.
type TapLocator func(vppTapIfName string) (loc TapLocation, ok bool)

// DescriptorDeps is what the interface descriptor needs.
type DescriptorDeps struct {
	// Log receives one line per change (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// NsPlugin opens namespaces. Required.
	NsPlugin nsplugin.API
	// IfMetadata returns the descriptor's own metadata map (the scheduler's,
	// once registered); Create and Delete of a secondary VETH end read the
	// primary's namespace from it. Required.
	IfMetadata func() kvapi.MetadataMap
	// TapLocator finds VPP-created TAPs under names other than the value's
	// host name. Optional.
	TapLocator TapLocator
}

// interfaceDescriptor implements the callbacks of the interface descriptor.
type interfaceDescriptor struct {
	log     logrus.FieldLogger
	ns      nsplugin.API
	ifMeta  func() kvapi.MetadataMap
	locator TapLocator
}

// NewInterfaceDescriptor returns the descriptor of Linux interfaces.
func NewInterfaceDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &interfaceDescriptor{log: infra.LoggerOr(deps.Log, InterfaceDescriptorName), ns: deps.NsPlugin, ifMeta: deps.IfMetadata, locator: deps.TapLocator}
	return kvapi.Typed(kvapi.TypedDescriptor[*linuxif.Interface, *InterfaceMetadata]{
		Name:        InterfaceDescriptorName,
		NBKeyPrefix: linuxif.InterfacePrefix,
		KeySelector: func(key string) bool {
			_, ok := linuxif.ParseNameFromKey(key)
			return ok
		},
		KeyLabel: func(key string) string {
			name, _ := linuxif.ParseNameFromKey(key)
			return name
		},
		ValueComparator: func(_ string, a, b *linuxif.Interface) bool { return EquivalentInterfaces(a, b) },
		Validate:        func(key string, v *linuxif.Interface) error { return ValidateInterface(key, v) },
		Create:          func(key string, v *linuxif.Interface) (*InterfaceMetadata, error) { return d.create(v) },
		Delete:          func(key string, v *linuxif.Interface, m *InterfaceMetadata) error { return d.delete(v, m) },
		Update:          d.update,
		UpdateWithRecreate: func(_ string, a, b *linuxif.Interface, _ *InterfaceMetadata) bool {
			return needsRecreate(a, b)
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: linuxcalls.IsRetriable,
		DerivedValues:      func(_ string, v *linuxif.Interface) []kvapi.KeyValuePair { return DerivedValues(v) },
		Dependencies:       func(_ string, v *linuxif.Interface) []kvapi.Dependency { return Dependencies(v) },
		WithMetadata:       true,
	})
}

// hostName returns the kernel name of iface (LoopbackHostName for a LOOPBACK
// without one).
func hostName(iface *linuxif.Interface) string {
	if iface.GetHostIfName() == "" && iface.GetType() == linuxif.Interface_LOOPBACK {
		return LoopbackHostName
	}
	return iface.GetHostIfName()
}

// isPrimaryVeth tells whether iface is the primary end of its pair: the one
// whose logical name sorts first.
func isPrimaryVeth(iface *linuxif.Interface) bool {
	return iface.GetName() < iface.GetVeth().GetPeerIfName()
}

// vethTempName is the temporary kernel name of the VETH end with the given
// logical name while its primary holds it.
func vethTempName(logicalName string) string {
	h := fnv.New32a()
	h.Write([]byte(logicalName))
	return fmt.Sprintf("%s%08x", vethTempPrefix, h.Sum32())
}

// ValidateInterface checks an interface value; the error is an
// *kvapi.InvalidValueError naming every wrong field and value.
func ValidateInterface(key string, iface *linuxif.Interface) error {
	var (
		problems []string
		fields   []string
	)
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	name := iface.GetName()
	if name == "" {
		bad("name", "empty name")
	} else if key != "" && key != linuxif.InterfaceKey(name) {
		bad("name", "name %q does not match key %q", name, key)
	}
	typ := iface.GetType()
	switch typ {
	case linuxif.Interface_VETH, linuxif.Interface_TAP_TO_VPP, linuxif.Interface_LOOPBACK:
	default:
		bad("type", "unsupported interface type %v", typ)
	}
	host := iface.GetHostIfName()
	switch {
	case host == "" && typ != linuxif.Interface_LOOPBACK:
		bad("host_if_name", "empty host_if_name")
	case host != "":
		if err := validHostName(host); err != nil {
			bad("host_if_name", "%v", err)
		}
	}
	if err := nsplugin.ValidateRef(iface.GetNamespace()); err != nil {
		bad("namespace", "%v", err)
	}
	if mac := iface.GetPhysAddress(); mac != "" {
		if typ == linuxif.Interface_LOOPBACK {
			bad("phys_address", "phys_address %q cannot be set on a loopback", mac)
		} else if _, err := linuxcalls.ParseMAC(mac); err != nil {
			bad("phys_address", "phys_address %v", err)
		}
	}
	seen := make(map[netip.Prefix]bool)
	for i, a := range iface.GetIpAddresses() {
		field := fmt.Sprintf("ip_addresses[%d]", i)
		p, err := netip.ParsePrefix(a)
		switch {
		case err != nil || p.Addr().Zone() != "":
			bad(field, "ip address %q is not an IP address with a prefix length", a)
		case seen[p]:
			bad(field, "ip address %q is listed twice", a)
		default:
			seen[p] = true
		}
	}
	if mtu := iface.GetMtu(); mtu != 0 && (mtu < 68 || mtu > 65535) {
		bad("mtu", "mtu %d is out of range [68, 65535]", mtu)
	}
	switch typ {
	case linuxif.Interface_VETH:
		switch peer := iface.GetVeth().GetPeerIfName(); {
		case iface.GetVeth() == nil:
			bad("veth", "VETH interface without veth settings")
		case peer == "":
			bad("veth.peer_if_name", "empty veth.peer_if_name")
		case peer == name:
			bad("veth.peer_if_name", "veth.peer_if_name %q names the interface itself", peer)
		}
	case linuxif.Interface_TAP_TO_VPP:
		if iface.GetTap().GetVppTapIfName() == "" {
			bad("tap.vpp_tap_if_name", "empty tap.vpp_tap_if_name")
		}
	case linuxif.Interface_LOOPBACK:
		if iface.GetLink() != nil {
			bad("link", "a loopback takes no veth or tap settings")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
}

// validHostName checks a kernel interface name as the kernel does.
func validHostName(host string) error {
	switch {
	case len(host) > MaxHostNameLen:
		return fmt.Errorf("host_if_name %q is longer than %d characters", host, MaxHostNameLen)
	case host == "." || host == "..":
		return fmt.Errorf("host_if_name %q is not a valid interface name", host)
	case strings.ContainsAny(host, "/: \t\n\r\v\f"):
		return fmt.Errorf("host_if_name %q contains '/', ':' or white space", host)
	}
	return nil
}

// Dependencies lists what iface needs before it can be created: the primary
// end for the secondary end of a VETH pair, the VPP TAP for TAP_TO_VPP.
func Dependencies(iface *linuxif.Interface) []kvapi.Dependency {
	switch iface.GetType() {
	case linuxif.Interface_VETH:
		if peer := iface.GetVeth().GetPeerIfName(); peer != "" && !isPrimaryVeth(iface) {
			return []kvapi.Dependency{{Label: DepVethPeer, Key: linuxif.InterfaceKey(peer)}}
		}
	case linuxif.Interface_TAP_TO_VPP:
		if tap := iface.GetTap().GetVppTapIfName(); tap != "" {
			return []kvapi.Dependency{{Label: DepVppTap, Key: vppif.InterfaceKey(tap)}}
		}
	}
	return nil
}

// DerivedValues returns the properties derived from iface: its host name
// (VETH and TAP_TO_VPP in the agent's namespace only) and one key per IP
// address.
func DerivedValues(iface *linuxif.Interface) []kvapi.KeyValuePair {
	var kvs []kvapi.KeyValuePair
	if iface.GetType() != linuxif.Interface_LOOPBACK && iface.GetHostIfName() != "" &&
		nsplugin.IsAgentNamespace(iface.GetNamespace()) {
		kvs = append(kvs, kvapi.KeyValuePair{
			Key:   linuxif.InterfaceHostNameKey(iface.GetHostIfName()),
			Value: wrapperspb.String(iface.GetName()),
		})
	}
	for _, a := range iface.GetIpAddresses() {
		kvs = append(kvs, kvapi.KeyValuePair{
			Key:   linuxif.InterfaceAddressKey(iface.GetName(), a),
			Value: wrapperspb.String(linuxcalls.CanonicalAddress(a)),
		})
	}
	return kvs
}

// EquivalentInterfaces reports whether a and b configure the same thing:
// addresses are compared as a set in canonical form, MACs in canonical form,
// the reference of an unset namespace is ignored.
func EquivalentInterfaces(a, b *linuxif.Interface) bool {
	if a.GetName() != b.GetName() || a.GetType() != b.GetType() || hostName(a) != hostName(b) ||
		a.GetMtu() != b.GetMtu() || a.GetEnabled() != b.GetEnabled() ||
		linuxcalls.CanonicalMAC(a.GetPhysAddress()) != linuxcalls.CanonicalMAC(b.GetPhysAddress()) ||
		!sameNamespaceRef(a.GetNamespace(), b.GetNamespace()) {
		return false
	}
	if !proto.Equal(a.GetVeth(), b.GetVeth()) || !proto.Equal(a.GetTap(), b.GetTap()) {
		return false
	}
	return slices.Equal(canonicalAddresses(a.GetIpAddresses()), canonicalAddresses(b.GetIpAddresses()))
}

// canonicalAddresses returns the addresses in canonical form, sorted.
func canonicalAddresses(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = linuxcalls.CanonicalAddress(a)
	}
	slices.Sort(out)
	return out
}

// sameNamespaceRef compares namespace references as written.
func sameNamespaceRef(a, b *linuxif.NetNamespace) bool {
	if nsplugin.IsAgentNamespace(a) || nsplugin.IsAgentNamespace(b) {
		return nsplugin.IsAgentNamespace(a) && nsplugin.IsAgentNamespace(b)
	}
	return a.GetType() == b.GetType() && a.GetReference() == b.GetReference()
}

// needsRecreate tells whether changing a to b needs a delete and create: a
// different kind, namespace, host name, VETH peer or VPP TAP.
func needsRecreate(a, b *linuxif.Interface) bool {
	return a.GetType() != b.GetType() || !sameNamespaceRef(a.GetNamespace(), b.GetNamespace()) ||
		hostName(a) != hostName(b) ||
		a.GetVeth().GetPeerIfName() != b.GetVeth().GetPeerIfName() ||
		a.GetTap().GetVppTapIfName() != b.GetTap().GetVppTapIfName()
}

// create dispatches Create by interface type.
func (d *interfaceDescriptor) create(iface *linuxif.Interface) (*InterfaceMetadata, error) {
	var (
		meta *InterfaceMetadata
		err  error
	)
	switch iface.GetType() {
	case linuxif.Interface_VETH:
		if isPrimaryVeth(iface) {
			meta, err = d.createVethPrimary(iface)
		} else {
			meta, err = d.createVethSecondary(iface)
		}
	case linuxif.Interface_TAP_TO_VPP:
		meta, err = d.createTap(iface)
	case linuxif.Interface_LOOPBACK:
		meta, err = d.createLoopback(iface)
	default:
		return nil, kvapi.NewInvalidValueError(fmt.Errorf("unsupported interface type %v", iface.GetType()), "type")
	}
	if err != nil {
		return nil, fmt.Errorf("create %v interface %s: %w", iface.GetType(), iface.GetName(), err)
	}
	d.log.WithFields(logrus.Fields{"interface": iface.GetName(), "host-name": meta.HostIfName,
		"namespace": d.nsPath(iface.GetNamespace()), "index": meta.LinkIndex}).Info("linux interface created")
	return meta, nil
}

// delete dispatches Delete by interface type.
func (d *interfaceDescriptor) delete(iface *linuxif.Interface, meta *InterfaceMetadata) error {
	var err error
	switch iface.GetType() {
	case linuxif.Interface_VETH:
		if isPrimaryVeth(iface) {
			err = d.deleteVethPrimary(iface)
		} else {
			err = d.deleteVethSecondary(iface)
		}
	case linuxif.Interface_TAP_TO_VPP:
		err = d.deleteTap(iface, meta)
	case linuxif.Interface_LOOPBACK:
		err = d.deleteLoopback(iface)
	}
	if err != nil {
		return fmt.Errorf("delete %v interface %s: %w", iface.GetType(), iface.GetName(), err)
	}
	d.log.WithFields(logrus.Fields{"interface": iface.GetName(), "namespace": d.nsPath(iface.GetNamespace())}).
		Info("linux interface deleted")
	return nil
}

// update changes MAC, MTU, addresses, checksum offloading and admin state in
// place (everything else recreates, see needsRecreate).
func (d *interfaceDescriptor) update(_ string, oldIf, newIf *linuxif.Interface, meta *InterfaceMetadata) (*InterfaceMetadata, error) {
	if err := d.inLink(newIf, func(l *nsLink) error { return l.configure(newIf, oldIf) }); err != nil {
		return meta, fmt.Errorf("update %v interface %s: %w", newIf.GetType(), newIf.GetName(), err)
	}
	if meta == nil {
		meta = &InterfaceMetadata{HostIfName: hostName(newIf), Type: newIf.GetType(), Namespace: newIf.GetNamespace()}
	}
	d.log.WithField("interface", newIf.GetName()).Info("linux interface updated")
	return meta, nil
}

// nsPath names a namespace reference for messages.
func (d *interfaceDescriptor) nsPath(ref *linuxif.NetNamespace) string {
	path, err := d.ns.NamespacePath(ref)
	if err != nil {
		return fmt.Sprintf("%v %q", ref.GetType(), ref.GetReference())
	}
	return path
}

// peerMetadata returns the metadata of the VETH end with the given logical
// name, if it has been created.
func (d *interfaceDescriptor) peerMetadata(name string) (*InterfaceMetadata, bool) {
	if d.ifMeta == nil {
		return nil, false
	}
	m := d.ifMeta()
	if m == nil {
		return nil, false
	}
	v, ok := m.GetValue(name)
	if !ok {
		return nil, false
	}
	meta, _ := v.(*InterfaceMetadata)
	return meta, meta != nil
}
