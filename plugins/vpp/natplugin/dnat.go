package natplugin

import (
	"errors"
	"slices"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// DNAT44DescriptorName names the descriptor of DNat44 mapping sets.
const DNAT44DescriptorName = "vpp-dnat44"

// ErrDNAT44WithEmptyLabel rejects a DNat44 without label.
var ErrDNAT44WithEmptyLabel = errors.New("DNAT44 with empty label")

// dnatDescriptor implements the callbacks of the DNat44 descriptor (see
// "DNat44 in VPP" in the package documentation).
type dnatDescriptor struct {
	base
	pipe *pipeline // requests of asynchronous creations in flight
	// leftovers are the adds whose undo failed, still in VPP (see finish).
	leftovers map[leftover]mapping
	// parsed keeps what Validate parsed until Create uses it.
	parsed parsedCache
	// seen is validate's map for finding duplicate mappings, empty between calls.
	seen map[mappingID]bool
	// lastValid is, by key, the last value validate accepted (in steady state the value
	// the scheduler holds): a new value is checked against it (validChange), so that
	// a change of a few entries costs those entries. Delete forgets the key.
	lastValid map[string]*nat.DNat44
	// conflicts keeps the agent's values ahead of external ones on an external
	// endpoint (conflict.go); off unless the plugin sets its preferred labels.
	conflicts conflicts
}

func newDNat44(deps DescriptorDeps) (*kvapi.KVDescriptor, *dnatDescriptor) {
	d := &dnatDescriptor{base: vppbase.NewDescriptor(deps, DNAT44DescriptorName)}
	d.pipe = newPipeline(d.Ch)
	return kvapi.Typed(kvapi.TypedDescriptor[*nat.DNat44, kvapi.Metadata]{
		Name:        DNAT44DescriptorName,
		NBKeyPrefix: nat.DNAT44Prefix,
		KeySelector: func(key string) bool {
			label, ok := nat.ParseDNAT44Key(key)
			return ok && label != ""
		},
		KeyLabel: func(key string) string {
			label, _ := nat.ParseDNAT44Key(key)
			return label
		},
		ValueComparator: func(_ string, a, b *nat.DNat44) bool {
			bParsed, _ := d.parsed.peek(b) // (b is usually the value just validated)
			if equivalentDNat44(a, b, bParsed) {
				d.parsed.drop(b) // nothing will be created from b
				return true
			}
			return false
		},
		Validate: d.validate,
		Create: func(_ string, v *nat.DNat44) (kvapi.Metadata, error) {
			return nil, d.update(nil, v)
		},
		CreateAsync: d.createAsync,
		UpdateAsync: d.updateAsync,
		Update: func(_ string, old, v *nat.DNat44, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.update(old, v)
		},
		Delete: func(key string, v *nat.DNat44, _ kvapi.Metadata) error {
			delete(d.lastValid, key)
			d.conflicts.deleted(v.GetLabel(), v)
			return d.update(v, nil)
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *nat.DNat44) []kvapi.Dependency {
			deps := DNat44Dependencies(v)
			if dep, ok := d.conflicts.dependency(v.GetLabel()); ok {
				deps = append(deps, dep)
			}
			return deps
		},
		RetrieveDependencies: []string{ifaceidx.DescriptorName, GlobalDescriptorName},
	}), d
}

// DNat44Dependencies lists what a DNat44 needs: the global NAT44
// configuration (which enables the plugin), the non-zero VRF tables of its
// locals and identity mappings, and the interfaces it takes addresses from.
func DNat44Dependencies(d *nat.DNat44) []kvapi.Dependency {
	deps := make([]kvapi.Dependency, 1, 2)
	deps[0] = kvapi.Dependency{Label: DepNAT44Global, Key: nat.GlobalNAT44Key}
	// a DNat44 has a handful of dependencies: a linear search costs less than a map
	add := func(label, key string) {
		for _, d := range deps {
			if d.Key == key {
				return
			}
		}
		deps = append(deps, kvapi.Dependency{Label: label, Key: key})
	}
	var vrfs []uint32 // the VRFs added, to format the key of each once
	vrf := func(id uint32) {
		if id != 0 && id != noIndex && !slices.Contains(vrfs, id) {
			vrfs = append(vrfs, id)
			add(DepVrfTableExists, l3.VrfTableKey(id, l3.VrfTable_IPV4))
		}
	}
	var prev []*nat.DNat44_StaticMapping_LocalIP
	for _, sm := range d.GetStMappings() {
		// mappings sharing one list of locals (one per port of a service) read it once
		if ls := sm.GetLocalIps(); !sameSlice(ls, prev) {
			for _, l := range ls {
				vrf(l.GetVrfId())
			}
			prev = ls
		}
		if sm.GetExternalInterface() != "" {
			add(DepInterfaceExists, ifmodel.InterfaceKey(sm.GetExternalInterface()))
		}
	}
	for _, im := range d.GetIdMappings() {
		vrf(im.GetVrfId())
		if im.GetInterface() != "" {
			add(DepInterfaceExists, ifmodel.InterfaceKey(im.GetInterface()))
		}
	}
	return deps
}
