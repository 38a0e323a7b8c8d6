package l3plugin

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// ARPDescriptorName names the descriptor of static IP neighbors.
const ARPDescriptorName = "vpp-arp"

// arpDescriptor implements the callbacks of the ARP (IP neighbor)
// descriptor: ip_neighbor_add_del with the STATIC flag when the entry is
// static. VPP replaces the MAC of an existing neighbor in place, so an
// update is an add.
type arpDescriptor struct {
	base
}

// NewARPDescriptor returns the descriptor of VPP static ARP/ND entries.
func NewARPDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &arpDescriptor{base: vppbase.NewDescriptor(deps, ARPDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.ARPEntry, kvapi.Metadata]{
		Name:        ARPDescriptorName,
		NBKeyPrefix: l3.ARPPrefix,
		KeySelector: func(key string) bool {
			_, _, ok := l3.ParseARPEntryKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *l3.ARPEntry) bool { return EquivalentARPs(a, b) },
		Validate:        func(key string, v *l3.ARPEntry) error { return ValidateARP(key, v) },
		Create: func(_ string, v *l3.ARPEntry) (kvapi.Metadata, error) {
			return nil, d.addDel(v, true)
		},
		Update: func(_ string, _, v *l3.ARPEntry, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.addDel(v, true)
		},
		Delete:               func(_ string, v *l3.ARPEntry, _ kvapi.Metadata) error { return d.addDel(v, false) },
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         func(_ string, v *l3.ARPEntry) []kvapi.Dependency { return ARPDependencies(v) },
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// parseARP parses and checks an entry; the error names every wrong field.
func parseARP(a *l3.ARPEntry) (netip.Addr, net.HardwareAddr, error) {
	var problems, fields []string
	if a.GetInterface() == "" {
		fields, problems = append(fields, "interface"), append(problems, "empty interface")
	}
	ip, err := parseAddr(a.GetIpAddress())
	if err != nil {
		fields = append(fields, "ip_address")
		problems = append(problems, fmt.Sprintf("ip_address %q is not an IP address", a.GetIpAddress()))
	}
	mac, err := net.ParseMAC(a.GetPhysAddress())
	if err != nil || len(mac) != 6 {
		fields = append(fields, "phys_address")
		problems = append(problems, fmt.Sprintf("phys_address %q is not a 48-bit MAC address", a.GetPhysAddress()))
	}
	if len(problems) > 0 {
		return netip.Addr{}, nil, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return ip, mac, nil
}

// ValidateARP checks an entry and that key is its key.
func ValidateARP(key string, a *l3.ARPEntry) error {
	if _, _, err := parseARP(a); err != nil {
		return err
	}
	if want := l3.ARPEntryKey(a.GetInterface(), a.GetIpAddress()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("ARP key %q does not match its value (want %q)", key, want),
			"interface", "ip_address")
	}
	return nil
}

// EquivalentARPs reports whether a and b configure the same neighbor
// (addresses compared in canonical form).
func EquivalentARPs(a, b *l3.ARPEntry) bool {
	ipA, macA, errA := parseARP(a)
	ipB, macB, errB := parseARP(b)
	if errA != nil || errB != nil {
		return proto.Equal(a, b)
	}
	return a.GetInterface() == b.GetInterface() && ipA == ipB && macA.String() == macB.String() &&
		a.GetStatic() == b.GetStatic()
}

// ARPDependencies lists what an entry needs: its interface.
func ARPDependencies(a *l3.ARPEntry) []kvapi.Dependency {
	if a.GetInterface() == "" {
		return nil
	}
	return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(a.GetInterface())}}
}

func (d *arpDescriptor) addDel(a *l3.ARPEntry, isAdd bool) error {
	op := "delete"
	if isAdd {
		op = "add"
	}
	what := fmt.Sprintf("%s ARP entry %s on %s", op, a.GetIpAddress(), a.GetInterface())
	ip, mac, err := parseARP(a)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	sw, err := d.SwIfIndex(a.GetInterface(), what)
	if err != nil {
		return err
	}
	n := ip_neighbor.IPNeighbor{SwIfIndex: interface_types.InterfaceIndex(sw), IPAddress: vppbase.AddrToAPI(ip),
		MacAddress: ethernet_types.NewMacAddress(mac)}
	if a.GetStatic() {
		n.Flags = ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC
	}
	if err := vppbase.Call(d.Ch, &ip_neighbor.IPNeighborAddDel{IsAdd: isAdd, Neighbor: n}, &ip_neighbor.IPNeighborAddDelReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithFields(map[string]any{"ip": ip, "mac": mac, "interface": a.GetInterface()}).Debugf("ARP entry %s done", op)
	return nil
}

// retrieve dumps the neighbors of both IP versions on the interfaces the
// agent knows: static ones, and dynamic ones NB asks for as they are.
// Learned (dynamic) neighbors are not configuration and are skipped.
func (d *arpDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nb := nbValues[*l3.ARPEntry](correlate)
	names := d.IfaceNames()
	var out []kvapi.KVWithMetadata
	for _, ipv6 := range []bool{false, true} {
		list, err := govppmux.Dump[ip_neighbor.IPNeighborDetails](d.Ch, &ip_neighbor.IPNeighborDump{
			SwIfIndex: interface_types.InterfaceIndex(noIndex), Af: vppbase.AddrFamily(ipv6)})
		if err != nil {
			return nil, fmt.Errorf("retrieve ARP entries: %w", err)
		}
		for _, e := range list {
			name, ok := names[uint32(e.Neighbor.SwIfIndex)]
			ip, okIP := vppbase.AddrFromAPI(e.Neighbor.IPAddress)
			if !ok || !okIP {
				continue
			}
			v := &l3.ARPEntry{Interface: name, IpAddress: ip.String(), PhysAddress: e.Neighbor.MacAddress.String(),
				Static: e.Neighbor.Flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0}
			key := l3.ARPEntryKey(name, ip.String())
			want, wanted := nb[key]
			if wanted && EquivalentARPs(want, v) {
				v = want
			} else if !v.Static {
				continue
			}
			// Static entries on the agent's own interfaces are the agent's (nobody else
			// configures those interfaces): a resync removes the ones NB no longer wants,
			// e.g. left behind by an agent restart.
			out = append(out, kvapi.KVWithMetadata{Key: key, Value: v, Origin: kvapi.FromNB})
		}
	}
	return out, nil
}
