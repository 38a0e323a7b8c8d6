package natplugin

import (
	"strings"
	"testing"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// TestExternalDNATRefusedWhileTheServiceHoldsItsEndpoint: the refusal of an external
// value that the scheduler tries to create while the agent maps its endpoint names
// both keys and the endpoint.
func TestExternalDNATRefusedWhileTheServiceHoldsItsEndpoint(t *testing.T) {
	var c conflicts
	c.preferred = DefaultPreferred
	svc := nodeConfig()[nat.DNAT44Key("default/web")].(*nat.DNat44)
	valid := map[string]*nat.DNat44{"default/web": svc}
	each := func(fn func(*nat.DNat44)) {
		for _, v := range valid {
			fn(v)
		}
	}
	c.validated("default/web", nil, svc, each)
	c.validated("operator", nil, externalDNAT("operator"), each)
	err := c.refusal("operator")
	for _, want := range []string{"TCP 10.96.0.10:80", nat.DNAT44Key("default/web"), nat.DNAT44Key("operator")} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal = %v, want it to name %s", err, want)
		}
	}
	c.deleted("default/web", svc)
	if err := c.refusal("operator"); err != nil {
		t.Errorf("refusal after the Service is gone: %v", err)
	}
}

func TestDefaultPreferredLabelsAreTheRenderersOnes(t *testing.T) {
	for label, want := range map[string]bool{
		"default/web": true, "kube-system/kube-dns": true, "ns/a.b-c": true, nat.IdentityDNAT44Label: true, nat.ExternalIPDNAT44LabelPrefix + "20.0.0.2": true,
		"operator": false, "Default/web": false, "ns/": false, "/web": false, "a/b/c": false, "-ns/web": false,
	} {
		if got := DefaultPreferred(label); got != want {
			t.Errorf("DefaultPreferred(%q) = %v, want %v", label, got, want)
		}
	}
}

// externalDNAT is a DNat44 an operator wrote under another key: one mapping on the
// Service default/web's 10.96.0.10:80, one on an address of its own.
func externalDNAT(label string) *nat.DNat44 {
	return &nat.DNat44{Label: label, StMappings: []*nat.DNat44_StaticMapping{
		{ExternalIp: "10.96.0.10", ExternalPort: 80, Protocol: nat.DNat44_TCP,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.9", 9090, 2, 0)}},
		{ExternalIp: "10.96.0.99", ExternalPort: 80, Protocol: nat.DNat44_TCP,
			LocalIps: []*nat.DNat44_StaticMapping_LocalIP{lip("10.1.1.9", 9090, 2, 0)}},
	}}
}
