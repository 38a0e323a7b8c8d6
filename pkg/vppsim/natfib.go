package vppsim

import "net/netip"

// NAT44-ED's local /32 entries ("nat-low" FIB source) are reference
// counted per (address, interface), as nat44_ed.c keeps them
// (nat44_ed_add_fib_entry_reg / nat44_ed_del_fib_entry_reg), and follow
// the order of the configuration (docs/dev-guide/VPP-FORWARDING.md §2):
//
//   - a normal pool address, and the external address of a static or
//     identity mapping, is registered on every outside and output-feature
//     interface when it is added, and released when it is deleted (an
//     identity mapping when its last VRF goes);
//   - an interface that becomes outside or output-feature registers every
//     normal pool address and every mapping's external address,
//     load-balanced ones included, and releases the same when it stops;
//   - adding or deleting a load-balanced mapping registers and releases
//     nothing.
//
// So a load-balanced external address (a ClusterIP) is local in the FIB
// of an outside interface configured after the mapping, and stays so
// after the mapping is deleted, until that interface stops being outside.
// The entry is in the FIB of the interface's VRF.

// natFibKey is one registration: an address on an interface.
type natFibKey struct {
	addr netip.Addr
	sw   uint32
}

// natFibReg adds (or, with add false, releases) one reference.
func (n *natState) natFibReg(k natFibKey, add bool) {
	if n.fibReg == nil {
		n.fibReg = map[natFibKey]int{}
	}
	if add {
		n.fibReg[k]++
		return
	}
	if c := n.fibReg[k]; c > 1 {
		n.fibReg[k] = c - 1
	} else {
		delete(n.fibReg, k)
	}
}

// natFibRegAddr is nat44_ed_add_del_interface_fib_reg_entries: addr on
// every outside and output-feature interface.
func (st *state) natFibRegAddr(addr netip.Addr, add bool) {
	n := &st.nat
	if !addr.IsValid() {
		return
	}
	for sw, ni := range n.ifaces {
		if ni.flags&natOutside != 0 {
			n.natFibReg(natFibKey{addr, sw}, add)
		}
	}
	for _, sw := range n.outputIfs {
		n.natFibReg(natFibKey{addr, sw}, add)
	}
}

// natFibRegIface is nat44_ed_add_del_nat_addr_fib_reg_entries and
// nat44_ed_add_del_sm_fib_reg_entries for interface sw: every normal pool
// address and every mapping's external address.
func (st *state) natFibRegIface(sw uint32, add bool) {
	n := &st.nat
	for _, a := range n.addrs {
		if !a.twice {
			n.natFibReg(natFibKey{a.addr, sw}, add)
		}
	}
	for _, m := range n.mappings {
		if a := st.mappingExtAddr(m); a.IsValid() {
			n.natFibReg(natFibKey{a, sw}, add)
		}
	}
}

// natLocalAddrs are the addresses NAT44-ED makes local in a VRF: those
// registered on an interface of that VRF.
func (st *state) natLocalAddrs(vrf uint32) []netip.Addr {
	n := &st.nat
	if !n.enabled {
		return nil
	}
	var out []netip.Addr
	for k := range n.fibReg {
		if i := st.ifaces[k.sw]; i != nil && i.vrf[0] == vrf {
			out = append(out, k.addr)
		}
	}
	return out
}
