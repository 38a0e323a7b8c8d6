package cnat

import (
	"net"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/uplink"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// resyncSNAT stages the global source NAT values: the K8S policy, the SNAT addresses
// and the excluded prefixes of the families served.
func (rndr *Renderer) resyncSNAT(txn controller.ResyncOperations) {
	txn.Put(vpp_cnat.SnatPolicyKey, &vpp_cnat.SnatPolicy{Policy: vpp_cnat.SnatPolicy_K8S})
	if a := rndr.snatAddresses(); a.GetIp4() != "" || a.GetIp6() != "" {
		txn.Put(vpp_cnat.SnatAddressesKey, a)
	}
	for _, f := range rndr.families() {
		fa := rndr.IPAM.ThisNodeAddresses(f)
		if fa == nil {
			continue
		}
		for _, n := range []*net.IPNet{fa.PodSubnetAllNodes, fa.HostInterconnectSubnetAllNodes, fa.NodeNetwork, fa.VxlanNetwork, fa.ServiceNetwork} {
			if n == nil {
				continue
			}
			p := n.String()
			txn.Put(vpp_cnat.SnatExcludePrefixKey(p), &vpp_cnat.SnatExcludePrefix{Prefix: p})
		}
	}
}

// learnSNAT decides the IPv4 SNAT address and whether pods' traffic leaving the
// cluster is source-NATed: with natExternalTraffic and a default interface (not, in
// no-overlay mode, the main interface, which carries the traffic between nodes),
// as the NAT44 renderer decides its pool, to that interface's IPv4; otherwise the
// node IP is the SNAT address of hairpin traffic only.
func (rndr *Renderer) learnSNAT() {
	rndr.snatIP4, rndr.snatOut = rndr.nodeIP4, false
	if !rndr.ContivConf.NatExternalTraffic() {
		return
	}
	nodeIP, nodeNet := rndr.IPNet.GetNodeIP()
	name, ip := uplink.Default(rndr.ContivConf, nodeIP, nodeNet)
	if name == "" || (rndr.ContivConf.GetRoutingConfig().UseNoOverlay && name == rndr.ContivConf.GetMainInterfaceName()) {
		return
	}
	rndr.snatOut = true
	if ip != nil {
		rndr.snatIP4 = ip.String()
	}
}

// snatAddresses returns the SNAT addresses of the families served (VPP's cnat-snat
// needs one for any translation: a pod reaching itself through a Service, and pods'
// traffic leaving the cluster when snatOut): learnSNAT's IPv4 and this node's IPv6.
// A family left empty is not source-NATed by cnat.
func (rndr *Renderer) snatAddresses() *vpp_cnat.SnatAddresses {
	a := &vpp_cnat.SnatAddresses{Ip6: rndr.nodeIP6}
	if rndr.IPv4 {
		a.Ip4 = rndr.snatIP4
	}
	return a
}

// updateIfs stages the interface values of the interfaces that joined or left the
// union of the frontend and backend sets.
func (rndr *Renderer) updateIfs(txn renderer.UpdateTxn, change string) {
	next := unionOf(rndr.frontendIfs, rndr.backendIfs)
	described := false
	describe := func() {
		if !described {
			txn.Describe(change)
			described = true
		}
	}
	for _, name := range rndr.ifs.Sorted() {
		if next.Has(name) {
			continue
		}
		describe()
		for key := range rndr.ifValues(name) {
			txn.Delete(key)
		}
	}
	for _, name := range next.Sorted() {
		if rndr.ifs.Has(name) {
			continue
		}
		describe()
		for key, value := range rndr.ifValues(name) {
			txn.Put(key, value)
		}
	}
	rndr.ifs = next
}

// ifValues returns the values of one frontend or backend interface: the POD table;
// per family served that has a SNAT address, the cnat-snat feature; for a pod's
// interface, per family served, cnat-input and cnat-output (hairpin, see doc.go),
// and the include table (when pods' traffic leaving the cluster is source-NATed);
// for the host interconnect the HOST table.
func (rndr *Renderer) ifValues(name string) map[string]proto.Message {
	out := make(map[string]proto.Message, 10)
	feature := func(node vpp_cnat.SnatFeature_Node, family vpp_cnat.AddressFamily) {
		out[vpp_cnat.SnatFeatureKey(name, node, family)] = &vpp_cnat.SnatFeature{Interface: name, Node: node, Family: family}
	}
	pod := !rndr.infraIfs.Has(name)
	put := func(table vpp_cnat.SnatPolicyInterface_Table) {
		out[vpp_cnat.SnatPolicyInterfaceKey(name, table)] = &vpp_cnat.SnatPolicyInterface{Interface: name, Table: table}
	}
	put(vpp_cnat.SnatPolicyInterface_POD)
	if name == rndr.hostIf {
		put(vpp_cnat.SnatPolicyInterface_HOST)
	}
	snat := rndr.snatAddresses()
	for _, f := range rndr.families() {
		family, include, addr := vpp_cnat.AddressFamily_IPV4, vpp_cnat.SnatPolicyInterface_INCLUDE_V4, snat.GetIp4()
		if f == ipam.IPv6 {
			family, include, addr = vpp_cnat.AddressFamily_IPV6, vpp_cnat.SnatPolicyInterface_INCLUDE_V6, snat.GetIp6()
		}
		if addr == "" {
			// A family without a SNAT address (no IPv6 on an IPv4 cluster, no node
			// IP): its cnat-snat feature would wait for one forever (the descriptor
			// enables it only once the family has an address).
			continue
		}
		if pod {
			// A pod reaching itself through a Service: cnat-input DNATs on the
			// pod's interface (in the pod VRF: cnat's VIP lookup there is by
			// client, not by FIB), cnat-output SNATs the DNATed packet to the
			// SNAT address by the K8S policy's rule 4 (source = destination,
			// true only after the DNAT) with the pod's interface as egress, and
			// cnat-input un-SNATs the pod's reply (cnat_node_feature.c). Without
			// a SNAT address cnat-output would not source-NAT (the
			// zero-address check) and the family has no node address.
			feature(vpp_cnat.SnatFeature_INPUT, family)
			feature(vpp_cnat.SnatFeature_OUTPUT, family)
		}
		feature(vpp_cnat.SnatFeature_SNAT, family)
		if rndr.snatOut && pod {
			put(include)
		}
	}
	return out
}
