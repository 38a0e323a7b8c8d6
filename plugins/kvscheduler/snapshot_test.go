package kvscheduler

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func TestGraphSnapshot(t *testing.T) {
	s, _ := basicSetup(t, nil)
	mustCommit(t, s,
		set("v/vrf", "vrf"),
		set("v/if", "if;der=ip1:10.0.0.1+dep=v/vrf|ip2:10.0.0.2+dep=v/missing"),
		set("v/any", "any;any=v/i,v/zzz"),
	)
	nodes, err := s.GraphSnapshot("")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]GraphNode{}
	var keys []string
	for _, n := range nodes {
		byKey[n.Key] = n
		keys = append(keys, n.Key)
	}
	if want := []string{"d/if/ip1", "d/if/ip2", "v/any", "v/if", "v/vrf"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v (sorted)", keys, want)
	}

	parent := byKey["v/if"]
	if parent.Descriptor != "v" || parent.State != api.StateConfigured || parent.Origin != api.FromNB ||
		!reflect.DeepEqual(parent.Derived, []string{"d/if/ip1", "d/if/ip2"}) {
		t.Errorf("v/if = %+v", parent)
	}
	var desired string
	if err := json.Unmarshal(parent.Desired, &desired); err != nil || desired != "if;der=ip1:10.0.0.1+dep=v/vrf|ip2:10.0.0.2+dep=v/missing" {
		t.Errorf("v/if desired = %s (%v)", parent.Desired, err)
	}

	ip1 := byKey["d/if/ip1"]
	if ip1.DerivedFrom != "v/if" || ip1.State != api.StateConfigured || len(ip1.Desired) == 0 || len(ip1.Applied) == 0 ||
		!reflect.DeepEqual(ip1.Dependencies, []GraphDependency{{Label: "needs-v/vrf", Key: "v/vrf", Satisfied: true, SatisfiedBy: []string{"v/vrf"}}}) {
		t.Errorf("d/if/ip1 = %+v", ip1)
	}
	ip2 := byKey["d/if/ip2"]
	if ip2.State != api.StatePending || len(ip2.Applied) != 0 ||
		!reflect.DeepEqual(ip2.Dependencies, []GraphDependency{{Label: "needs-v/missing", Key: "v/missing"}}) {
		t.Errorf("d/if/ip2 = %+v", ip2)
	}
	// AnyOf over prefixes: satisfied by the interface (v/if), not by d/... values.
	anyDep := byKey["v/any"].Dependencies
	if !reflect.DeepEqual(anyDep, []GraphDependency{{Label: "any", AnyOfPrefixes: []string{"v/i", "v/zzz"}, Satisfied: true, SatisfiedBy: []string{"v/if"}}}) {
		t.Errorf("v/any dependencies = %+v", anyDep)
	}

	only, err := s.GraphSnapshot("d/")
	if err != nil || len(only) != 2 {
		t.Errorf("snapshot of d/ = %d nodes, %v", len(only), err)
	}
}
