package natplugin

import (
	"fmt"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
)

// request is one request of a batch: the add or delete of mapping m, or (isLocal) the
// add or removal of one local of LB mapping m. What it does is kept as data, and
// described (what) only when it fails: no closure per request.
type request struct {
	req     govppapi.Message
	reply   govppapi.Message
	m       *mapping
	isAdd   bool
	isLocal bool
	local   local
}

// what names the request in errors, e.g. "add static mapping 10.96.0.1:80/TCP ->
// 10.1.1.2:8080".
func (r *request) what() string {
	m := r.m
	switch {
	case r.isLocal:
		op := "remove"
		if r.isAdd {
			op = "add"
		}
		l := r.local
		return fmt.Sprintf("%s local %s:%d (VRF %d) of load-balancing mapping %s", op, l.ip, l.port, l.vrf, m.ext())
	}
	op := "delete"
	if r.isAdd {
		op = "add"
	}
	switch m.kind {
	case kindStatic:
		return fmt.Sprintf("%s static mapping %s -> %s:%d", op, m.ext(), m.locals[0].ip, m.locals[0].port)
	case kindLB:
		return fmt.Sprintf("%s load-balancing mapping %s (%d locals)", op, m.ext(), len(m.locals))
	}
	return fmt.Sprintf("%s identity mapping %s in VRF %d", op, m.ext(), m.vrf)
}

// resolver finds the sw_if_index of an interface for a request.
type resolver func(name, what string) (uint32, error)

// flags returns the VPP flags of a static or LB mapping: always out2in-only
// (DNAT: the mapping does not translate connections the local opens).
func (m *mapping) flags() nat_types.NatConfigFlags {
	f := nat_types.NAT_IS_OUT2IN_ONLY | m.twice
	if m.addrOnly() {
		f |= nat_types.NAT_IS_ADDR_ONLY
	}
	return f
}

// extSw resolves the external interface of request r of the mapping, ~0 for none.
func (m *mapping) extSw(resolve resolver, r *request) (interface_types.InterfaceIndex, error) {
	if m.extIf == "" {
		return interface_types.InterfaceIndex(noIndex), nil
	}
	sw, err := resolve(m.extIf, r.what())
	return interface_types.InterfaceIndex(sw), err
}

// request builds the add or delete request of the mapping, tagged with tag.
func (m *mapping) request(isAdd bool, tag string, resolve resolver) (request, error) {
	r := request{m: m, isAdd: isAdd}
	switch m.kind {
	case kindStatic:
		req := &nat44_ed.Nat44AddDelStaticMappingV2{}
		if err := m.fillStatic(req, &r, isAdd, tag, resolve); err != nil {
			return request{}, err
		}
		r.req, r.reply = req, &nat44_ed.Nat44AddDelStaticMappingV2Reply{}
	case kindLB:
		req := &nat44_ed.Nat44AddDelLbStaticMapping{}
		m.fillLB(req, isAdd, tag, lbLocals(m.locals))
		r.req, r.reply = req, &nat44_ed.Nat44AddDelLbStaticMappingReply{}
	default:
		sw, err := m.extSw(resolve, &r)
		if err != nil {
			return request{}, err
		}
		req := &nat44_ed.Nat44AddDelIdentityMapping{IsAdd: isAdd, Protocol: m.proto, Port: m.extPort,
			SwIfIndex: sw, VrfID: m.vrf, Tag: tag}
		if m.addrOnly() {
			req.Flags = nat_types.NAT_IS_ADDR_ONLY
		}
		if m.extIP.IsValid() {
			req.IPAddress = m.extIP.As4()
		}
		r.req, r.reply = req, &nat44_ed.Nat44AddDelIdentityMappingReply{}
	}
	return r, nil
}

// fillStatic fills the add or delete request of static mapping m (r: the request, named
// if its external interface cannot be resolved).
func (m *mapping) fillStatic(req *nat44_ed.Nat44AddDelStaticMappingV2, r *request, isAdd bool, tag string, resolve resolver) error {
	sw, err := m.extSw(resolve, r)
	if err != nil {
		return err
	}
	l := m.locals[0]
	*req = nat44_ed.Nat44AddDelStaticMappingV2{IsAdd: isAdd, Flags: m.flags(), LocalIPAddress: l.ip.As4(),
		Protocol: m.proto, LocalPort: l.port, ExternalPort: m.extPort, ExternalSwIfIndex: sw, VrfID: l.vrf, Tag: tag}
	if m.extIP.IsValid() {
		req.ExternalIPAddress = m.extIP.As4()
	}
	if m.pool.IsValid() {
		req.MatchPool, req.PoolIPAddress = true, m.pool.As4()
	}
	return nil
}

// fillLB fills the add or delete request of LB mapping m, with locals its locals in VPP's form.
func (m *mapping) fillLB(req *nat44_ed.Nat44AddDelLbStaticMapping, isAdd bool, tag string, locals []nat44_ed.Nat44LbAddrPort) {
	*req = nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: isAdd, Flags: m.flags(), ExternalAddr: m.extIP.As4(),
		ExternalPort: m.extPort, Protocol: m.proto, Affinity: m.affinity, Tag: tag,
		LocalNum: uint32(len(locals)), Locals: locals}
}

// lbLocals returns the locals in VPP's form.
func lbLocals(ls []local) []nat44_ed.Nat44LbAddrPort {
	out := make([]nat44_ed.Nat44LbAddrPort, len(ls))
	for i, l := range ls {
		out[i] = nat44_ed.Nat44LbAddrPort{Addr: l.ip.As4(), Port: l.port, Probability: l.prob, VrfID: l.vrf}
	}
	return out
}

// requestBuilder builds the requests of one plan (tagged with tag), taking their
// messages and replies from blocks allocated for the whole plan (reserve, reserveLocals)
// instead of two allocations per request, and giving LB mappings that share their
// parsed locals one VPP list of them (requests are only read, when they are encoded).
type requestBuilder struct {
	tag     string
	resolve resolver

	statics      []nat44_ed.Nat44AddDelStaticMappingV2
	staticReps   []nat44_ed.Nat44AddDelStaticMappingV2Reply
	lbs          []nat44_ed.Nat44AddDelLbStaticMapping
	lbReps       []nat44_ed.Nat44AddDelLbStaticMappingReply
	localMsgs    []nat44_ed.Nat44LbStaticMappingAddDelLocal
	localReps    []nat44_ed.Nat44LbStaticMappingAddDelLocalReply
	lastLocals   []local                    // the parsed locals converted last
	lastLBLocals []nat44_ed.Nat44LbAddrPort // their VPP form
}

// reserve allocates the messages of st static and lb LB mappings added or deleted.
func (b *requestBuilder) reserve(st, lb int) {
	b.statics, b.staticReps = make([]nat44_ed.Nat44AddDelStaticMappingV2, st), make([]nat44_ed.Nat44AddDelStaticMappingV2Reply, st)
	b.lbs, b.lbReps = make([]nat44_ed.Nat44AddDelLbStaticMapping, lb), make([]nat44_ed.Nat44AddDelLbStaticMappingReply, lb)
}

// reserveLocals allocates the messages of n local adds and removals.
func (b *requestBuilder) reserveLocals(n int) {
	b.localMsgs, b.localReps = make([]nat44_ed.Nat44LbStaticMappingAddDelLocal, n), make([]nat44_ed.Nat44LbStaticMappingAddDelLocalReply, n)
}

// request builds the add or delete request of m (m.request, with the messages taken
// from the reserved blocks while they last).
func (b *requestBuilder) request(m *mapping, isAdd bool) (request, error) {
	switch {
	case m.kind == kindStatic && len(b.statics) > 0:
		r := request{m: m, isAdd: isAdd, req: &b.statics[0], reply: &b.staticReps[0]}
		b.statics, b.staticReps = b.statics[1:], b.staticReps[1:]
		return r, m.fillStatic(r.req.(*nat44_ed.Nat44AddDelStaticMappingV2), &r, isAdd, b.tag, b.resolve)
	case m.kind == kindLB && len(b.lbs) > 0:
		if len(m.locals) == 0 || !sameSlice(m.locals, b.lastLocals) {
			b.lastLocals, b.lastLBLocals = m.locals, lbLocals(m.locals)
		}
		r := request{m: m, isAdd: isAdd, req: &b.lbs[0], reply: &b.lbReps[0]}
		b.lbs, b.lbReps = b.lbs[1:], b.lbReps[1:]
		m.fillLB(r.req.(*nat44_ed.Nat44AddDelLbStaticMapping), isAdd, b.tag, b.lastLBLocals)
		return r, nil
	}
	return m.request(isAdd, b.tag, b.resolve)
}

// localRequest is m.localRequest with the messages taken from the reserved blocks
// while they last.
func (b *requestBuilder) localRequest(m *mapping, isAdd bool, l local) request {
	if len(b.localMsgs) == 0 {
		return m.localRequest(isAdd, l)
	}
	req, reply := &b.localMsgs[0], &b.localReps[0]
	b.localMsgs, b.localReps = b.localMsgs[1:], b.localReps[1:]
	m.fillLocal(req, isAdd, l)
	return request{req: req, reply: reply, m: m, isAdd: isAdd, isLocal: true, local: l}
}

// localRequest builds the request adding or removing one local of an LB
// mapping.
func (m *mapping) localRequest(isAdd bool, l local) request {
	req := &nat44_ed.Nat44LbStaticMappingAddDelLocal{}
	m.fillLocal(req, isAdd, l)
	return request{req: req, reply: &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{}, m: m, isAdd: isAdd, isLocal: true, local: l}
}

// fillLocal fills the request adding or removing local l of LB mapping m.
func (m *mapping) fillLocal(req *nat44_ed.Nat44LbStaticMappingAddDelLocal, isAdd bool, l local) {
	*req = nat44_ed.Nat44LbStaticMappingAddDelLocal{IsAdd: isAdd, ExternalAddr: m.extIP.As4(), ExternalPort: m.extPort,
		Protocol: m.proto, Local: nat44_ed.Nat44LbAddrPort{Addr: l.ip.As4(), Port: l.port, Probability: l.prob, VrfID: l.vrf}}
}
