package cnat

import (
	"fmt"
	"net/netip"
	"testing"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// hairpinNode is a traffic node programmed with the renderer's translation of
// default/web (backend pod1) and, through the API (the traffic node has no interface
// descriptor), the renderer's SNAT values of the pods' NIC: the K8S policy, the SNAT
// addresses, the pods' NIC in the POD table; and the given cnat features on it.
func hairpinNode(t *testing.T, features ...[2]string) *trafficNode {
	t.Helper()
	n := newTrafficNode(t)
	_, txn := newRenderer(t, true, webService(pod1))
	n.commit(t, txn)
	a, ok := txn.Values[vpp_cnat.SnatAddressesKey].(*vpp_cnat.SnatAddresses)
	if !ok || a.GetIp4() != nodeIP4 {
		t.Fatalf("the renderer's SNAT addresses are %v, want the node IP %s", a, nodeIP4)
	}
	if p, _ := txn.Values[vpp_cnat.SnatPolicyKey].(*vpp_cnat.SnatPolicy); p.GetPolicy() != vpp_cnat.SnatPolicy_K8S {
		t.Fatalf("the renderer's SNAT policy is %v, want K8S", p)
	}
	if txn.Values[vpp_cnat.SnatPolicyInterfaceKey(podIf, vpp_cnat.SnatPolicyInterface_POD)] == nil {
		t.Fatalf("the renderer does not put the pod's interface in the POD table")
	}
	pods, _ := n.sim.InterfaceByName(podsNIC)
	sw := interface_types.InterfaceIndex(pods.SwIfIndex)
	n.do(t, &cnat.CnatSetSnatPolicy{Policy: cnat.CNAT_POLICY_K8S}, &cnat.CnatSetSnatPolicyReply{})
	ip4, _ := ip_types.ParseIP4Address(nodeIP4)
	ip6, _ := ip_types.ParseIP6Address(nodeIP6)
	n.do(t, &cnat.CnatSetSnatAddresses{SnatIP4: ip4, SnatIP6: ip6, SwIfIndex: ^interface_types.InterfaceIndex(0)}, &cnat.CnatSetSnatAddressesReply{})
	n.do(t, &cnat.CnatSnatPolicyAddDelIf{SwIfIndex: sw, IsAdd: 1, Table: cnat.CNAT_POLICY_POD}, &cnat.CnatSnatPolicyAddDelIfReply{})
	for _, f := range features {
		n.do(t, &feature.FeatureEnableDisable{SwIfIndex: sw, Enable: true, ArcName: f[0], FeatureName: f[1]}, &feature.FeatureEnableDisableReply{})
	}
	return n
}

// TestHairpinNeedsCNATInputAndOutputOnThePodInterface: a pod reaching itself through
// its Service (Kubernetes e2e "should allow pods to hairpin back to themselves through
// services") must get its packet from another address than its own. With the feature
// the renderer enables today (cnat-snat-ip4 on ip4-unicast) the K8S policy's rule 4
// (source = destination) is evaluated before the VIP's translation and never fires:
// the pod gets its own packet from itself. With cnat-input-ip4 and cnat-output-ip4 on
// the pod's interface and the renderer's SNAT values (what VPP 25.10 needs,
// cnat_node_feature.c; docs/dev-guide/VPP-FORWARDING.md "Hairpin"), the SYN comes
// back from the SNAT address (the node IP) and the pod's answer comes back from the
// cluster IP. The renderer cannot stage those two features yet: the cnat model's
// SnatFeature names only cnat-snat (SERVICES.md, "Hairpin").
func TestHairpinNeedsCNATInputAndOutputOnThePodInterface(t *testing.T) {
	const client = pod1 + ":33000"
	t.Run("cnat-snat (today)", func(t *testing.T) {
		n := hairpinNode(t, [2]string{"ip4-unicast", "cnat-snat-ip4"})
		got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC)
		if len(got) != 1 || got[0] != "tcp "+client+" -> "+pod1+":8080" {
			t.Fatalf("the pod's NIC sent %q, want the SYN back to the pod from itself (rule 4 cannot fire on ip4-unicast)", got)
		}
	})
	t.Run("cnat-input and cnat-output", func(t *testing.T) {
		n := hairpinNode(t, [2]string{"ip4-unicast", "cnat-input-ip4"}, [2]string{"ip4-output", "cnat-output-ip4"})
		got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC)
		var port uint16
		if len(got) == 1 {
			if _, err := fmt.Sscanf(got[0], "tcp "+nodeIP4+":%d -> "+pod1+":8080", &port); err != nil {
				port = 0
			}
		}
		if port == 0 {
			t.Fatalf("the pod's NIC sent %q, want the SYN to %s:8080 from the SNAT address %s", got, pod1, nodeIP4)
		}
		snat := netip.AddrPortFrom(netip.MustParseAddr(nodeIP4), port).String()
		if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, pod1+":8080", snat, podsNIC); len(got) != 1 || got[0] != "tcp 10.96.0.10:80 -> "+client {
			t.Errorf("the pod's answer: the pod's NIC sent %q, want it from the cluster IP to %s", got, client)
		}
	})
}
