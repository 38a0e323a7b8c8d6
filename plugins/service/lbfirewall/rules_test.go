package lbfirewall

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

func TestRulesFollowKubeProxysFirewall(t *testing.T) {
	dst := "192.0.2.10/32"
	http := &vpp_acl.ACL_Rule_PortRange{LowerPort: 80, UpperPort: 80}
	dns := &vpp_acl.ACL_Rule_PortRange{LowerPort: 53, UpperPort: 53}
	twoPorts := lb("web", webLBIP, " 10.0.0.0/8", "bad", "fd00::/64", "192.168.1.7/24")
	twoPorts.Port = append(twoPorts.Port, &svcmodel.Service_ServicePort{Name: "dns", Protocol: "UDP", Port: 53})
	proxied := lb("web", webLBIP, "10.0.0.0/8")
	proxied.LbIngressProxyIps = []string{webLBIP}
	nodePort := lb("web", webLBIP, "10.0.0.0/8")
	nodePort.ServiceType = "NodePort"
	otherProxy := lb("web", webLBIP, "10.0.0.0/8")
	otherProxy.Labels = map[string]string{svcmodel.LabelServiceProxyName: "other"}

	for _, tc := range []struct {
		name    string
		svc     *svcmodel.Service
		want    []*vpp_acl.ACL_Rule
		skipped int
	}{
		{"every range permitted, then the rest denied, per port; invalid and IPv6 ranges skipped", twoPorts, []*vpp_acl.ACL_Rule{
			{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: "10.0.0.0/8", DestinationNetwork: dst, Protocol: 6, DestinationPortRange: http},
			{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: "192.168.1.0/24", DestinationNetwork: dst, Protocol: 6, DestinationPortRange: http},
			{Action: vpp_acl.ACL_Rule_DENY, DestinationNetwork: dst, Protocol: 6, DestinationPortRange: http},
			{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: "10.0.0.0/8", DestinationNetwork: dst, Protocol: 17, DestinationPortRange: dns},
			{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: "192.168.1.0/24", DestinationNetwork: dst, Protocol: 17, DestinationPortRange: dns},
			{Action: vpp_acl.ACL_Rule_DENY, DestinationNetwork: dst, Protocol: 17, DestinationPortRange: dns},
		}, 2},
		{"no ranges: not filtered", lb("web", webLBIP), nil, 0},
		{"only invalid ranges: not filtered", lb("web", webLBIP, "nonsense"), nil, 1},
		{"ipMode Proxy ingress IP: not filtered", proxied, nil, 0},
		{"not a LoadBalancer: not filtered", nodePort, nil, 0},
		{"another proxy's service: not filtered", otherProxy, nil, 0},
	} {
		got, skipped := Rules(tc.svc)
		if len(got) != len(tc.want) || len(skipped) != tc.skipped {
			t.Errorf("%s: %d rules %v, %d skipped %v; want %d rules, %d skipped", tc.name, len(got), got, len(skipped), skipped, len(tc.want), tc.skipped)
			continue
		}
		for i := range got {
			if !proto.Equal(got[i], tc.want[i]) {
				t.Errorf("%s: rule %d = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestACLNamesAreShortTagsWithoutSlashes(t *testing.T) {
	long := renderer.ServiceID{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63)}
	other := renderer.ServiceID{Namespace: long.Namespace, Name: long.Name[1:]}
	for _, id := range []renderer.ServiceID{svcID("web"), long, other} {
		n := ACLName(id)
		if _, err := vpp_acl.ModelKey(&vpp_acl.ACL{Name: n}); err != nil || len(n) > 63 {
			t.Errorf("ACLName(%s) = %q (%d bytes): %v", id, n, len(n), err)
		}
	}
	if ACLName(long) == ACLName(other) {
		t.Errorf("two services share the ACL name %q", ACLName(long))
	}
}
