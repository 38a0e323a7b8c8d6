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
	txn.Put(vpp_cnat.SnatAddressesKey, rndr.snatAddresses())
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

// snatAddresses returns the addresses pods' traffic leaving the cluster is
// source-NATed to, with natExternalTraffic only: the default interface's IPv4 (as
// the NAT44 renderer's pool; when IPv4 is served and, in no-overlay mode, the
// default interface is not the main one) and this node's IPv6. A family left empty
// is not source-NATed by cnat (VPP: unresolved).
func (rndr *Renderer) snatAddresses() *vpp_cnat.SnatAddresses {
	a := &vpp_cnat.SnatAddresses{}
	if !rndr.ContivConf.NatExternalTraffic() {
		return a
	}
	if rndr.IPv4 {
		nodeIP, nodeNet := rndr.IPNet.GetNodeIP()
		name, ip := uplink.Default(rndr.ContivConf, nodeIP, nodeNet)
		noOverlayMain := rndr.ContivConf.GetRoutingConfig().UseNoOverlay && name == rndr.ContivConf.GetMainInterfaceName()
		if ip != nil && !noOverlayMain {
			a.Ip4 = ip.String()
		}
	}
	a.Ip6 = rndr.nodeIP6
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

// ifValues returns the values of one frontend or backend interface, per family
// served: the cnat-snat feature, the POD table; for a pod's interface the include
// table; for the host interconnect the HOST table.
func (rndr *Renderer) ifValues(name string) map[string]proto.Message {
	out := make(map[string]proto.Message, 6)
	put := func(table vpp_cnat.SnatPolicyInterface_Table) {
		out[vpp_cnat.SnatPolicyInterfaceKey(name, table)] = &vpp_cnat.SnatPolicyInterface{Interface: name, Table: table}
	}
	put(vpp_cnat.SnatPolicyInterface_POD)
	if name == rndr.hostIf {
		put(vpp_cnat.SnatPolicyInterface_HOST)
	}
	for _, f := range rndr.families() {
		family, include := vpp_cnat.AddressFamily_IPV4, vpp_cnat.SnatPolicyInterface_INCLUDE_V4
		if f == ipam.IPv6 {
			family, include = vpp_cnat.AddressFamily_IPV6, vpp_cnat.SnatPolicyInterface_INCLUDE_V6
		}
		out[vpp_cnat.SnatFeatureKey(name, family)] = &vpp_cnat.SnatFeature{Interface: name, Family: family}
		if !rndr.infraIfs.Has(name) {
			put(include)
		}
	}
	return out
}
