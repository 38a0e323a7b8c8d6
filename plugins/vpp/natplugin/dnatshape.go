//go:build !natpermapping

package natplugin

import (
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// newDNat44Descriptors builds the descriptors of the DNat44 path: the DNat44 descriptor
// alone, one value per DNat44 (see "DNat44 in VPP" in the package documentation). It
// keeps the descriptor's state (tests read how many requests its pipeline had in
// flight). The build tag natpermapping replaces it (permapping.go).
func (p *Plugin) newDNat44Descriptors(deps DescriptorDeps) []*kvapi.KVDescriptor {
	desc, d := newDNat44(deps)
	p.dnat = d
	return []*kvapi.KVDescriptor{desc}
}
