package vpp_cnat

import "net/netip"

// endpointForm is an endpoint in canonical form, as a comparable value: an interface
// with its family, or an address made canonical (the zero address is none; one that
// does not parse stays as written, in raw), and the port. The zero value is the
// empty (or absent) endpoint.
type endpointForm struct {
	iface  string
	family AddressFamily
	addr   netip.Addr
	raw    string
	port   uint32
}

// formOf returns e's endpointForm; it does not allocate.
func formOf(e *Endpoint) endpointForm {
	if e.GetInterface() != "" {
		return endpointForm{port: e.GetPort(), iface: e.GetInterface(), family: e.GetInterfaceFamily()}
	}
	return addressForm(e.GetAddress(), e.GetPort())
}

// addressForm is the canonical form of an address and port.
func addressForm(address string, port uint32) endpointForm {
	f := endpointForm{port: port}
	if address != "" {
		a, ok := ParseAddr(address)
		switch {
		case !ok:
			f.raw = address
		case !a.IsUnspecified():
			f.addr = a
		}
	}
	return f
}

// vipForm is the canonical form of a translation's VIP.
func vipForm(t *Translation) endpointForm { return addressForm(t.GetVipAddress(), t.GetVipPort()) }

// Comparer tells whether two translations are the same in canonical form (endpoints
// compared in canonical form: an address in any spelling, a zero address as none), field by field and without allocating: a descriptor or
// a renderer compares every translation it changes. The translations of a node port
// share one slice of paths (in an old set and in the new one): the comparison of the
// last two slices of paths compared is remembered, so that a set with a hundred node
// IPs has its paths compared once. The zero value is ready; not for concurrent use.
type Comparer struct {
	lastA, lastB []*Path
	lastSame     bool
}

// Same tells whether a and b are the same translation in canonical form.
func (c *Comparer) Same(a, b *Translation) bool {
	if a == b {
		return true
	}
	if vipForm(a) != vipForm(b) || a.GetProtocol() != b.GetProtocol() ||
		a.GetIsRealIp() != b.GetIsRealIp() || a.GetAllocPort() != b.GetAllocPort() ||
		a.GetNoReturnSession() != b.GetNoReturnSession() || a.GetLbType() != b.GetLbType() ||
		a.GetFlowHashConfig() != b.GetFlowHashConfig() || len(a.GetPaths()) != len(b.GetPaths()) {
		return false
	}
	pa, pb := a.GetPaths(), b.GetPaths()
	if len(pa) == 0 || &pa[0] == &pb[0] {
		return true
	}
	if len(c.lastA) == len(pa) && &c.lastA[0] == &pa[0] && &c.lastB[0] == &pb[0] {
		return c.lastSame
	}
	same := true
	for i, p := range pa {
		q := pb[i]
		if p != q && (formOf(p.GetDst()) != formOf(q.GetDst()) || formOf(p.GetSrc()) != formOf(q.GetSrc())) {
			same = false
			break
		}
	}
	c.lastA, c.lastB, c.lastSame = pa, pb, same
	return same
}
