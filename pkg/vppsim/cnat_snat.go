package vppsim

// cnat source NAT (cnat_snat_policy.c; spec vpp-ip6-cnat-stn-stats.md §2.5):
// the SNAT addresses, the policy, the excluded prefixes and the interface
// maps. The cnat-snat-ip4/ip6 nodes are in fwd_cnat.go.

import (
	"net/netip"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
)

// Interface map tables (cnat_snat_interface_map_type_t).
const (
	cnatMapIncludeV4 = 0
	cnatMapIncludeV6 = 1
	cnatMapPod       = 2
	cnatMapHost      = 3
	cnatNMaps        = 4
)

// cnatSNAT is the source NAT state. The zero value is VPP's start state:
// no SNAT address (both families unresolved), policy NONE.
type cnatSNAT struct {
	// set tells whether cnat_set_snat_addresses was called.
	set bool
	// ip4 and ip6 are the literal addresses given, sw the interface they
	// are taken from instead (noIndex: the literal ones).
	ip4, ip6 netip.Addr
	sw       uint32
	policy   cnat.CnatSnatPolicies
	// excluded are the excluded prefixes, masked, per family
	// (cnat_snat_policy_add_pfx).
	excluded map[netip.Prefix]bool
	// maps are the interface maps (bitmaps by sw_if_index in VPP).
	maps [cnatNMaps]map[uint32]bool
}

// addr returns the SNAT address of the family and whether it is resolved:
// a literal address counts as resolved even when it is all zeros; an
// interface's is its first address of the family, unresolved while it has
// none (cnat_resolve_ep and the address callback).
func (st *state) cnatSNATAddr(v6 bool) (netip.Addr, bool) {
	s := &st.cnat.snat
	if !s.set {
		return netip.Addr{}, false
	}
	if s.sw == noIndex {
		if v6 {
			return s.ip6, true
		}
		return s.ip4, true
	}
	return st.cnatResolve(cnatEP{sw: s.sw, v6: v6})
}

// hCnatSetSnatAddresses sets the SNAT addresses (cnat_set_snat): both
// literal addresses, or an interface when sw_if_index is not ~0. VPP checks
// nothing and always replies 0; an interface that does not exist leaves the
// addresses unresolved.
func hCnatSetSnatAddresses(cl *call, m *cnat.CnatSetSnatAddresses) {
	s := &cl.st.cnat.snat
	s.set = true
	s.ip4 = netip.AddrFrom4(m.SnatIP4)
	s.ip6 = netip.AddrFrom16(m.SnatIP6)
	s.sw = uint32(m.SwIfIndex)
	cl.send(&cnat.CnatSetSnatAddressesReply{})
}

// hCnatGetSnatAddresses returns what VPP keeps: the addresses as last set
// (or resolved from the interface) and the interface index; 0s and
// sw_if_index 0 before the first set (the zeroed main struct). The id field
// is not filled.
func hCnatGetSnatAddresses(cl *call, _ *cnat.CnatGetSnatAddresses) {
	st := cl.st
	s := &st.cnat.snat
	rep := &cnat.CnatGetSnatAddressesReply{}
	if s.set {
		rep.SwIfIndex = interface_types.InterfaceIndex(s.sw)
		a4, a6 := s.ip4, s.ip6
		if s.sw != noIndex {
			// The resolved address replaces the given one; an
			// unresolved family keeps what was given.
			if a, ok := st.cnatSNATAddr(false); ok {
				a4 = a
			}
			if a, ok := st.cnatSNATAddr(true); ok {
				a6 = a
			}
		}
		rep.SnatIP4 = a4.As4()
		rep.SnatIP6 = a6.As16()
	}
	cl.send(rep)
}

// hCnatSetSnatPolicy selects the policy; an unknown one replies 1, the raw
// return of cnat_set_snat_policy, and keeps the current one.
func hCnatSetSnatPolicy(cl *call, m *cnat.CnatSetSnatPolicy) {
	rep := &cnat.CnatSetSnatPolicyReply{}
	switch m.Policy {
	case cnat.CNAT_POLICY_NONE, cnat.CNAT_POLICY_IF_PFX, cnat.CNAT_POLICY_K8S:
		cl.st.cnat.snat.policy = m.Policy
	default:
		rep.Retval = 1
	}
	cl.send(rep)
}

// hCnatSnatPolicyAddDelExcludePfx adds or deletes an excluded prefix.
// Adding one that is there again succeeds; deleting one that is not there
// replies 1 (cnat_snat_policy_del_pfx). The address is masked to the length.
// VPP does not check the length against the family; the simulator refuses a
// length beyond the family's bits with INVALID_VALUE (stricter: VPP would
// index its mask table with it).
func hCnatSnatPolicyAddDelExcludePfx(cl *call, m *cnat.CnatSnatPolicyAddDelExcludePfx) {
	rep := &cnat.CnatSnatPolicyAddDelExcludePfxReply{}
	s := &cl.st.cnat.snat
	p, ok := prefixFromAPI(m.Prefix)
	switch {
	case !ok:
		rep.Retval = retvalInvalidValue
	case m.IsAdd != 0:
		if s.excluded == nil {
			s.excluded = map[netip.Prefix]bool{}
		}
		s.excluded[p.Masked()] = true
	case !s.excluded[p.Masked()]:
		rep.Retval = 1
	default:
		delete(s.excluded, p.Masked())
	}
	cl.send(rep)
}

// excludedDst tells whether dst is in an excluded prefix (cnat_search_snat_prefix).
func (s *cnatSNAT) excludedDst(dst netip.Addr) bool {
	for bits := dst.BitLen(); bits >= 0 && len(s.excluded) > 0; bits-- {
		p, _ := dst.Prefix(bits)
		if s.excluded[p] {
			return true
		}
	}
	return false
}

// hCnatSnatPolicyAddDelIf adds an interface to, or removes it from, one of
// the maps: an unknown interface is INVALID_SW_IF_INDEX (VALIDATE_SW_IF_INDEX),
// a table ≥ 4 INVALID_VALUE.
func hCnatSnatPolicyAddDelIf(cl *call, m *cnat.CnatSnatPolicyAddDelIf) {
	rep := &cnat.CnatSnatPolicyAddDelIfReply{}
	s := &cl.st.cnat.snat
	switch {
	case cl.st.iface(m.SwIfIndex) == nil:
		rep.Retval = retvalInvalidSwIfIndex
	case int(m.Table) >= cnatNMaps:
		rep.Retval = retvalInvalidValue
	case m.IsAdd != 0:
		if s.maps[m.Table] == nil {
			s.maps[m.Table] = map[uint32]bool{}
		}
		s.maps[m.Table][uint32(m.SwIfIndex)] = true
	default:
		delete(s.maps[m.Table], uint32(m.SwIfIndex))
	}
	cl.send(rep)
}

// inMap tells whether interface sw is in map t.
func (s *cnatSNAT) inMap(t int, sw uint32) bool { return s.maps[t][sw] }

// cnatSNATFlow is what the SNAT policies look at: the flow's addresses, the
// receiving interface and the egress interface (noIndex before the lookup).
type cnatSNATFlow struct {
	src, dst netip.Addr
	in, out  uint32
}

// wants tells whether the active policy source-NATs the flow
// (cnat_snat_policy_none / _if_pfx / _k8s).
func (st *state) cnatSNATWants(f cnatSNATFlow) bool {
	s := &st.cnat.snat
	ifPfx := func() bool {
		t := cnatMapIncludeV4
		if f.dst.Is6() {
			t = cnatMapIncludeV6
		}
		return s.inMap(t, f.in) && !s.excludedDst(f.dst)
	}
	switch s.policy {
	case cnat.CNAT_POLICY_IF_PFX:
		return ifPfx()
	case cnat.CNAT_POLICY_K8S:
		if s.inMap(cnatMapHost, f.out) {
			return false
		}
		if ifPfx() {
			return true
		}
		if !s.inMap(cnatMapPod, f.in) && !s.inMap(cnatMapPod, f.out) {
			// Compared with the address as set, resolved or not.
			a := s.ip4
			if f.src.Is6() {
				a = s.ip6
			}
			if s.sw != noIndex {
				a, _ = st.cnatSNATAddr(f.src.Is6())
			}
			return f.src != a
		}
		return f.src == f.dst
	}
	return true
}
