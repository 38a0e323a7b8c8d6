package pod

import (
	"slices"
	"testing"
)

func TestAllIPAddressesReadsRecordsOfBothReleases(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *Pod
		want []string
	}{
		{"dual-stack record", &Pod{IpAddress: "10.1.1.2", IpAddresses: []string{"10.1.1.2", "fd00:1:1::2"}},
			[]string{"10.1.1.2", "fd00:1:1::2"}},
		{"record of the previous release: ip_address only", &Pod{IpAddress: "10.1.1.2"}, []string{"10.1.1.2"}},
		{"single-stack IPv6", &Pod{IpAddress: "fd00:1:1::2", IpAddresses: []string{"fd00:1:1::2"}}, []string{"fd00:1:1::2"}},
		{"no IP yet", &Pod{}, nil},
		{"nil pod", nil, nil},
	} {
		if got := tc.pod.AllIPAddresses(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: AllIPAddresses() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOnlyContivAnnotationsAreAgentAnnotations(t *testing.T) {
	for _, k := range AgentAnnotations() {
		if !IsAgentAnnotation(k) {
			t.Errorf("IsAgentAnnotation(%q) = false for a listed key", k)
		}
	}
	for _, k := range []string{"kubectl.kubernetes.io/last-applied-configuration", "contivpp.io/other", ""} {
		if IsAgentAnnotation(k) {
			t.Errorf("IsAgentAnnotation(%q) = true", k)
		}
	}
}
