package vppsim

import (
	"go.fd.io/govpp/binapi/fib_types"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// ip4-input, the ip4-unicast feature arc, ip4-lookup, ip4-local and the
// ICMP VPP itself sends (docs/dev-guide/VPP-FORWARDING.md §1, §3, §8).

func (st *state) ip4Input(p *pkt, i *iface) {
	st.visit(nodeIP4Input)
	// ip4-input counts every packet it sees on the receiving interface
	// (ip4_input.c: VNET_INTERFACE_COUNTER_IP4), before its checks.
	st.statsIfSimple(statseg.IfIP4, i.idx)
	h := p.ip()
	switch {
	case len(h) < ip4HdrLen || h[0]>>4 != 4:
		st.drop(p, "ip4-input", "ip4 version != 4")
		return
	case ip4IHL(h) < ip4HdrLen || ip4IHL(h) > len(h):
		st.drop(p, "ip4-input", "ip4 IHL < 5")
		return
	case checksum(h[:ip4IHL(h)], 0) != 0:
		st.drop(p, "ip4-input", "bad ip4 checksum")
		return
	case ip4TotalLen(h) < ip4HdrLen || ip4TotalLen(h) > len(h):
		st.drop(p, "ip4-input", "ip4 length > l2 length")
		return
	case ip4FragOff(h) == 1:
		st.drop(p, "ip4-input", "ip4 fragment offset == 1")
		return
	}
	p.end = p.l3 + ip4TotalLen(h) // strip Ethernet padding
	h = p.ip()
	if p.tr != nil {
		st.tracef(p, "ip4-input", "%s: %s -> %s ttl %d len %d on %s", protoName(ip4Proto(h)), addr4(ip4Src(h)), addr4(ip4Dst(h)), ip4TTL(h), ip4TotalLen(h), i.name)
	}
	if !st.ip4Enabled(i) {
		st.drop(p, "ip4-not-enabled", "ip4 not enabled on the interface")
		return
	}
	if ip4TTL(h) == 0 {
		st.icmpError(p, icmpTimeExceeded, 0, 0)
		st.drop(p, "ip4-input", "ip4 ttl <= 1")
		return
	}
	st.ip4Unicast(p, i)
}

// ip4Unicast runs the ip4-unicast feature arc of the receiving interface
// in VPP's order - cnat-input (runs_before the input ACL), ACL-in, NAT44-ED,
// cnat-snat - and ends in ip4-lookup.
func (st *state) ip4Unicast(p *pkt, i *iface) {
	if st.cnatFeatureOn(i.idx, cnatInput4) && st.cnatInputNode(p, false) {
		return
	}
	if st.aclFilter != nil && !st.aclCheck(p, i.idx, true) {
		return
	}
	if st.nat.enabled && !st.natInput(p, i) {
		return
	}
	if st.cnatFeatureOn(i.idx, cnatSNAT4) && !st.cnatSNATNode(p, i, false) {
		return
	}
	st.ip4Lookup(p)
}

// aclCheck runs the ACL hook; false means the packet was dropped.
func (st *state) aclCheck(p *pkt, sw uint32, input bool) bool {
	h := p.ip()
	f := &st.fwd.aclFlow
	*f = aclFlow{Src: addr4(ip4Src(h)), Dst: addr4(ip4Dst(h)), Proto: ip4Proto(h), Fragment: ip4FragOff(h) != 0}
	f.NoL4 = !f.Fragment && len(ip4L4(h)) == 0
	if !f.Fragment && l4Complete(h) {
		l4 := ip4L4(h)
		switch f.Proto {
		case protoTCP:
			f.SrcPort, f.DstPort, f.TCPFlags = be16(l4[0:2]), be16(l4[2:4]), l4[13]
		case protoUDP:
			f.SrcPort, f.DstPort = be16(l4[0:2]), be16(l4[2:4])
		case protoICMP:
			f.ICMPType, f.ICMPCode = l4[0], l4[1]
			f.SrcPort, f.DstPort = uint16(l4[0]), uint16(l4[1])
		}
	}
	return st.aclApply(p, sw, input, "acl-plugin-in-ip4-fa", "acl-plugin-out-ip4-fa")
}

// aclApply asks the ACL hook about the flow in st.fwd.aclFlow and drops
// the packet at the input or output node if it is denied.
func (st *state) aclApply(p *pkt, sw uint32, input bool, inNode, outNode string) bool {
	node, bytes := outNode, p.length()
	if input {
		node, bytes = inNode, p.end-p.l3
	}
	st.fwd.aclFlow.Bytes = bytes
	permit, reason := st.aclFilter(sw, input, &st.fwd.aclFlow)
	if !permit {
		st.drop(p, node, reason)
		return false
	}
	if p.tr != nil {
		st.tracef(p, node, "permit: %s", reason)
	}
	return true
}

// ip4Lookup looks the destination up in the packet's table and forwards.
func (st *state) ip4Lookup(p *pkt) {
	st.visit(nodeIP4Lookup)
	if p.depth++; p.depth > maxGraphDepth {
		st.drop(p, "ip4-lookup", "graph loop")
		return
	}
	h := p.ip()
	dst := ip4Dst(h)
	if cc := st.cnatClientFor(p, addr4(dst)); cc != nil {
		if p.tr != nil {
			st.tracef(p, "ip4-lookup", "fib 0 dpo-idx %s/32: cnat client", cc.addr)
		}
		if st.cnatTx(p, cc, false) {
			return
		}
	}
	p.cnatSkip = false
	e := st.fibLookup(p.vrf, dst)
	if e == nil {
		st.drop(p, "ip4-lookup", "no such FIB table")
		return
	}
	if p.tr != nil {
		st.tracef(p, "ip4-lookup", "fib %d dpo-idx %s: %s", p.vrf, e.prefix, fwdKindName(e.kind))
	}
	st.ip4Forward(p, e, dst, flowHash(h))
}

// ip4Forward sends a packet on as FIB entry e forwards it; target is the
// address an attached path resolves, hash picks among multiple paths.
func (st *state) ip4Forward(p *pkt, e *fibFwd, target [4]byte, hash uint32) {
	switch e.kind {
	case fwdDrop:
		if e.prefix.Bits() == 0 {
			st.drop(p, "ip4-drop", "ip4 destination lookup miss")
		} else {
			st.drop(p, "ip4-drop", "ip4 adjacency drop")
		}
	case fwdUnreach, fwdProhibit:
		st.ipNull(p, e.kind == fwdProhibit, false)
	case fwdLocal:
		st.ip4Local(p, e)
	default:
		st.forwardPath(p, e.choosePath(hash), target, 0)
	}
}

// forwardPath sends a packet along one path of a FIB entry. target is the
// address to resolve for attached paths without a next hop.
func (st *state) forwardPath(p *pkt, path *fib_types.FibPath, target [4]byte, rdepth int) {
	nh := [4]byte(path.Nh.Address.XXX_UnionData[:4])
	switch {
	case path.Type == fib_types.FIB_API_PATH_TYPE_DROP:
		st.drop(p, "ip4-drop", "ip4 adjacency drop")
	case path.SwIfIndex != noIndex:
		o := st.ifaces[path.SwIfIndex]
		if o == nil {
			st.drop(p, "ip4-lookup", "path interface gone")
			return
		}
		if nh != [4]byte{} {
			target = nh
		}
		n := st.neighbors[neighborKey{sw: o.idx, ip: addr4(target)}]
		if n == nil {
			node := "ip4-arp"
			if nh == [4]byte{} {
				node = "ip4-glean"
			}
			if p.tr != nil {
				st.tracef(p, node, "no neighbour %s on %s", addr4(target), o.name)
			}
			st.arpRequest(p, o, target)
			st.drop(p, node, "address resolution required")
			return
		}
		st.ip4Rewrite(p, o, n.mac)
	case nh != [4]byte{}:
		// Recursive: resolve the next hop in the path's table.
		if rdepth > 8 {
			st.drop(p, "ip4-lookup", "recursion loop")
			return
		}
		e := st.fibLookup(path.TableID, nh)
		if e == nil || e.kind != fwdPaths {
			if e != nil && e.kind == fwdLocal {
				st.ip4Local(p, e)
				return
			}
			st.drop(p, "ip4-drop", "recursive next hop unresolved")
			return
		}
		if reason := resolveViaRefused(path, e); reason != "" {
			st.drop(p, "ip4-drop", reason)
			return
		}
		st.forwardPath(p, e.choosePath(flowHash(p.ip())), nh, rdepth+1)
	default:
		// Inter-VRF lookup (DEAG): look up again in the path's table; TTL
		// unchanged, no ip4-unicast features.
		if p.tr != nil {
			st.tracef(p, "lookup-ip4-dst", "lookup in fib %d", path.TableID)
		}
		p.vrf = path.TableID
		p.interVRF = true
		st.ip4Lookup(p)
	}
}

// ip4Rewrite decrements TTL, checks the MTU and builds the Ethernet header
// towards the neighbour, then runs the egress output arc.
func (st *state) ip4Rewrite(p *pkt, o *iface, dmac [6]byte) {
	st.visit(nodeIP4Rewrite)
	h := p.ip()
	if !p.localOrig {
		if ip4TTL(h) <= 1 {
			st.icmpError(p, icmpTimeExceeded, 0, 0)
			st.drop(p, "ip4-rewrite", "ip4 ttl <= 1")
			return
		}
		old := be16(h[8:10])
		h[8]--
		csumAdjust(h[10:12], old, be16(h[8:10]))
	}
	mtu := o.mtu[1]
	if mtu == 0 {
		mtu = o.mtu[0]
	}
	if mtu != 0 && ip4TotalLen(h) > int(mtu) {
		if ip4DF(h) {
			st.icmpError(p, icmpUnreach, icmpCodeFragNeeded, uint16(mtu))
			st.drop(p, "ip4-rewrite", "ip4 MTU exceeded and DF set")
			return
		}
		st.ip4Fragment(p, o, dmac, int(mtu))
		return
	}
	p.off = p.l3 - ethHdrLen
	f := p.buf[p.off:]
	copy(f[0:6], dmac[:])
	copy(f[6:12], o.mac[:])
	put16(f[12:14], etherTypeIP4)
	if p.tr != nil {
		st.tracef(p, "ip4-rewrite", "tx %s: %s -> %s ttl %d", o.name, macString(o.mac), macString(dmac), ip4TTL(h))
	}
	st.ip4Output(p, o)
}

// ip4Output runs the ip4-output arc of the egress interface: NAT44-ED
// in2out-output, ACL-out, cnat-output (runs_after the output ACL), then
// interface-output.
func (st *state) ip4Output(p *pkt, o *iface) {
	if st.nat.enabled && st.natIsOutputIf(o.idx) && !st.natOutputFeature(p, o) {
		return
	}
	if st.aclFilter != nil && !st.aclCheck(p, o.idx, false) {
		return
	}
	if st.cnatFeatureOn(o.idx, cnatOutput4) && !st.cnatOutputNode(p, o, false) {
		return
	}
	st.interfaceOutput(p, o)
}

// ip4Local delivers a packet to VPP itself.
func (st *state) ip4Local(p *pkt, e *fibFwd) {
	st.visit(nodeIP4Local)
	h := p.ip()
	proto := ip4Proto(h)
	if (proto == protoTCP || proto == protoUDP) && l4Complete(h) && !l4ChecksumOK(h) {
		st.drop(p, "ip4-local", "bad checksum")
		return
	}
	src := ip4Src(h)
	if se := st.fibLookup(p.vrf, src); se != nil && se.kind == fwdLocal && se.prefix.Bits() == 32 && se.sw != noIndex {
		st.drop(p, "ip4-local", "ip4 spoofed local-address packet drops")
		return
	}
	bcast := src == [4]byte{255, 255, 255, 255} || ip4Dst(h) == [4]byte{255, 255, 255, 255}
	if !bcast && !p.interVRF && !p.natted {
		if se := st.fibLookup(p.vrf, src); se == nil || se.kind == fwdDrop {
			st.drop(p, "ip4-local", "ip4 source lookup miss")
			return
		}
	}
	if p.tr != nil {
		st.tracef(p, "ip4-local", "%s: %s -> %s", protoName(proto), addr4(src), addr4(ip4Dst(h)))
	}
	l4 := ip4L4(h)
	switch proto {
	case protoICMP:
		if len(l4) >= 8 && l4[0] == icmpEchoRequest {
			st.icmpEchoReply(p)
			return
		}
		st.ip4Punt(p, "ip4-icmp-input", "unknown type") // echo replies included: no CLI ping here
	case protoUDP:
		if len(l4) < udpHdrLen {
			st.drop(p, "ip4-udp-lookup", "short UDP packet")
			return
		}
		dport := be16(l4[2:4])
		if st.vxlanPortRegistered(dport) {
			st.vxlanDecap(p)
			return
		}
		if dport == 68 && len(st.dhcp) > 0 {
			st.count("dhcp-client-detect", "DHCP packets received")
			st.putPkt(p)
			return
		}
		if st.udpPuntUnknown() {
			st.ip4Punt(p, "ip4-udp-lookup", "No listener for dst port")
			return
		}
		st.icmpError(p, icmpUnreach, icmpCodePortUnreach, 0)
		st.drop(p, "ip4-udp-lookup", "No listener for dst port")
	case protoTCP:
		st.ip4Punt(p, "ip4-local", "TCP to VPP (no session layer)")
	default:
		st.ip4Punt(p, "ip4-local", "unknown ip protocol")
	}
}

// icmpEchoReply answers an echo request in place (ping plugin): type 0,
// addresses swapped, TTL 64, new IP ID; routed from the VRF where the
// destination matched, through the egress output features.
func (st *state) icmpEchoReply(p *pkt) {
	h := p.ip()
	src, dst := ip4Src(h), ip4Dst(h)
	copy(h[12:16], dst[:])
	copy(h[16:20], src[:])
	h[8] = 64
	st.fwd.ipID++
	put16(h[4:6], st.fwd.ipID)
	ip4SetChecksum(h)
	l4 := ip4L4(h)
	l4[0], l4[1] = icmpEchoReply, 0
	setL4Checksum(h)
	p.localOrig = true
	p.interVRF = false
	st.count("ip4-icmp-echo-request", "echo replies sent")
	if p.tr != nil {
		st.tracef(p, "ip4-icmp-echo-request", "echo reply %s -> %s", addr4(dst), addr4(src))
	}
	st.ip4Lookup(p)
}

// icmpError sends an ICMP error about p (which the caller then drops), as
// ip4-icmp-error does (ip/icmp4.c ip4_icmp_error): rate-limited per (src,
// dst) of p; source = the receiving interface's address closest to the
// destination (icmpSourceFor), TTL 255, TOS 0, IP ID 0, a copy of the
// offending packet up to 576 bytes in all, routed in the receiving VRF.
// Like every host, VPP sends no error about an ICMP error.
func (st *state) icmpError(p *pkt, typ, code uint8, mtu uint16) {
	h := p.ip()
	if ip4Proto(h) == protoICMP && l4Complete(h) && !icmpIsEcho(ip4L4(h)[0]) {
		return
	}
	if st.fwd.errThrottle.limited(st.uptime(), ip4Src(h), ip4Dst(h)) {
		st.count("ip4-icmp-error", "ICMP errors rate limited")
		return
	}
	i := st.ifaces[p.rx]
	if i == nil {
		return
	}
	srcAddr, found := st.icmpSourceFor(i, ip4Src(h))
	if !found {
		st.count("ip4-icmp-error", "no source address for ICMP error")
		return
	}
	n := min(len(h), 576-ip4HdrLen-8)
	total := ip4HdrLen + 8 + n
	q := st.newLocalPkt(p, total)
	o := q.buf[q.l3:q.end]
	clear(o[:ip4HdrLen+8])
	o[0] = 0x45
	put16(o[2:4], uint16(total))
	o[8] = 255
	o[9] = protoICMP
	copy(o[12:16], srcAddr[:])
	s := ip4Src(h)
	copy(o[16:20], s[:])
	ip4SetChecksum(o)
	icmp := o[ip4HdrLen:]
	icmp[0], icmp[1] = typ, code
	if typ == icmpUnreach && code == icmpCodeFragNeeded {
		put16(icmp[6:8], mtu)
	}
	copy(icmp[8:], h[:n])
	setL4Checksum(o)
	q.rx, q.rxVRF, q.vrf = p.rx, p.rxVRF, p.rxVRF
	q.tr = p.tr
	st.count("ip4-icmp-error", "ICMP errors sent")
	if q.tr != nil {
		st.tracef(q, "ip4-icmp-error", "ICMP type %d code %d to %s", typ, code, addr4(s))
	}
	st.ip4Lookup(q)
}

func fwdKindName(k fwdKind) string {
	switch k {
	case fwdDrop:
		return "drop"
	case fwdLocal:
		return "local"
	case fwdUnreach:
		return "ip4-null action:send-unreachable"
	case fwdProhibit:
		return "ip4-null action:send-prohibited"
	}
	return "forward"
}

// ip4Fragment splits a packet larger than the egress MTU (DF clear) into
// fragments of at most mtu bytes (ip4-frag) and sends each on through the
// output arc. The header, options included, is copied into every fragment.
func (st *state) ip4Fragment(p *pkt, o *iface, dmac [6]byte, mtu int) {
	h := p.ip()
	ihl := ip4IHL(h)
	chunk := (mtu - ihl) &^ 7
	if chunk <= 0 {
		st.drop(p, "ip4-frag", "MTU too small to fragment")
		return
	}
	payload := h[ihl:ip4TotalLen(h)]
	baseOff := int(ip4FragOff(h))
	lastMF := h[6]&0x20 != 0
	n := 0
	for off := 0; off < len(payload); off += chunk {
		end := min(off+chunk, len(payload))
		q := st.getPkt()
		q.off = pktHeadroom
		q.l3 = q.off + ethHdrLen
		q.end = q.l3 + ihl + end - off
		f := q.buf[q.l3:q.end]
		copy(f, h[:ihl])
		copy(f[ihl:], payload[off:end])
		put16(f[2:4], uint16(len(f)))
		fo := uint16(baseOff + off/8)
		if end < len(payload) || lastMF {
			fo |= 0x2000
		}
		put16(f[6:8], fo|uint16(f[6]&0x40)<<8)
		ip4SetChecksum(f)
		copy(q.buf[q.off:], dmac[:])
		copy(q.buf[q.off+6:], o.mac[:])
		put16(q.buf[q.off+12:], etherTypeIP4)
		q.rx, q.rxVRF, q.vrf, q.tr, q.depth, q.natted = p.rx, p.rxVRF, p.vrf, p.tr, p.depth, p.natted
		n++
		st.ip4Output(q, o)
	}
	if p.tr != nil {
		st.tracef(p, "ip4-frag", "%d bytes into %d fragments for MTU %d", len(payload), n, mtu)
	}
	st.count("ip4-frag", "packets fragmented")
	st.putPkt(p)
}
