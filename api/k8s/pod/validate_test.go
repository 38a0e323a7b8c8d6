package pod

import (
	"strings"
	"testing"
)

func TestIDValidateFollowsKubernetesNameRules(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		id   ID
		want string // "" = valid
	}{
		{ID{"web-0", "default"}, ""},
		{ID{"coredns-5d78c9869d-abcde", "kube-system"}, ""},
		{ID{"a.b.c", "ns1"}, ""},
		{ID{strings.Repeat("a", 253), strings.Repeat("b", 63)}, ""},
		{ID{"../../etc", "default"}, "pod name"},
		{ID{long, "default"}, "300 characters, at most 253"},
		{ID{"web", strings.Repeat("b", 64)}, "pod namespace"},
		{ID{"Web", "default"}, "pod name"},
		{ID{"web", "a.b"}, "pod namespace"},
		{ID{"-web", "default"}, "pod name"},
		{ID{"web", ""}, "pod namespace \"\": empty"},
		{ID{"we b", "default"}, "not allowed"},
		{ID{"web\x00", "default"}, "pod name"},
		{ID{"a..b", "default"}, "pod name"},
	} {
		err := tc.id.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want valid", tc.id, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error containing %q", tc.id, err, tc.want)
		}
	}
	if err := (ID{long, "default"}).Validate(); len(err.Error()) > 200 {
		t.Errorf("error of a long name is %d bytes: %s", len(err.Error()), err)
	}
}
