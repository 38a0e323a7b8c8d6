// Package ifaceidx is the contract between the VPP interface descriptor and every other
// VPP descriptor: the interface descriptor keeps one Metadata per interface (by logical
// name) in the KV scheduler's metadata map, and the others (routes, ARP, bridge
// domains, NAT) use it to turn logical names into VPP's sw_if_index and back.
package ifaceidx

import (
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// DescriptorName is the name of the VPP interface descriptor, i.e. of its metadata map.
const DescriptorName = "vpp-interface"

// Metadata is what the interface descriptor knows about a created interface.
type Metadata struct {
	// SwIfIndex is VPP's index of the interface.
	SwIfIndex uint32
	// Vrf is the VRF table the interface is in.
	Vrf uint32
	// IPAddresses are the interface's addresses (CIDR) as configured.
	IPAddresses []string
	// TAPHostIfName is the name of the Linux side of a TAP ("" for other types).
	TAPHostIfName string
}

// Index reads interface metadata from the scheduler's metadata map of the interface
// descriptor.
type Index struct {
	m kvapi.MetadataMap
}

// New wraps the metadata map of the interface descriptor (nil is an empty index).
func New(m kvapi.MetadataMap) Index { return Index{m: m} }

// LookupByName returns the metadata of the interface with the given logical name.
func (x Index) LookupByName(name string) (*Metadata, bool) {
	if x.m == nil {
		return nil, false
	}
	v, ok := x.m.GetValue(name)
	if !ok {
		return nil, false
	}
	md, ok := v.(*Metadata)
	return md, ok && md != nil
}

// LookupBySwIfIndex returns the logical name and metadata of the interface with the given
// sw_if_index. It scans the index (dump paths only; not for per-value hot paths).
func (x Index) LookupBySwIfIndex(swIfIndex uint32) (string, *Metadata, bool) {
	if x.m == nil {
		return "", nil, false
	}
	for _, name := range x.m.ListAllNames() {
		if md, ok := x.LookupByName(name); ok && md.SwIfIndex == swIfIndex {
			return name, md, true
		}
	}
	return "", nil, false
}
