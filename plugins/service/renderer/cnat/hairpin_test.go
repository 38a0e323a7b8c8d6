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
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/cnatplugin"
)

// podsNode is a traffic node programmed with the renderer's translation of
// default/web (the given backends) and, through the API (the traffic node has no
// interface descriptor), the renderer's values of the pod interface podIf on the
// pods' NIC: the K8S policy, the SNAT addresses, the POD table and every cnat
// feature the renderer stages for podIf, enabled on the arc and node the cnat
// descriptor uses (cnatplugin.FeatureArcNode). It returns the node and the features
// enabled ("arc/node").
func podsNode(t *testing.T, backends ...string) (*trafficNode, []string) {
	t.Helper()
	n := newTrafficNode(t)
	_, txn := newRenderer(t, true, webService(backends...))
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
	var enabled []string
	for _, v := range txn.Values {
		f, ok := v.(*vpp_cnat.SnatFeature)
		if !ok || f.GetInterface() != podIf {
			continue
		}
		arc, node := cnatplugin.FeatureArcNode(f)
		n.do(t, &feature.FeatureEnableDisable{SwIfIndex: sw, Enable: true, ArcName: arc, FeatureName: node}, &feature.FeatureEnableDisableReply{})
		enabled = append(enabled, arc+"/"+node)
	}
	return n, enabled
}

// TestPodReachesItselfThroughItsService: a pod reaching itself through its Service
// (Kubernetes e2e "should allow pods to hairpin back to themselves through
// services") gets its packet from another address than its own, and its answer
// comes back from the cluster IP. With the renderer's features on the pod's
// interface (cnat-input and cnat-output besides cnat-snat), the SYN comes back from
// the SNAT address (the node IP): cnat-output's K8S policy rule 4 (source =
// destination) fires after cnat-input's DNAT; the pod's answer is un-SNATed by
// cnat-input and un-DNATed by cnat-output (cnat_node_feature.c). With cnat-snat only,
// the rule is evaluated before the DNAT and the pod gets its own packet from itself.
func TestPodReachesItselfThroughItsService(t *testing.T) {
	const client = pod1 + ":33000"
	n, enabled := podsNode(t, pod1)
	got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC)
	var port uint16
	if len(got) == 1 {
		if _, err := fmt.Sscanf(got[0], "tcp "+nodeIP4+":%d -> "+pod1+":8080", &port); err != nil {
			port = 0
		}
	}
	if port == 0 {
		t.Fatalf("with the features %q the pod's NIC sent %q, want the SYN to %s:8080 from the SNAT address %s", enabled, got, pod1, nodeIP4)
	}
	snat := netip.AddrPortFrom(netip.MustParseAddr(nodeIP4), port).String()
	if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, pod1+":8080", snat, podsNIC); len(got) != 1 || got[0] != "tcp 10.96.0.10:80 -> "+client {
		t.Errorf("the pod's answer: the pod's NIC sent %q, want it from the cluster IP to %s", got, client)
	}
}

// TestPodReachesAnotherLocalPodThroughTheServiceWithItsOwnAddress: with the same
// features, a pod reaching another pod of this node through the Service keeps its
// address (Kubernetes preserves the client IP inside the cluster): rule 4 does not
// hold, both interfaces are in the POD table. The answer comes back from the
// cluster IP (cnat-output on the client's interface undoes the DNAT).
func TestPodReachesAnotherLocalPodThroughTheServiceWithItsOwnAddress(t *testing.T) {
	const client = pod1 + ":33000"
	n, enabled := podsNode(t, pod2)
	got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", podsNIC)
	if len(got) != 1 || got[0] != "tcp "+client+" -> "+pod2+":8080" {
		t.Fatalf("with the features %q the pod's NIC sent %q, want the SYN to %s:8080 from the client %s", enabled, got, pod2, client)
	}
	if got, _ := n.send(t, podsNIC, pod2MAC, st.ProtoTCP, pod2+":8080", client, podsNIC); len(got) != 1 || got[0] != "tcp 10.96.0.10:80 -> "+client {
		t.Errorf("the answer: the pod's NIC sent %q, want it from the cluster IP to %s", got, client)
	}
}

// TestPodReachesARemoteBackendWithTheRenderersFeatures: with the renderer's features
// on the pod's interface, a pod's connection to a backend on another node leaves the
// uplink from the pod's address (cnat-input's DNAT, no source NAT: the destination
// is in the pod VRF's reach, rule 4 does not hold), and the answer entering from the
// uplink leaves to the pod from the cluster IP (cnat-output's return session).
func TestPodReachesARemoteBackendWithTheRenderersFeatures(t *testing.T) {
	const peer, remote = "192.168.16.20", "10.1.2.3"
	peerMAC := [6]byte{2, 0, 0, 0, 0, 0x20}
	n, enabled := podsNode(t, remote)
	n.uplinkNeighbor(t, peer, peerMAC)
	routes := st.NewTxn()
	routes.Put(l3.RouteKey(0, "10.1.2.0/24", peer), &l3.Route{DstNetwork: "10.1.2.0/24", NextHopAddr: peer}) // the peer's pods
	n.commit(t, routes)

	const client = pod1 + ":40000"
	if got, _ := n.send(t, podsNIC, pod1MAC, st.ProtoTCP, client, "10.96.0.10:80", uplinkNIC); len(got) != 1 || got[0] != "tcp "+client+" -> "+remote+":8080" {
		t.Fatalf("with the features %q, pod to the cluster IP: the uplink sent %q, want the SYN to %s:8080 from the pod", enabled, got, remote)
	}
	if got, _ := n.send(t, uplinkNIC, peerMAC, st.ProtoTCP, remote+":8080", client, podsNIC); len(got) != 1 || got[0] != "tcp 10.96.0.10:80 -> "+client {
		t.Errorf("the remote backend's answer: the pods' NIC sent %q, want it from the cluster IP", got)
	}
}
