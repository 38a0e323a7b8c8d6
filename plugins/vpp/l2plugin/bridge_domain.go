package l2plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l2model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

const (
	maxTagLen = 63  // VPP keeps 63 characters of a bridge domain tag
	maxMacAge = 255 // mac_age is a u8 in minutes
	maxSHG    = 255 // split-horizon groups are u8
)

// bdDescriptor describes bridge domains (config/vpp/l2/v2/bridge-domain/<name>). VPP
// allocates the ID (bridge_domain_add_del_v2 with ~0); it is kept in BDMetadata and the
// name is stored as the bridge domain tag, so Retrieve maps VPP's bridge domains back
// to keys. Members are derived values (vpp/bd/<bd>/interface/<iface>). VPP cannot
// change the flags or MAC age of a bridge domain through this API set, so such a
// change re-creates it; member changes need no callback here.
func (p *Plugin) bdDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*l2model.BridgeDomain, *BDMetadata]{
		Name:        BDDescriptorName,
		NBKeyPrefix: l2model.BridgeDomainPrefix,
		KeySelector: func(key string) bool {
			name, ok := l2model.ParseBDNameFromKey(key)
			return ok && name != ""
		},
		KeyLabel: func(key string) string {
			name, _ := l2model.ParseBDNameFromKey(key)
			return name
		},
		ValueComparator: func(_ string, a, b *l2model.BridgeDomain) bool { return bdEqual(a, b) },
		Validate:        validateBD,
		Create: func(_ string, bd *l2model.BridgeDomain) (*BDMetadata, error) {
			return p.createBD(bd)
		},
		Delete: func(_ string, bd *l2model.BridgeDomain, md *BDMetadata) error {
			return p.deleteBD(bd, md)
		},
		Update: func(_ string, _, _ *l2model.BridgeDomain, md *BDMetadata) (*BDMetadata, error) {
			return md, nil // only members changed: they are derived values
		},
		UpdateWithRecreate: func(_ string, old, new *l2model.BridgeDomain, _ *BDMetadata) bool {
			return !sameBDSettings(old, new)
		},
		DerivedValues: func(_ string, bd *l2model.BridgeDomain) []kvapi.KeyValuePair {
			out := make([]kvapi.KeyValuePair, 0, len(bd.Interfaces))
			for _, i := range bd.Interfaces {
				out = append(out, kvapi.KeyValuePair{Key: l2model.BDInterfaceKey(bd.Name, i.Name), Value: i})
			}
			return out
		},
		Retrieve:             p.retrieveBDs,
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
		IsRetriableFailure:   vppbase.IsRetriable,
		WithMetadata:         true,
	})
}

// sameBDSettings compares everything but the members.
func sameBDSettings(a, b *l2model.BridgeDomain) bool {
	return a.Flood == b.Flood && a.UnknownUnicastFlood == b.UnknownUnicastFlood && a.Forward == b.Forward &&
		a.Learn == b.Learn && a.ArpTermination == b.ArpTermination && a.MacAge == b.MacAge
}

// bdEqual compares bridge domains with their members as a set.
func bdEqual(ba, bb *l2model.BridgeDomain) bool {
	return ba.Name == bb.Name && sameBDSettings(ba, bb) && sameMembers(ba.Interfaces, bb.Interfaces)
}

func sameMembers(a, b []*l2model.BridgeDomain_Interface) bool {
	if len(a) != len(b) {
		return false
	}
	byName := make(map[string]*l2model.BridgeDomain_Interface, len(a))
	for _, i := range a {
		byName[i.Name] = i
	}
	for _, i := range b {
		if !proto.Equal(byName[i.Name], i) {
			return false
		}
	}
	return true
}

func validateBD(key string, bd *l2model.BridgeDomain) error {
	var fields, problems []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	name, _ := l2model.ParseBDNameFromKey(key)
	switch {
	case bd.Name == "":
		bad("name", "must not be empty")
	case bd.Name != name:
		bad("name", "%q does not match the key %q", bd.Name, key)
	case len(bd.Name) > maxTagLen:
		bad("name", "%q is longer than the %d characters of a VPP tag", bd.Name, maxTagLen)
	case strings.Contains(bd.Name, "/mac/") || strings.Contains(bd.Name, "/interface/"):
		bad("name", "%q contains a reserved separator", bd.Name)
	}
	if bd.MacAge > maxMacAge {
		bad("mac_age", "%d minutes is above the maximum %d", bd.MacAge, maxMacAge)
	}
	seen := map[string]bool{}
	bvis := 0
	for _, i := range bd.Interfaces {
		switch {
		case i.GetName() == "":
			bad("interfaces.name", "must not be empty")
		case seen[i.Name]:
			bad("interfaces.name", "%s is listed twice", i.Name)
		}
		seen[i.GetName()] = true
		if i.GetBridgedVirtualInterface() {
			bvis++
		}
		if i.GetSplitHorizonGroup() > maxSHG {
			bad("interfaces.split_horizon_group", "%d of %s is above %d", i.SplitHorizonGroup, i.Name, maxSHG)
		}
	}
	if bvis > 1 {
		bad("interfaces.bridged_virtual_interface", "%d members are marked BVI, at most one may be", bvis)
	}
	if len(problems) == 0 {
		return nil
	}
	return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
}

func bdRequest(bd *l2model.BridgeDomain, id uint32, isAdd bool) *l2.BridgeDomainAddDelV2 {
	return &l2.BridgeDomainAddDelV2{BdID: id, IsAdd: isAdd, Flood: bd.Flood, UuFlood: bd.UnknownUnicastFlood,
		Forward: bd.Forward, Learn: bd.Learn, ArpTerm: bd.ArpTermination, MacAge: uint8(bd.MacAge), BdTag: bd.Name}
}

func (p *Plugin) createBD(bd *l2model.BridgeDomain) (*BDMetadata, error) {
	reply := &l2.BridgeDomainAddDelV2Reply{}
	if err := vppbase.Call(p.ch, bdRequest(bd, noIndex, true), reply); err != nil {
		return nil, fmt.Errorf("create bridge domain %s: %w", bd.Name, err)
	}
	p.log.WithFields(logrus.Fields{"bridge-domain": bd.Name, "bd-id": reply.BdID}).Debug("bridge domain created")
	return &BDMetadata{ID: reply.BdID}, nil
}

func (p *Plugin) deleteBD(bd *l2model.BridgeDomain, m *BDMetadata) error {
	if m == nil {
		return fmt.Errorf("delete bridge domain %s: no metadata", bd.Name)
	}
	if err := vppbase.Call(p.ch, bdRequest(bd, m.ID, false), &l2.BridgeDomainAddDelV2Reply{}); err != nil {
		return fmt.Errorf("delete bridge domain %s (ID %d): %w", bd.Name, m.ID, err)
	}
	return nil
}

// retrieveBDs rebuilds the tagged bridge domains (the agent's) with their members
// known to the interface index; untagged bridge domains are not the agent's and are
// not reported.
func (p *Plugin) retrieveBDs(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := govppmux.Dump[l2.BridgeDomainDetails](p.ch, &l2.BridgeDomainDump{BdID: noIndex,
		SwIfIndex: interface_types.InterfaceIndex(noIndex)})
	if err != nil {
		return nil, fmt.Errorf("retrieve bridge domains: %w", err)
	}
	want := make(map[string]*l2model.BridgeDomain, len(correlate))
	for _, kv := range correlate {
		if bd, ok := kv.Value.(*l2model.BridgeDomain); ok {
			want[bd.Name] = bd
		}
	}
	ifNames := p.interfaceNames()
	var out []kvapi.KVWithMetadata
	for _, d := range list {
		if d.BdTag == "" {
			continue
		}
		bd := &l2model.BridgeDomain{Name: d.BdTag, Flood: d.Flood, UnknownUnicastFlood: d.UuFlood, Forward: d.Forward,
			Learn: d.Learn, ArpTermination: d.ArpTerm, MacAge: uint32(d.MacAge)}
		for _, m := range d.SwIfDetails {
			name, known := ifNames[uint32(m.SwIfIndex)]
			if !known {
				continue
			}
			bd.Interfaces = append(bd.Interfaces, &l2model.BridgeDomain_Interface{Name: name,
				BridgedVirtualInterface: m.SwIfIndex == d.BviSwIfIndex, SplitHorizonGroup: uint32(m.Shg)})
		}
		if w := want[bd.Name]; w != nil && sameMembers(w.Interfaces, bd.Interfaces) {
			bd.Interfaces = slices.Clone(w.Interfaces) // NB's order
		}
		out = append(out, kvapi.KVWithMetadata{Key: l2model.BridgeDomainKey(bd.Name), Value: bd,
			Metadata: &BDMetadata{ID: d.BdID}, Origin: kvapi.FromNB})
	}
	return out, nil
}

// interfaceNames maps sw_if_index to logical names (dump paths only).
func (p *Plugin) interfaceNames() map[uint32]string {
	out := map[uint32]string{}
	m := p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName)
	if m == nil {
		return out
	}
	idx := ifaceidx.New(m)
	for _, name := range m.ListAllNames() {
		if md, ok := idx.LookupByName(name); ok {
			out[md.SwIfIndex] = name
		}
	}
	return out
}

// bdInterfaceDescriptor describes the membership of an interface in a bridge domain
// (derived key vpp/bd/<bd>/interface/<iface>, value BridgeDomain_Interface):
// sw_interface_set_l2_bridge with the BVI port type and split-horizon group. It
// waits for the interface; its bridge domain is its parent.
func (p *Plugin) bdInterfaceDescriptor() *kvapi.KVDescriptor {
	return kvapi.Typed(kvapi.TypedDescriptor[*l2model.BridgeDomain_Interface, kvapi.Metadata]{
		Name: BDInterfaceDescriptorName,
		KeySelector: func(key string) bool {
			_, _, ok := l2model.ParseBDInterfaceKey(key)
			return ok
		},
		Dependencies: func(key string, _ *l2model.BridgeDomain_Interface) []kvapi.Dependency {
			_, iface, _ := l2model.ParseBDInterfaceKey(key)
			return []kvapi.Dependency{{Label: InterfaceDep, Key: ifmodel.InterfaceKey(iface)}}
		},
		Create: func(key string, m *l2model.BridgeDomain_Interface) (kvapi.Metadata, error) {
			return nil, p.setMembership(key, m, true)
		},
		Update: func(key string, _, m *l2model.BridgeDomain_Interface, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, p.setMembership(key, m, true)
		},
		Delete: func(key string, m *l2model.BridgeDomain_Interface, _ kvapi.Metadata) error {
			return p.setMembership(key, m, false)
		},
		IsRetriableFailure: vppbase.IsRetriable,
	})
}

func (p *Plugin) setMembership(key string, m *l2model.BridgeDomain_Interface, enable bool) error {
	bdName, iface, _ := l2model.ParseBDInterfaceKey(key)
	what := fmt.Sprintf("interface %s in bridge domain %s (enable=%t)", iface, bdName, enable)
	bd, ok := p.GetBDIndex().LookupByName(bdName)
	if !ok {
		return fmt.Errorf("%s: bridge domain not in the index", what)
	}
	md, ok := p.ifIndex().LookupByName(iface)
	if !ok {
		return fmt.Errorf("%s: interface not in the index", what)
	}
	port := l2.L2_API_PORT_TYPE_NORMAL
	if m.BridgedVirtualInterface {
		port = l2.L2_API_PORT_TYPE_BVI
	}
	req := &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: interface_types.InterfaceIndex(md.SwIfIndex), BdID: bd.ID,
		PortType: port, Shg: uint8(m.SplitHorizonGroup), Enable: enable}
	if err := vppbase.Call(p.ch, req, &l2.SwInterfaceSetL2BridgeReply{}); err != nil {
		return fmt.Errorf("%s, sw_if_index %d, bd-id %d: %w", what, md.SwIfIndex, bd.ID, err)
	}
	return nil
}
