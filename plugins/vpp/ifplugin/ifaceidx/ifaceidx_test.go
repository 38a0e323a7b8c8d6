package ifaceidx

import (
	"sort"
	"testing"

	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

type mapOf map[string]kvapi.Metadata

func (m mapOf) GetValue(label string) (kvapi.Metadata, bool) { v, ok := m[label]; return v, ok }
func (m mapOf) ListAllNames() []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestLookups(t *testing.T) {
	idx := New(mapOf{
		"tap-vpp2":  &Metadata{SwIfIndex: 3, TAPHostIfName: "vpp1"},
		"vxlanBVI":  &Metadata{SwIfIndex: 5, Vrf: 1},
		"not-iface": "something else",
	})
	if md, ok := idx.LookupByName("vxlanBVI"); !ok || md.SwIfIndex != 5 || md.Vrf != 1 {
		t.Errorf("LookupByName = %+v, %v", md, ok)
	}
	if _, ok := idx.LookupByName("missing"); ok {
		t.Error("missing interface found")
	}
	if _, ok := idx.LookupByName("not-iface"); ok {
		t.Error("foreign metadata accepted")
	}
	if name, md, ok := idx.LookupBySwIfIndex(3); !ok || name != "tap-vpp2" || md.TAPHostIfName != "vpp1" {
		t.Errorf("LookupBySwIfIndex = %q %+v %v", name, md, ok)
	}
	if _, _, ok := idx.LookupBySwIfIndex(9); ok {
		t.Error("unknown sw_if_index found")
	}
	if _, ok := New(nil).LookupByName("x"); ok {
		t.Error("nil index found something")
	}
}
