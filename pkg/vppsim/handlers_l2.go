package vppsim

import (
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
)

func registerL2(r *registry) {
	on(r, hBridgeDomainAddDel)
	on(r, hBridgeDomainAddDelV2)
	on(r, hBridgeDomainDump)
	on(r, hSwInterfaceSetL2Bridge)
	on(r, hL2fibAddDel)
	on(r, hL2FibTableDump)
	on(r, hBridgeFlags)
}

// hBridgeFlags sets or clears bridge-domain feature flags; the reply
// carries the resulting flags. A missing bridge domain is NO_SUCH_ENTRY.
func hBridgeFlags(cl *call, m *l2.BridgeFlags) {
	rep := &l2.BridgeFlagsReply{}
	bd := cl.st.bds[m.BdID]
	if bd == nil {
		rep.Retval = retvalNoSuchEntry
		cl.send(rep)
		return
	}
	for _, f := range []struct {
		bit l2.BdFlags
		v   *bool
	}{{l2.BRIDGE_API_FLAG_LEARN, &bd.learn}, {l2.BRIDGE_API_FLAG_FWD, &bd.forward}, {l2.BRIDGE_API_FLAG_FLOOD, &bd.flood},
		{l2.BRIDGE_API_FLAG_UU_FLOOD, &bd.uuFlood}, {l2.BRIDGE_API_FLAG_ARP_TERM, &bd.arpTerm}, {l2.BRIDGE_API_FLAG_ARP_UFWD, &bd.arpUf}} {
		if m.Flags&f.bit != 0 {
			*f.v = m.IsSet
		}
		if *f.v {
			rep.ResultingFeatureBitmap |= uint32(f.bit)
		}
	}
	cl.send(rep)
}

// bdIDMax is L2_BD_ID_MAX: bridge domain IDs are 24-bit.
const bdIDMax = 1<<24 - 1

type bdArgs struct {
	id                                             uint32
	flood, uuFlood, forward, learn, arpTerm, arpUf bool
	macAge                                         uint8
	tag                                            string
}

func hBridgeDomainAddDel(cl *call, m *l2.BridgeDomainAddDel) {
	a := bdArgs{m.BdID, m.Flood, m.UuFlood, m.Forward, m.Learn, m.ArpTerm, m.ArpUfwd, m.MacAge, m.BdTag}
	rv, _ := cl.st.bdAddDel(a, m.IsAdd, false)
	cl.send(&l2.BridgeDomainAddDelReply{Retval: rv})
}

// hBridgeDomainAddDelV2 is bridge_domain_add_del that allocates the lowest
// free ID when bd_id is ~0 and returns it.
func hBridgeDomainAddDelV2(cl *call, m *l2.BridgeDomainAddDelV2) {
	a := bdArgs{m.BdID, m.Flood, m.UuFlood, m.Forward, m.Learn, m.ArpTerm, m.ArpUfwd, m.MacAge, m.BdTag}
	rv, id := cl.st.bdAddDel(a, m.IsAdd, true)
	cl.send(&l2.BridgeDomainAddDelV2Reply{Retval: rv, BdID: id})
}

// bdAddDel follows VPP's bd_add_del: bridge domain 0 is the built-in
// default one and cannot be changed, an existing ID cannot be added again,
// and a bridge domain with members cannot be deleted.
func (st *state) bdAddDel(a bdArgs, isAdd, allocate bool) (int32, uint32) {
	id := a.id
	if isAdd && allocate && id == noIndex {
		id = 1
		for st.bds[id] != nil {
			id++
		}
	}
	if !isAdd {
		bd := st.bds[id]
		switch {
		case id == 0:
			return retvalBDNotModifiable, id
		case bd == nil:
			return retvalNoSuchEntry, id
		case len(bd.members) > 0:
			return retvalBDInUse, id
		}
		for k := range st.l2fib {
			if k.bd == id {
				delete(st.l2fib, k)
			}
		}
		delete(st.bds, id)
		return retvalOK, id
	}
	switch {
	case id == 0:
		return retvalBDNotModifiable, id
	case st.bds[id] != nil:
		return retvalBDAlreadyExists, id
	case id > bdIDMax:
		return retvalBDIDExceedMax, id
	}
	st.bds[id] = &bridgeDomain{id: id, flood: a.flood, uuFlood: a.uuFlood, forward: a.forward, learn: a.learn,
		arpTerm: a.arpTerm, arpUf: a.arpUf, macAge: a.macAge, tag: truncTag(a.tag), bvi: noIndex, uuFwd: noIndex}
	return retvalOK, id
}

// hBridgeDomainDump dumps all bridge domains (bd_id ~0), one (bd_id), or
// the one an interface is in (sw_if_index other than ~0). bd_id 0 dumps
// nothing, as in VPP.
func hBridgeDomainDump(cl *call, m *l2.BridgeDomainDump) {
	st := cl.st
	if m.BdID == 0 {
		return
	}
	var list []*bridgeDomain
	switch {
	case uint32(m.SwIfIndex) != noIndex:
		if i := st.iface(m.SwIfIndex); i != nil && i.l2 != nil {
			list = append(list, st.bds[i.l2.bd])
		}
	case m.BdID == noIndex:
		for _, bd := range st.bds {
			list = append(list, bd)
		}
		sort.Slice(list, func(a, b int) bool { return list[a].id < list[b].id })
	default:
		if bd := st.bds[m.BdID]; bd != nil {
			list = append(list, bd)
		}
	}
	for _, bd := range list {
		d := &l2.BridgeDomainDetails{
			BdID: bd.id, Flood: bd.flood, UuFlood: bd.uuFlood, Forward: bd.forward, Learn: bd.learn,
			ArpTerm: bd.arpTerm, ArpUfwd: bd.arpUf, MacAge: bd.macAge, BdTag: bd.tag,
			BviSwIfIndex: interface_types.InterfaceIndex(bd.bvi), UuFwdSwIfIndex: interface_types.InterfaceIndex(bd.uuFwd),
			NSwIfs: uint32(len(bd.members)),
		}
		for _, sw := range bd.members {
			d.SwIfDetails = append(d.SwIfDetails, l2.BridgeDomainSwIf{SwIfIndex: interface_types.InterfaceIndex(sw), Shg: st.ifaces[sw].l2.shg})
		}
		cl.send(d)
	}
}

func hSwInterfaceSetL2Bridge(cl *call, m *l2.SwInterfaceSetL2Bridge) {
	cl.send(&l2.SwInterfaceSetL2BridgeReply{Retval: cl.st.setL2Bridge(m)})
}

// setL2Bridge puts an interface into a bridge domain (creating the bridge
// domain with VPP's defaults if it does not exist, as VPP does) or back to
// L3 mode. A bridge domain has at most one BVI, which must be an Ethernet
// interface; the BVI's MAC gets a static BVI entry in the L2 FIB.
func (st *state) setL2Bridge(m *l2.SwInterfaceSetL2Bridge) int32 {
	i := st.iface(m.RxSwIfIndex)
	if i == nil {
		return retvalInvalidSwIfIndex
	}
	if !m.Enable {
		if i.l2 != nil {
			st.removeFromBD(i)
		}
		return retvalOK
	}
	if m.BdID > bdIDMax {
		return retvalBDIDExceedMax
	}
	if m.BdID == 0 {
		return retvalBDNotModifiable
	}
	if m.PortType > l2.L2_API_PORT_TYPE_UU_FWD {
		return retvalInvalidValue
	}
	bd := st.bds[m.BdID]
	if m.PortType == l2.L2_API_PORT_TYPE_BVI {
		if !i.kind.ethernet() {
			return retvalNonEthernet
		}
		if bd != nil && bd.bvi != noIndex && bd.bvi != i.idx {
			return retvalBDAlreadyHasBVI
		}
	}
	if bd == nil {
		bd = &bridgeDomain{id: m.BdID, flood: true, uuFlood: true, forward: true, learn: true, bvi: noIndex, uuFwd: noIndex}
		st.bds[m.BdID] = bd
	}
	if i.l2 != nil {
		st.removeFromBD(i)
	}
	i.l2 = &l2Port{bd: bd.id, shg: m.Shg, portType: m.PortType}
	switch m.PortType {
	case l2.L2_API_PORT_TYPE_BVI:
		bd.bvi = i.idx
		bd.members = append([]uint32{i.idx}, bd.members...)
		st.l2fib[l2fibKey{bd: bd.id, mac: i.mac}] = &l2fibEntry{sw: i.idx, static: true, bvi: true, seq: st.nextSeq()}
	case l2.L2_API_PORT_TYPE_UU_FWD:
		bd.uuFwd = i.idx
		bd.members = append(bd.members, i.idx)
	default:
		bd.members = append(bd.members, i.idx)
	}
	return retvalOK
}

// removeFromBD puts an interface back into L3 mode.
func (st *state) removeFromBD(i *iface) {
	bd := st.bds[i.l2.bd]
	if bd != nil {
		bd.members = slices.DeleteFunc(bd.members, func(sw uint32) bool { return sw == i.idx })
		if bd.bvi == i.idx {
			bd.bvi = noIndex
			for k, e := range st.l2fib {
				if k.bd == bd.id && e.sw == i.idx && e.bvi {
					delete(st.l2fib, k)
				}
			}
		}
		if bd.uuFwd == i.idx {
			bd.uuFwd = noIndex
		}
	}
	i.l2 = nil
}

// hL2fibAddDel adds or deletes a static L2 FIB entry. The bridge domain
// must exist and the interface must be in bridge mode; deleting a missing
// entry fails.
func hL2fibAddDel(cl *call, m *l2.L2fibAddDel) {
	st := cl.st
	rv := retvalOK
	key := l2fibKey{bd: m.BdID, mac: m.Mac}
	switch {
	case st.bds[m.BdID] == nil:
		rv = retvalNoSuchEntry
	case !m.IsAdd:
		if st.l2fib[key] == nil {
			rv = retvalNoSuchEntry
		} else {
			delete(st.l2fib, key)
		}
	case m.FilterMac:
		st.l2fib[key] = &l2fibEntry{sw: noIndex, filter: true, static: true, seq: st.nextSeq()}
	default:
		i := st.iface(m.SwIfIndex)
		if i == nil || i.l2 == nil {
			rv = retvalInvalidSwIfIndex
			break
		}
		e := st.l2fib[key]
		if e == nil {
			e = &l2fibEntry{seq: st.nextSeq()}
			st.l2fib[key] = e
		}
		e.sw, e.static, e.bvi, e.filter = i.idx, m.StaticMac, m.BviMac, false
	}
	cl.send(&l2.L2fibAddDelReply{Retval: rv})
}

// hL2FibTableDump dumps the L2 FIB of one bridge domain, or of all with
// bd_id ~0.
func hL2FibTableDump(cl *call, m *l2.L2FibTableDump) {
	st := cl.st
	if m.BdID != noIndex && st.bds[m.BdID] == nil {
		return
	}
	type item struct {
		k l2fibKey
		e *l2fibEntry
	}
	var list []item
	for k, e := range st.l2fib {
		if m.BdID == noIndex || k.bd == m.BdID {
			list = append(list, item{k, e})
		}
	}
	sort.Slice(list, func(a, b int) bool { return list[a].e.seq < list[b].e.seq })
	for _, it := range list {
		cl.send(&l2.L2FibTableDetails{
			BdID: it.k.bd, Mac: it.k.mac, SwIfIndex: interface_types.InterfaceIndex(it.e.sw),
			StaticMac: it.e.static, FilterMac: it.e.filter, BviMac: it.e.bvi,
		})
	}
}
