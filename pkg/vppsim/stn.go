package vppsim

// The STN plugin (steal the NIC), VPP 25.10 plugins/stn: rules that send the packets
// VPP punts for an address to an interface toward the host (spec
// vpp-ip6-cnat-stn-stats.md §3). The API and CLI are here; the punt node is in
// fwd_stn.go.

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/stn"
)

// stnRule is one rule: packets punted for addr go out of sw.
type stnRule struct {
	addr netip.Addr
	sw   uint32
	// index is the rule's pool index (VPP's rule_index in "show stn rules").
	index uint32
}

// stnState is the plugin's state. The zero value is VPP's start state.
type stnState struct {
	rules map[netip.Addr]*stnRule
	// free are the pool indexes of deleted rules, reused last-freed first as VPP's pool_get does.
	free []uint32
	next uint32
	// puntUnknown is set once the first rule was added: stn.c registers the punting
	// of unknown UDP and TCP ports (udp_punt_unknown, tcp_punt_unknown) then, and never
	// withdraws it, even when the last rule goes.
	puntUnknown bool
	// ipOn are the interfaces a rule IPv4- and IPv6-enabled (ip4_sw_interface_enable_disable
	// in stn_rule_add_del); VPP never disables them again when the rule goes. Keyed by
	// the interface itself, so that a new interface reusing a deleted one's
	// sw_if_index is not enabled.
	ipOn map[*iface]bool
}

func registerSTN(r *registry) {
	on(r, hStnAddDelRule)
	on(r, hStnRulesDump)
}

// hStnAddDelRule adds (or moves) or deletes the rule of an address.
//
// VPP does not validate sw_if_index (stn_api.c, spec §3.1: what a bad one does is
// unconfirmed; stn_rule_add_del looks up the TX node of the interface, which for an
// index outside the interface pool reads outside it). The simulator refuses a
// sw_if_index that names no interface with INVALID_SW_IF_INDEX, the stricter answer:
// a client relying on VPP to accept one has a bug either way.
func hStnAddDelRule(cl *call, m *stn.StnAddDelRule) {
	st := cl.st
	rep := &stn.StnAddDelRuleReply{}
	addr, ok := addrFromAPI(m.IPAddress)
	switch {
	case !ok:
		rep.Retval = retvalInvalidValue
	case m.IsAdd:
		i := st.iface(m.SwIfIndex)
		if i == nil {
			rep.Retval = retvalInvalidSwIfIndex
			break
		}
		st.stn.add(addr, i)
	default:
		if !st.stn.del(addr) {
			rep.Retval = retvalNoSuchEntry
		}
	}
	cl.send(rep)
}

// hStnRulesDump lists the rules in pool order.
func hStnRulesDump(cl *call, _ *stn.StnRulesDump) {
	for _, r := range cl.st.stn.sorted() {
		cl.send(&stn.StnRulesDetails{IPAddress: addrToAPI(r.addr), SwIfIndex: interface_types.InterfaceIndex(r.sw)})
	}
}

// add adds the rule of addr toward i, or moves an existing one to i.
func (s *stnState) add(addr netip.Addr, i *iface) {
	if s.rules == nil {
		s.rules = map[netip.Addr]*stnRule{}
		s.ipOn = map[*iface]bool{}
	}
	r := s.rules[addr]
	if r == nil {
		r = &stnRule{addr: addr}
		if n := len(s.free); n > 0 {
			r.index, s.free = s.free[n-1], s.free[:n-1]
		} else {
			r.index = s.next
			s.next++
		}
		s.rules[addr] = r
		s.puntUnknown = true
	}
	r.sw = i.idx
	s.ipOn[i] = true
}

// del deletes the rule of addr; false if there is none.
func (s *stnState) del(addr netip.Addr) bool {
	r := s.rules[addr]
	if r == nil {
		return false
	}
	delete(s.rules, addr)
	s.free = append(s.free, r.index)
	return true
}

// sorted returns the rules in pool index order.
func (s *stnState) sorted() []*stnRule {
	out := make([]*stnRule, 0, len(s.rules))
	for _, r := range s.rules {
		out = append(out, r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].index < out[b].index })
	return out
}

// ipEnabled tells whether a rule IP-enabled interface i.
func (s *stnState) ipEnabled(i *iface) bool { return s.ipOn[i] }

// cliShowSTNRules prints "show stn rules": per rule its index, address, interface and
// the TX node of the interface.
func cliShowSTNRules(st *state, _ []string) string {
	var b strings.Builder
	for _, r := range st.stn.sorted() {
		name := st.ifName(r.sw)
		fmt.Fprintf(&b, "- rule_index: %d\n  address: %s\n  iface: %s (%d)\n  next_node: %s-output (%d)\n",
			r.index, r.addr, name, r.sw, name, r.sw)
	}
	return b.String()
}
