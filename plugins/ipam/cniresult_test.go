package ipam

import "testing"

func TestPodIPFromCNIResultPicksTheFirstAddressOfTheClusterFamily(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		ipv6    bool
		want    string
		wantErr string
	}{
		{"ips[0] of a 1.0 result", `{"ips":[{"address":"10.1.1.5/24"},{"address":"10.1.1.6/24"}]}`, false, "10.1.1.5", ""},
		{"bare address", `{"ips":[{"address":"10.1.1.5"}]}`, false, "10.1.1.5", ""},
		{"dual stack, IPv6 cluster", `{"ips":[{"address":"10.1.1.5/24"},{"address":"2001::5/64"}]}`, true, "2001::5", ""},
		{"dual stack, IPv4 cluster", `{"ips":[{"address":"2001::5/64"},{"address":"10.1.1.5/24"}]}`, false, "10.1.1.5", ""},
		{"0.2.0 ip6", `{"ip6":{"ip":"2001::7/64"}}`, true, "2001::7", ""},
		{"IPv4 only for an IPv6 cluster", `{"ips":[{"address":"10.1.1.5/24"}]}`, true, "", "the IPAM result has no IPv6 address (got 10.1.1.5/24)"},
		{"whitespace only", "  \n", false, "", "the IPAM result is empty"},
		{"JSON of another shape", `[1,2]`, false, "", "the IPAM result is not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ip, err := podIPFromCNIResult(tc.data, tc.ipv6)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && ip.String() != tc.want {
				t.Errorf("got %s, want %s", ip, tc.want)
			}
			if tc.wantErr == "" && !tc.ipv6 && len(ip) != 4 {
				t.Errorf("IPv4 address not normalised: %d bytes", len(ip))
			}
		})
	}
}
