package nat44

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// TestExternalIPsThatGetIdentityAndPoolValues: only IPv4 external IPs that are no
// node IP and no address of the NAT pool already (VPP refuses an address twice) get
// the values, each once, and none without a default interface (no output feature).
func TestExternalIPsThatGetIdentityAndPoolValues(t *testing.T) {
	addrs := func(texts ...string) []renderer.Address {
		var out []renderer.Address
		for _, s := range texts {
			out = append(out, renderer.NewAddress(netip.MustParseAddr(s).AsSlice()))
		}
		return out
	}
	svc := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: "web"},
		ExternalIPs: addrs("20.0.0.2", nodeIP, workerIP, natLoop, "2001:db8::2", "20.0.0.3", "20.0.0.2")}
	e := newEnv(t, envOptions{})
	if got := e.rndr.wantedExternalIPs(svc); !slices.Equal(got, []string{"20.0.0.2", "20.0.0.3"}) {
		t.Errorf("with a default interface: %q", got)
	}
	noGateway := newEnv(t, envOptions{conf: strings.Replace(confVXLAN, "  gateway: 192.168.16.1\n", "", 1)})
	if got := noGateway.rndr.wantedExternalIPs(svc); got != nil {
		t.Errorf("without a default interface: %q", got)
	}
}
