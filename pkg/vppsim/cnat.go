package vppsim

// The cnat plugin (VPP 25.10 plugins/cnat, the service NAT Calico-VPP renders
// Services with; spec vpp-ip6-cnat-stn-stats.md §2): translations, their VIP
// clients in FIB table 0 and the API that manages them. Sessions are in
// cnat_sess.go, source NAT policy in cnat_snat.go, the feature switch in
// feature.go, the data-plane nodes in fwd_cnat*.go.

import (
	"net/netip"
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
)

// cnat translation flags as VPP keeps them (cnat_translation.h): the API's
// ALLOC_PORT and NO_RETURN_SESSION, and EXCLUSIVE, which is not in the API:
// the update handler sets it when is_real_ip is 0 (cnat_api.c).
// cnatTrkFlagNoNAT is CNAT_TRK_FLAG_NO_NAT (cnat_types.h), the path flag
// cnat-input honours. VPP stores a path's API flags raw as its tracker
// flags (cnat_translation_update: ct_flags = ep_flags), so this is the API
// value 2; the API's CNAT_EPT_NO_NAT (1) lands on CNAT_TRK_ACTIVE, which
// VPP recomputes, and has no effect.
const cnatTrkFlagNoNAT = uint8(1 << 1)

const (
	cnatFlagAllocPort       = uint8(cnat.CNAT_TRANSLATION_ALLOC_PORT)
	cnatFlagExclusive       = uint8(0x2)
	cnatFlagNoReturnSession = uint8(cnat.CNAT_TRANSLATION_NO_RETURN_SESSION)
)

// cnatDefaultFHC is IP_FLOW_HASH_DEFAULT (0x9F: src, dst, proto, ports,
// symmetric... as ip_flow_hash_config_v2 bits), used when a translation's
// flow_hash_config is 0.
const cnatDefaultFHC = uint32(0x9f)

// cnatEP is a cnat endpoint: an address, or the first address of family af of
// an interface (sw != noIndex), and a port.
type cnatEP struct {
	addr netip.Addr // the literal address (sw == noIndex)
	sw   uint32
	v6   bool // the family: if_af for an interface endpoint, addr's otherwise
	port uint16
}

// cnatPath is one backend of a translation: the source rewrite (src) and the
// destination (dst).
type cnatPath struct {
	src, dst cnatEP
	flags    uint8
}

// cnatTrKey is a translation's identity (cnat_add_translation_to_db): the VIP,
// the VIP port and the protocol. A VIP taken from an interface is keyed by the
// interface and family (addr invalid).
type cnatTrKey struct {
	addr  netip.Addr
	sw    uint32
	v6    bool
	port  uint16
	proto uint8
}

// cnatTr is one translation.
type cnatTr struct {
	id     uint32
	key    cnatTrKey
	vip    cnatEP
	proto  uint8
	flags  uint8
	lbType cnat.CnatLbType
	fhc    uint32 // as given; 0 means cnatDefaultFHC
	paths  []cnatPath
	client *cnatClient // nil for a VIP taken from an interface
	// lb is the load-balance state built from the active paths, valid for
	// configuration generation lbGen (fwd_cnat_lb.go).
	lb    []int
	lbGen uint64
	mag   []int
}

// cnatClient is a /32 or /128 cnat owns in FIB table 0 (cnat_client.c): made
// by the first translation of a VIP (exclusive when that translation is not
// is_real_ip) or learned for the target of a return session (interposed).
// Its flags are those of its creation. It goes when no translation and no
// session refers to it.
type cnatClient struct {
	addr      netip.Addr
	exclusive bool
	trRefs    int
	sessRefs  int
}

// cnatState is the cnat plugin's state. The zero value is VPP's start state.
type cnatState struct {
	// trs is the pool of translations, by id (nil: a free id), as VPP keeps them.
	trs    []*cnatTr
	byKey  map[cnatTrKey]*cnatTr
	freeID []uint32 // freed ids, reused last-freed first (pool_get)
	nextID uint32
	// clients by address.
	clients map[netip.Addr]*cnatClient
	sess    cnatSessions // cnat_sess.go
	snat    cnatSNAT     // cnat_snat.go
	// feats counts the enables of each cnat feature per interface
	// (feature.go); keyed by the interface, so that a new interface
	// reusing a deleted one's index starts without features.
	feats map[cnatFeatKey]int
	stats cnatStats // stats_cnat.go
	// lastAPIPaths are the paths of the last translation decoded and lastPaths
	// their decoded form, shared by the next translation that has the same (a
	// node port's translations on every node IP do): decoded paths are never
	// modified. Memory only, not behaviour: VPP decodes each request's paths.
	lastAPIPaths []cnat.CnatEndpointTuple
	lastPaths    []cnatPath
}

func registerCNAT(r *registry) {
	on(r, hCnatTranslationUpdate)
	on(r, hCnatTranslationDel)
	on(r, hCnatTranslationDump)
	on(r, hCnatSessionDump)
	on(r, hCnatSessionPurge)
	on(r, hCnatSetSnatAddresses)
	on(r, hCnatGetSnatAddresses)
	on(r, hCnatSnatPolicyAddDelExcludePfx)
	on(r, hCnatSnatPolicyAddDelIf)
	on(r, hCnatSetSnatPolicy)
	on(r, hFeatureEnableDisable)
	on(r, hFeatureIsEnabled)
}

// cnatEPFromAPI decodes an endpoint as cnat_endpoint_decode does: with
// sw_if_index ~0 the address (its family must be valid), otherwise the
// interface and if_af. VPP does not check that the interface exists: an
// endpoint of a missing interface is simply never resolved.
func cnatEPFromAPI(e cnat.CnatEndpoint) (cnatEP, bool) {
	ep := cnatEP{sw: uint32(e.SwIfIndex), port: e.Port}
	if ep.sw == noIndex {
		a, ok := addrFromAPI(e.Addr)
		ep.addr, ep.v6 = a, a.Is6()
		return ep, ok
	}
	switch e.IfAf {
	case ip_types.ADDRESS_IP4:
	case ip_types.ADDRESS_IP6:
		ep.v6 = true
	default:
		return ep, false
	}
	return ep, true
}

// cnatEPToAPI encodes an endpoint as cnat_endpoint_encode does: address 0
// (of the endpoint's family) while unresolved.
func (st *state) cnatEPToAPI(ep cnatEP) cnat.CnatEndpoint {
	out := cnat.CnatEndpoint{SwIfIndex: interface_types.InterfaceIndex(ep.sw), Port: ep.port, IfAf: ip_types.ADDRESS_IP4}
	if ep.v6 {
		out.IfAf = ip_types.ADDRESS_IP6
	}
	if a, ok := st.cnatResolve(ep); ok {
		out.Addr = addrToAPI(a)
	}
	return out
}

// cnatResolve returns an endpoint's address: the literal one, or the first
// address of its family on its interface (cnat_resolve_addr), false while
// there is none. Interface endpoints are resolved when used, so they follow
// the interface's addresses as VPP's address callbacks make them do.
func (st *state) cnatResolve(ep cnatEP) (netip.Addr, bool) {
	if ep.sw == noIndex {
		return ep.addr, true
	}
	i := st.ifaces[ep.sw]
	if i == nil {
		return netip.Addr{}, false
	}
	for _, p := range i.addrs {
		if p.Addr().Is6() == ep.v6 {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// cnatValidProto tells whether ip_proto_decode accepts p: the protocols
// vnet/ip/protocols.def lists (all of 0..143 except 61, 63, 68, 99 and 114,
// and 253..255); the others are VNET_API_ERROR_INVALID_PROTOCOL.
func cnatValidProto(p uint8) bool {
	switch {
	case p == 61 || p == 63 || p == 68 || p == 99 || p == 114:
		return false
	case p <= 143 || p >= 253:
		return true
	}
	return false
}

// hCnatTranslationUpdate adds a translation, or changes the one with the same
// (VIP, port, protocol) in place, keeping its id (cnat_translation_update):
// the request's id is ignored, flags are overwritten and paths replaced, but
// lb_type and flow_hash_config keep the values of the creation, as VPP sets
// them only on a new translation. A failure replies id ~0 (VPP's initial id).
func hCnatTranslationUpdate(cl *call, m *cnat.CnatTranslationUpdate) {
	rep := &cnat.CnatTranslationUpdateReply{ID: noIndex}
	t := &m.Translation
	id, rv := cl.st.cnatUpdate(t)
	rep.Retval, rep.ID = rv, id
	cl.send(rep)
}

func (st *state) cnatUpdate(t *cnat.CnatTranslation) (uint32, int32) {
	if len(t.Paths) == 0 {
		// VPP 25.10 sizes its path vector with vec_validate(paths,
		// n_paths - 1): with n_paths 0 that asks for 2^32 entries and
		// VPP aborts out of memory. The simulator refuses instead.
		return noIndex, retvalInvalidValue
	}
	if !cnatValidProto(uint8(t.IPProto)) {
		return noIndex, retvalInvalidProtocol
	}
	// VPP decodes the paths before the VIP and stops at the first bad one:
	// an endpoint's bad address family is VNET_API_ERROR_INVALID_ADDRESS_FAMILY.
	c := &st.cnat
	paths := c.lastPaths
	if !slices.Equal(t.Paths, c.lastAPIPaths) {
		paths = make([]cnatPath, 0, len(t.Paths))
		for _, p := range t.Paths {
			src, ok1 := cnatEPFromAPI(p.SrcEp)
			dst, ok2 := cnatEPFromAPI(p.DstEp)
			if !ok1 || !ok2 {
				return noIndex, retvalInvalidAddressFamily
			}
			paths = append(paths, cnatPath{src: src, dst: dst, flags: p.Flags})
		}
		c.lastAPIPaths, c.lastPaths = slices.Clone(t.Paths), paths // (the request may be reused)
	}
	vip, ok := cnatEPFromAPI(t.Vip)
	if !ok {
		return noIndex, retvalInvalidAddressFamily
	}
	flags := t.Flags
	if t.IsRealIP == 0 {
		flags |= cnatFlagExclusive
	}
	key := cnatTrKey{addr: vip.addr, sw: vip.sw, v6: vip.v6, port: vip.port, proto: uint8(t.IPProto)}
	tr := c.byKey[key]
	if tr == nil {
		tr = &cnatTr{key: key, vip: vip, proto: key.proto, lbType: t.LbType, fhc: uint32(t.FlowHashConfig)}
		if n := len(c.freeID); n > 0 {
			tr.id, c.freeID = c.freeID[n-1], c.freeID[:n-1]
		} else {
			tr.id = c.nextID
			c.nextID++
		}
		if c.byKey == nil {
			c.byKey = map[cnatTrKey]*cnatTr{}
		}
		if int(tr.id) >= len(c.trs) {
			c.trs = append(c.trs, make([]*cnatTr, int(tr.id)+1-len(c.trs))...)
		}
		c.trs[tr.id] = tr
		c.byKey[key] = tr
		if vip.sw == noIndex {
			tr.client = c.clientAdd(vip.addr, flags&cnatFlagExclusive != 0)
			tr.client.trRefs++
		}
		st.cnatCounterReset(tr.id)
	}
	tr.flags = flags
	tr.paths = paths
	tr.lb, tr.mag, tr.lbGen = nil, nil, 0
	return tr.id, retvalOK
}

// clientAdd returns the client of addr, made with the given flag if there
// is none yet (cnat_client_add: an existing client keeps its flags).
func (c *cnatState) clientAdd(addr netip.Addr, exclusive bool) *cnatClient {
	cc := c.clients[addr]
	if cc == nil {
		if c.clients == nil {
			c.clients = map[netip.Addr]*cnatClient{}
		}
		cc = &cnatClient{addr: addr, exclusive: exclusive}
		c.clients[addr] = cc
	}
	return cc
}

// clientRelease removes cc once nothing refers to it.
func (c *cnatState) clientRelease(cc *cnatClient) {
	if cc.trRefs == 0 && cc.sessRefs == 0 && c.clients[cc.addr] == cc {
		delete(c.clients, cc.addr)
	}
}

// hCnatTranslationDel deletes a translation by id; an unknown id is
// NO_SUCH_ENTRY (cnat_translation_delete). Its sessions stay until they
// expire, as in VPP (they hold the rewrite, not the translation).
func hCnatTranslationDel(cl *call, m *cnat.CnatTranslationDel) {
	rep := &cnat.CnatTranslationDelReply{}
	if !cl.st.cnatDelete(m.ID) {
		rep.Retval = retvalNoSuchEntry
	}
	cl.send(rep)
}

func (st *state) cnatDelete(id uint32) bool {
	c := &st.cnat
	if int(id) >= len(c.trs) || c.trs[id] == nil {
		return false
	}
	tr := c.trs[id]
	c.trs[id] = nil
	delete(c.byKey, tr.key)
	c.freeID = append(c.freeID, id)
	if tr.client != nil {
		tr.client.trRefs--
		c.clientRelease(tr.client)
	}
	return true
}

// sortedTrs returns the translations in id (pool) order.
func (c *cnatState) sortedTrs() []*cnatTr {
	out := make([]*cnatTr, 0, len(c.byKey))
	for _, tr := range c.trs {
		if tr != nil {
			out = append(out, tr)
		}
	}
	return out
}

// sortedValues returns the values of m ordered by key(v), which must be
// unique: the pool or creation order VPP walks in.
func sortedValues[K comparable, V any](m map[K]V, key func(V) uint64) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(a, b int) bool { return key(out[a]) < key(out[b]) })
	return out
}

// hCnatTranslationDump lists the translations in id order as
// cnat_translation_send_details fills them: vip, id, ip_proto, lb_type and
// the paths (unresolved endpoints with address 0); is_real_ip, flags and
// flow_hash_config are not filled and read 0.
func hCnatTranslationDump(cl *call, _ *cnat.CnatTranslationDump) {
	st := cl.st
	for _, tr := range st.cnat.sortedTrs() {
		d := &cnat.CnatTranslationDetails{Translation: cnat.CnatTranslation{
			Vip:     st.cnatEPToAPI(tr.vip),
			ID:      tr.id,
			IPProto: ip_types.IPProto(tr.proto),
			LbType:  tr.lbType,
			NPaths:  uint32(len(tr.paths)),
		}}
		for _, p := range tr.paths {
			d.Translation.Paths = append(d.Translation.Paths, cnat.CnatEndpointTuple{
				DstEp: st.cnatEPToAPI(p.dst), SrcEp: st.cnatEPToAPI(p.src), Flags: p.flags,
			})
		}
		cl.send(d)
	}
}

// hCnatSessionPurge deletes every session and every translation
// (cnat_session_purge, then cnat_translation_purge). The reply is always 0.
func hCnatSessionPurge(cl *call, _ *cnat.CnatSessionPurge) {
	st := cl.st
	st.cnat.sess.purge(&st.cnat)
	for _, tr := range st.cnat.sortedTrs() {
		st.cnatDelete(tr.id)
	}
	cl.send(&cnat.CnatSessionPurgeReply{})
}
