package vppsim

// The generic feature switch (vnet/feature/feature_api.c) for the features
// the simulator models: cnat's, which the cnat API never enables itself
// (spec vpp-ip6-cnat-stn-stats.md §2.3).

import (
	"strings"

	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
)

// cnatFeatures are cnat's feature registrations (VNET_FEATURE_INIT in
// cnat_node_snat.c and cnat_node_feature.c): feature name -> arc.
var cnatFeatures = map[string]string{
	"cnat-snat-ip4":   "ip4-unicast",
	"cnat-snat-ip6":   "ip6-unicast",
	"cnat-input-ip4":  "ip4-unicast",
	"cnat-input-ip6":  "ip6-unicast",
	"cnat-output-ip4": "ip4-output",
	"cnat-output-ip6": "ip6-output",
}

// featureArcs are VPP's feature arcs a client may name (vnet's
// VNET_FEATURE_ARC_INIT registrations). A feature of another plugin on one
// of them may exist in VPP: the simulator answers it UNIMPLEMENTED.
var featureArcs = map[string]bool{
	"device-input": true, "ethernet-output": true, "interface-output": true, "l2-input-nonip": true,
	"ip4-unicast": true, "ip4-multicast": true, "ip4-output": true, "ip4-local": true, "ip4-drop": true, "ip4-punt": true,
	"ip6-unicast": true, "ip6-multicast": true, "ip6-output": true, "ip6-local": true, "ip6-drop": true, "ip6-punt": true,
	"mpls-input": true, "mpls-output": true, "arp": true, "nsh-output": true,
}

// cnatFeatKey is one cnat feature on one interface.
type cnatFeatKey struct {
	i    *iface
	name string
}

// featureReg classifies an (arc, feature) pair: known tells whether it is a
// cnat registration, unknown whether VPP has no such registration for sure
// (a cnat feature on another arc, a cnat- name cnat does not register, an
// arc that does not exist). Neither: another plugin's feature.
func featureReg(arc, name string) (known, unknown bool) {
	if a, ok := cnatFeatures[name]; ok {
		return a == arc, a != arc
	}
	return false, !featureArcs[arc] || strings.HasPrefix(name, "cnat-")
}

// featureCheck returns the interface of a feature request and the retval
// of its checks: INVALID_SW_IF_INDEX, INVALID_VALUE for a pair VPP has no
// registration for, UNIMPLEMENTED for another plugin's feature.
func featureCheck(st *state, sw interface_types.InterfaceIndex, arc, name string) (*iface, int32) {
	i := st.iface(sw)
	known, unknown := featureReg(arc, name)
	switch {
	case i == nil:
		return nil, retvalInvalidSwIfIndex
	case unknown:
		return nil, retvalInvalidValue
	case !known:
		return nil, retvalUnimplemented
	}
	return i, retvalOK
}

// hFeatureEnableDisable enables or disables a feature on an interface: an
// unknown interface is INVALID_SW_IF_INDEX, an unknown (arc, feature) pair
// INVALID_VALUE (vnet_get_feature_reg finds no registration). Enables are
// counted as VPP's config does (enabling twice adds the feature twice, and
// one disable removes one); disabling a feature that is not on succeeds.
func hFeatureEnableDisable(cl *call, m *feature.FeatureEnableDisable) {
	rep := &feature.FeatureEnableDisableReply{}
	i, rv := featureCheck(cl.st, m.SwIfIndex, m.ArcName, m.FeatureName)
	rep.Retval = rv
	if rv == retvalOK {
		c := &cl.st.cnat
		k := cnatFeatKey{i: i, name: m.FeatureName}
		if c.feats == nil {
			c.feats = map[cnatFeatKey]int{}
		}
		switch {
		case m.Enable:
			c.feats[k]++
		case c.feats[k] > 1:
			c.feats[k]--
		default:
			delete(c.feats, k)
		}
	}
	cl.send(rep)
}

// hFeatureIsEnabled answers whether a cnat feature is on an interface; a
// pair VPP has no registration for is not enabled (retval 0).
func hFeatureIsEnabled(cl *call, m *feature.FeatureIsEnabled) {
	rep := &feature.FeatureIsEnabledReply{}
	i, rv := featureCheck(cl.st, m.SwIfIndex, m.ArcName, m.FeatureName)
	switch {
	case rv == retvalInvalidValue:
		// Not registered: vnet_feature_is_enabled says no.
	case rv != retvalOK:
		rep.Retval = rv
	default:
		rep.IsEnabled = cl.st.cnat.feats[cnatFeatKey{i: i, name: m.FeatureName}] > 0
	}
	cl.send(rep)
}

// cnatFeatureOn tells whether cnat feature name is enabled on interface sw.
func (st *state) cnatFeatureOn(sw uint32, name string) bool {
	i := st.ifaces[sw]
	return i != nil && st.cnat.feats[cnatFeatKey{i: i, name: name}] > 0
}
