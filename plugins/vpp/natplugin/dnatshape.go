//go:build !natpermapping

package natplugin

import (
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// newDNat44Descriptors builds the descriptors of the DNat44 path: the DNat44 descriptor
// alone, one value per DNat44 (see "DNat44 in VPP" in the package documentation), the
// agent's values winning conflicts on an external endpoint (conflict.go). It
// keeps the descriptor's state (tests read how many requests its pipeline had in
// flight). The build tag natpermapping replaces it (permapping.go).
func (p *Plugin) newDNat44Descriptors(deps DescriptorDeps) []*kvapi.KVDescriptor {
	desc, d := newDNat44(deps)
	d.conflicts.preferred, d.conflicts.push = p.conflictRules()
	p.dnat = d
	return []*kvapi.KVDescriptor{desc}
}

// conflictRules returns the preferred labels and the scheduler's SB notifications
// (nil when the scheduler cannot take them) for the DNat44 descriptor's conflicts.
func (p *Plugin) conflictRules() (preferred func(string) bool, push func(...kvapi.KVWithMetadata) error) {
	preferred = p.Preferred
	if preferred == nil {
		preferred = DefaultPreferred
	}
	if sb, ok := p.Scheduler.(interface {
		PushSBNotification(values ...kvapi.KVWithMetadata) error
	}); ok {
		push = sb.PushSBNotification
	}
	return preferred, push
}
