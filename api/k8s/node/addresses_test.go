package node

import (
	"slices"
	"testing"
)

func TestAllPodCIDRsReadsRecordsOfBothReleases(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *Node
		want []string
	}{
		{"dual-stack record", &Node{Pod_CIDR: "10.1.1.0/24", Pod_CIDRs: []string{"10.1.1.0/24", "fd00:1:1::/64"}},
			[]string{"10.1.1.0/24", "fd00:1:1::/64"}},
		{"record of the previous release", &Node{Pod_CIDR: "10.1.1.0/24"}, []string{"10.1.1.0/24"}},
		{"none", &Node{}, nil},
		{"nil", nil, nil},
	} {
		if got := tc.node.AllPodCIDRs(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: AllPodCIDRs() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
