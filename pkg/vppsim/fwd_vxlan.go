package vppsim

// vxlan4-input and vxlan4-encap (docs/dev-guide/VPP-FORWARDING.md §5).

// vxlanPortRegistered tells whether a VXLAN tunnel registered the UDP
// port.
func (st *state) vxlanPortRegistered(port uint16) bool {
	if len(st.vxlanKeys) == 0 {
		return false
	}
	for k := range st.vxlanKeys {
		if k.dstPort == port || (k.dstPort == 0 && port == vxlanPort) {
			return true
		}
	}
	return false
}

// vxlanDecap matches the tunnel exactly and bridges the inner frame on
// the tunnel port.
func (st *state) vxlanDecap(p *pkt) {
	st.visit(nodeVxlan4Input)
	h := p.ip()
	l4 := ip4L4(h)
	if len(l4) < udpHdrLen+vxlanHdrLen+ethHdrLen {
		st.drop(p, "vxlan4-input", "packet too short")
		return
	}
	vx := l4[udpHdrLen:]
	if vx[0] != 0x08 {
		st.drop(p, "vxlan4-input", "invalid VXLAN flags")
		return
	}
	vni := uint32(vx[4])<<16 | uint32(vx[5])<<8 | uint32(vx[6])
	if vx[7] != 0 {
		st.drop(p, "vxlan4-input", "no such tunnel packets")
		return
	}
	key := vxlanKey{src: addr4(ip4Dst(h)), dst: addr4(ip4Src(h)), vni: vni, encapVRF: p.vrf, dstPort: be16(l4[2:4])}
	sw, ok := st.vxlanKeys[key]
	if !ok && key.dstPort == vxlanPort {
		key.dstPort = 0
		sw, ok = st.vxlanKeys[key]
	}
	if !ok {
		st.drop(p, "vxlan4-input", "no such tunnel packets")
		return
	}
	t := st.ifaces[sw]
	if t == nil || t.l2 == nil || !t.adminUp || t.vxlan.decapNext == 0 {
		st.drop(p, "vxlan4-input", "tunnel not in a bridge domain")
		return
	}
	if p.tr != nil {
		st.tracef(p, "vxlan4-input", "VXLAN decap from %s vni %d on %s", key.dst, vni, t.name)
	}
	t.ctr.rxPkts++
	inner := p.l3 + ip4IHL(h) + udpHdrLen + vxlanHdrLen
	p.off = inner
	p.rx = t.idx
	p.shg = t.l2.shg
	t.ctr.rxBytes += uint64(p.length())
	st.statsRx(t.idx, p.length())
	st.l2Input(p, t)
}

// vxlanEncap wraps a bridged frame and routes it to the tunnel's peer in
// the encap VRF, straight to ip4-rewrite (no ip4-unicast features; the
// egress output features run).
func (st *state) vxlanEncap(p *pkt, t *iface) {
	st.visit(nodeVxlan4Encap)
	if !t.adminUp {
		st.drop(p, "vxlan4-encap", "interface is down")
		return
	}
	v := t.vxlan
	inner := p.frame()
	innerLen := len(inner)
	hash := uint32(0)
	if et := be16(inner[12:14]); et == etherTypeIP4 && innerLen >= ethHdrLen+ip4HdrLen {
		hash = flowHash(inner[ethHdrLen:])
	} else if et == etherTypeIP6 && innerLen >= ethHdrLen+ip6HdrLen {
		hash = flowHash6(inner[ethHdrLen:])
	} else {
		for _, b := range inner[:12] {
			hash = hash*31 + uint32(b)
		}
	}
	t.ctr.txPkts++
	t.ctr.txBytes += uint64(innerLen)
	st.statsTx(t.idx, innerLen)
	p.l3 = p.off - vxlanEncapSz
	p.off = p.l3
	o := p.buf[p.l3 : p.l3+vxlanEncapSz]
	clear(o)
	o[0] = 0x45
	put16(o[2:4], uint16(vxlanEncapSz+innerLen))
	o[8] = 254
	o[9] = protoUDP
	s4, d4 := v.src.As4(), v.dst.As4()
	copy(o[12:16], s4[:])
	copy(o[16:20], d4[:])
	ip4SetChecksum(o[:ip4HdrLen])
	u := o[ip4HdrLen:]
	put16(u[0:2], uint16(hash)|0xc000)
	dport := v.dstPort
	if dport == 0 {
		dport = vxlanPort
	}
	put16(u[2:4], dport)
	put16(u[4:6], uint16(udpHdrLen+vxlanHdrLen+innerLen))
	x := u[udpHdrLen:]
	x[0] = 0x08
	x[4], x[5], x[6] = byte(v.vni>>16), byte(v.vni>>8), byte(v.vni)
	if p.tr != nil {
		st.tracef(p, "vxlan4-encap", "VXLAN encap to %s vni %d", v.dst, v.vni)
	}
	p.vrf = v.encapVRF
	p.localOrig = false
	p.shg = 0
	st.ip4Lookup(p)
}
