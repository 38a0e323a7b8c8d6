package l3plugin

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/interface_types"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// Descriptor names of proxy ARP.
const (
	// ProxyARPDescriptorName names the descriptor of the global ProxyARP value
	// (the ranges).
	ProxyARPDescriptorName = "vpp-proxy-arp"
	// ProxyARPInterfaceDescriptorName names the descriptor of the derived
	// per-interface values.
	ProxyARPInterfaceDescriptorName = "vpp-proxy-arp-interface"
)

// ProxyARPInterfacePrefix is the prefix of the derived keys that enable
// proxy ARP on one interface.
const ProxyARPInterfacePrefix = "vpp/proxyarp/interface/"

// ProxyARPInterfaceKey returns the derived key that enables proxy ARP on an
// interface: vpp/proxyarp/interface/<iface>.
func ProxyARPInterfaceKey(iface string) string { return ProxyARPInterfacePrefix + iface }

// ParseProxyARPInterfaceKey returns the interface of a key built by
// ProxyARPInterfaceKey; ok is false for any other key.
func ParseProxyARPInterfaceKey(key string) (iface string, ok bool) {
	iface, ok = strings.CutPrefix(key, ProxyARPInterfacePrefix)
	return iface, ok && iface != ""
}

// proxyARPDescriptor implements the callbacks of the ProxyARP descriptor:
// the ranges are added and removed with proxy_arp_add_del (an update adds
// and removes only the ranges that changed); every interface is a derived
// value with its own descriptor (proxy_arp_intfc_enable_disable), which
// waits for the interface.
type proxyARPDescriptor struct {
	base
}

// NewProxyARPDescriptor returns the descriptor of the global ProxyARP value.
func NewProxyARPDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &proxyARPDescriptor{base: vppbase.NewDescriptor(deps, ProxyARPDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.ProxyARP, kvapi.Metadata]{
		Name:        ProxyARPDescriptorName,
		NBKeyPrefix: l3.ProxyARPKey,
		KeySelector: func(key string) bool { return key == l3.ProxyARPKey },
		ValueComparator: func(_ string, a, b *l3.ProxyARP) bool {
			return EquivalentProxyARPs(a, b)
		},
		Validate: func(_ string, v *l3.ProxyARP) error { return ValidateProxyARP(v) },
		Create: func(_ string, v *l3.ProxyARP) (kvapi.Metadata, error) {
			return nil, d.update(nil, v)
		},
		Update: func(_ string, old, v *l3.ProxyARP, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.update(old, v)
		},
		Delete: func(_ string, v *l3.ProxyARP, _ kvapi.Metadata) error {
			return d.update(v, nil)
		},
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		DerivedValues:        proxyARPDerived,
		Dependencies:         func(_ string, v *l3.ProxyARP) []kvapi.Dependency { return ProxyARPDependencies(v) },
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// arpRange is a proxy ARP range in VPP's terms.
type arpRange struct {
	vrf       uint32
	low, high netip.Addr
}

// parseRanges parses the ranges; the error names every wrong field.
func parseRanges(p *l3.ProxyARP) ([]arpRange, error) {
	var problems, fields []string
	var out []arpRange
	seen := map[arpRange]bool{}
	for i, r := range p.GetRanges() {
		lo, errLo := parseAddr(r.GetFirstIpAddr())
		hi, errHi := parseAddr(r.GetLastIpAddr())
		switch {
		case errLo != nil || !lo.Is4():
			fields = append(fields, fmt.Sprintf("ranges[%d].first_ip_addr", i))
			problems = append(problems, fmt.Sprintf("first_ip_addr %q is not an IPv4 address", r.GetFirstIpAddr()))
		case errHi != nil || !hi.Is4():
			fields = append(fields, fmt.Sprintf("ranges[%d].last_ip_addr", i))
			problems = append(problems, fmt.Sprintf("last_ip_addr %q is not an IPv4 address", r.GetLastIpAddr()))
		case hi.Less(lo):
			fields = append(fields, fmt.Sprintf("ranges[%d]", i))
			problems = append(problems, fmt.Sprintf("range %s-%s ends before it starts", lo, hi))
		default:
			ar := arpRange{vrf: r.GetVrfId(), low: lo, high: hi}
			if seen[ar] {
				fields = append(fields, fmt.Sprintf("ranges[%d]", i))
				problems = append(problems, fmt.Sprintf("range %s-%s in VRF %d is listed twice", lo, hi, ar.vrf))
			}
			seen[ar] = true
			out = append(out, ar)
		}
	}
	if len(problems) > 0 {
		return nil, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return out, nil
}

// ValidateProxyARP checks the ranges and the interface names.
func ValidateProxyARP(p *l3.ProxyARP) error {
	if _, err := parseRanges(p); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, itf := range p.GetInterfaces() {
		if itf.GetName() == "" || seen[itf.GetName()] {
			return kvapi.NewInvalidValueError(fmt.Errorf("interface name %q is empty or listed twice", itf.GetName()),
				fmt.Sprintf("interfaces[%d].name", i))
		}
		seen[itf.GetName()] = true
	}
	return nil
}

// EquivalentProxyARPs reports whether a and b hold the same ranges and
// interfaces, in any order.
func EquivalentProxyARPs(a, b *l3.ProxyARP) bool {
	ra, errA := parseRanges(a)
	rb, errB := parseRanges(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return sameSet(ra, rb) && sameSet(ifaceNamesOf(a), ifaceNamesOf(b))
}

func ifaceNamesOf(p *l3.ProxyARP) []string {
	out := make([]string, 0, len(p.GetInterfaces()))
	for _, i := range p.GetInterfaces() {
		out = append(out, i.GetName())
	}
	return out
}

// sameSet tells whether two lists hold the same elements (with multiplicity).
func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	count := make(map[T]int, len(a))
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		if count[x] == 0 {
			return false
		}
		count[x]--
	}
	return true
}

// ProxyARPDependencies lists the non-zero VRF tables of the ranges.
func ProxyARPDependencies(p *l3.ProxyARP) []kvapi.Dependency {
	var deps []kvapi.Dependency
	seen := map[uint32]bool{}
	for _, r := range p.GetRanges() {
		if r.GetVrfId() != 0 && !seen[r.GetVrfId()] {
			seen[r.GetVrfId()] = true
			deps = append(deps, kvapi.Dependency{Label: DepVrfTableExists, Key: l3.VrfTableKey(r.GetVrfId(), l3.VrfTable_IPV4)})
		}
	}
	return deps
}

// proxyARPDerived derives one value per interface.
func proxyARPDerived(_ string, v *l3.ProxyARP) []kvapi.KeyValuePair {
	var out []kvapi.KeyValuePair
	for _, itf := range v.GetInterfaces() {
		if itf.GetName() != "" {
			out = append(out, kvapi.KeyValuePair{Key: ProxyARPInterfaceKey(itf.GetName()), Value: itf})
		}
	}
	return out
}

// update removes the ranges of from that to lacks, then adds those to has
// and from lacks (nil from: create; nil to: delete). Removing a range VPP no
// longer has is not an error.
func (d *proxyARPDescriptor) update(from, to *l3.ProxyARP) error {
	oldR, err := parseRanges(from)
	if err != nil {
		return fmt.Errorf("proxy ARP: %w", err)
	}
	newR, err := parseRanges(to)
	if err != nil {
		return fmt.Errorf("proxy ARP: %w", err)
	}
	for _, r := range oldR {
		if !contains(newR, r) {
			if err := d.addDel(r, false); err != nil && !vppbase.IsRetval(err, govppapi.NO_SUCH_ENTRY) {
				return err
			}
		}
	}
	for _, r := range newR {
		if !contains(oldR, r) {
			if err := d.addDel(r, true); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains[T comparable](list []T, x T) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func (d *proxyARPDescriptor) addDel(r arpRange, isAdd bool) error {
	op := "remove"
	if isAdd {
		op = "add"
	}
	req := &arp.ProxyArpAddDel{IsAdd: isAdd, Proxy: arp.ProxyArp{TableID: r.vrf, Low: r.low.As4(), Hi: r.high.As4()}}
	if err := vppbase.Call(d.Ch, req, &arp.ProxyArpAddDelReply{}); err != nil {
		return fmt.Errorf("%s proxy ARP range %s-%s in VRF %d: %w", op, r.low, r.high, r.vrf, err)
	}
	d.Log.WithField("range", fmt.Sprintf("%s-%s vrf %d", r.low, r.high, r.vrf)).Debugf("proxy ARP range %s done", op)
	return nil
}

// retrieve reads the ranges and the interfaces with proxy ARP enabled
// (interfaces the agent does not know are skipped). Nothing configured
// means no value.
func (d *proxyARPDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	ranges, err := govppmux.Dump[arp.ProxyArpDetails](d.Ch, &arp.ProxyArpDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve proxy ARP: %w", err)
	}
	ifaces, err := govppmux.Dump[arp.ProxyArpIntfcDetails](d.Ch, &arp.ProxyArpIntfcDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve proxy ARP: %w", err)
	}
	names := d.IfaceNames()
	v := &l3.ProxyARP{}
	for _, r := range ranges {
		v.Ranges = append(v.Ranges, &l3.ProxyARP_Range{VrfId: r.Proxy.TableID,
			FirstIpAddr: netip.AddrFrom4(r.Proxy.Low).String(), LastIpAddr: netip.AddrFrom4(r.Proxy.Hi).String()})
	}
	for _, i := range ifaces {
		if name, ok := names[i.SwIfIndex]; ok {
			v.Interfaces = append(v.Interfaces, &l3.ProxyARP_Interface{Name: name})
		}
	}
	for _, kv := range correlate {
		if p, ok := kv.Value.(*l3.ProxyARP); ok && EquivalentProxyARPs(p, v) {
			return []kvapi.KVWithMetadata{{Key: l3.ProxyARPKey, Value: kv.Value, Origin: kvapi.UnknownOrigin}}, nil
		}
	}
	if len(v.Ranges) == 0 && len(v.Interfaces) == 0 {
		if len(correlate) > 0 {
			// an empty ProxyARP exists as soon as it is asked for
			return []kvapi.KVWithMetadata{{Key: l3.ProxyARPKey, Value: v, Origin: kvapi.UnknownOrigin}}, nil
		}
		return nil, nil
	}
	return []kvapi.KVWithMetadata{{Key: l3.ProxyARPKey, Value: v, Origin: kvapi.UnknownOrigin}}, nil
}

// proxyARPIfDescriptor implements the callbacks of the per-interface
// proxy ARP values (derived from ProxyARP; read back through their parent).
type proxyARPIfDescriptor struct {
	base
}

// NewProxyARPInterfaceDescriptor returns the descriptor of the derived
// values that enable proxy ARP on one interface.
func NewProxyARPInterfaceDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &proxyARPIfDescriptor{base: vppbase.NewDescriptor(deps, ProxyARPInterfaceDescriptorName)}
	return &kvapi.KVDescriptor{
		Name: ProxyARPInterfaceDescriptorName,
		KeySelector: func(key string) bool {
			_, ok := ParseProxyARPInterfaceKey(key)
			return ok
		},
		Create: func(key string, _ proto.Message) (kvapi.Metadata, error) {
			return nil, d.enable(key, true)
		},
		Delete:             func(key string, _ proto.Message, _ kvapi.Metadata) error { return d.enable(key, false) },
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(key string, _ proto.Message) []kvapi.Dependency {
			iface, _ := ParseProxyARPInterfaceKey(key)
			return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(iface)}}
		},
	}
}

func (d *proxyARPIfDescriptor) enable(key string, on bool) error {
	iface, _ := ParseProxyARPInterfaceKey(key)
	op := "disable"
	if on {
		op = "enable"
	}
	what := fmt.Sprintf("%s proxy ARP on %s", op, iface)
	sw, err := d.SwIfIndex(iface, what)
	if err != nil {
		return err
	}
	req := &arp.ProxyArpIntfcEnableDisable{SwIfIndex: interface_types.InterfaceIndex(sw), Enable: on}
	if err := vppbase.Call(d.Ch, req, &arp.ProxyArpIntfcEnableDisableReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithField("interface", iface).Debugf("proxy ARP %sd", op)
	return nil
}
