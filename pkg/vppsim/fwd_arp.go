package vppsim

import (
	"net/netip"
	"time"

	"go.fd.io/govpp/binapi/ip_neighbor"
)

// arp-input, arp-reply, arp-proxy, arp-disabled and neighbour learning
// (docs/dev-guide/VPP-FORWARDING.md §2).

const (
	arpLen       = 28
	arpOpRequest = 1
	arpOpReply   = 2
	// arpThrottle is the minimum interval between two ARP requests for the
	// same (target, interface), like VPP's throttle.
	arpThrottle = time.Millisecond
)

// ip4Enabled tells whether IPv4 is enabled on an interface: it has an
// IPv4 address, is unnumbered, or an STN rule enabled it (stn.go).
func (st *state) ip4Enabled(i *iface) bool {
	if i.unnumOf != noIndex || st.stn.ipEnabled(i) {
		return true
	}
	for _, a := range i.addrs {
		if a.Addr().Is4() {
			return true
		}
	}
	return false
}

func (st *state) arpInput(p *pkt, i *iface) {
	st.visit(nodeARPInput)
	a := p.buf[p.l3:p.end]
	if len(a) < arpLen || be16(a[0:2]) != 1 || be16(a[2:4]) != etherTypeIP4 || a[4] != 6 || a[5] != 4 {
		st.drop(p, "arp-input", "ARP packet not ethernet/IP4")
		return
	}
	op := be16(a[6:8])
	sha := [6]byte(a[8:14])
	spa := [4]byte(a[14:18])
	tpa := [4]byte(a[24:28])
	if p.tr != nil {
		st.tracef(p, "arp-input", "op %d %s/%s -> %s on %s", op, addr4(spa), macString(sha), addr4(tpa), i.name)
	}
	if tpa == [4]byte{} {
		st.drop(p, "arp-input", "IP4 destination address is unset")
		return
	}
	if !st.ip4Enabled(i) {
		st.arpProxy(p, i, op, sha, spa, tpa)
		return
	}
	vrf := i.vrf[0]
	sender := st.fibLookup(vrf, spa)
	target := st.fibLookup(vrf, tpa)
	if sender != nil && sender.kind == fwdLocal && sender.prefix.Bits() == 32 {
		st.arpProxy(p, i, op, sha, spa, tpa)
		return
	}
	targetOwner := noIndex
	if target != nil && target.kind == fwdLocal && target.prefix.Bits() == 32 {
		targetOwner = target.sw
	}
	unnumToOwner := i.unnumOf != noIndex && targetOwner != noIndex && i.unnumOf == targetOwner
	if !st.senderAttached(vrf, spa) && !unnumToOwner {
		st.drop(p, "arp-reply", "IP4 source address not local to subnet")
		return
	}
	if n := st.neighbors[neighborKey{sw: i.idx, ip: addr4(tpa)}]; n != nil && n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC == 0 {
		// The target is a learned neighbour: only gratuitous ARP.
		if spa == tpa {
			st.learnNeighbor(i, spa, sha)
		}
		st.drop(p, "arp-reply", "ARP for a learned neighbour (gratuitous only)")
		return
	}
	if p.srcMAC() != sha {
		st.drop(p, "arp-reply", "ARP hw address mismatch")
		return
	}
	if targetOwner == noIndex && (target == nil || target.kind != fwdLocal) {
		st.arpProxy(p, i, op, sha, spa, tpa)
		return
	}
	if op == arpOpReply {
		if target != nil && target.kind == fwdLocal {
			st.learnNeighbor(i, spa, sha)
			if p.tr != nil {
				st.tracef(p, "arp-reply", "learned %s -> %s on %s", addr4(spa), macString(sha), i.name)
			}
			st.count("arp-reply", "ARP replies received")
			st.putPkt(p)
			return
		}
		st.arpProxy(p, i, op, sha, spa, tpa)
		return
	}
	if op != arpOpRequest {
		st.drop(p, "arp-reply", "ARP opcode not request or reply")
		return
	}
	owned := targetOwner == i.idx || unnumToOwner || (targetOwner == noIndex && st.natOwnsOn(i))
	if !owned {
		st.drop(p, "arp-reply", "Interface is not mapped to an IP address")
		return
	}
	if spa == tpa {
		st.drop(p, "arp-reply", "ARP request IP4 source address is the same as the target")
		return
	}
	st.learnNeighbor(i, spa, sha)
	st.arpSendReply(p, i, sha, spa, tpa)
}

// natOwnsOn tells whether NAT's local /32s (pool and static external
// addresses) are on interface i: it is a NAT outside or output-feature
// interface.
func (st *state) natOwnsOn(i *iface) bool {
	n := &st.nat
	if !n.enabled {
		return false
	}
	if ni := n.ifaces[i.idx]; ni != nil && ni.flags&natOutside != 0 {
		return true
	}
	for _, sw := range n.outputIfs {
		if sw == i.idx {
			return true
		}
	}
	return false
}

// senderAttached tells whether an address is covered by an attached or
// connected entry in the VRF, searching from /32 towards shorter masks.
func (st *state) senderAttached(vrf uint32, a [4]byte) bool {
	f := st.view().fibs[vrf]
	if f == nil {
		return false
	}
	v := u32(a)
	for _, b := range f.lens {
		mask := uint32(0)
		if b > 0 {
			mask = ^uint32(0) << (32 - b)
		}
		e := f.byLen[b][v&mask]
		if e == nil || e.kind != fwdPaths {
			continue
		}
		for k := range e.paths {
			if e.paths[k].SwIfIndex != noIndex {
				return true
			}
		}
	}
	return false
}

// arpProxy answers a request for an address in a proxy range of the
// receiving VRF, with the receiving interface's MAC; everything else is
// dropped (arp-disabled, then error-drop).
func (st *state) arpProxy(p *pkt, i *iface, op uint16, sha [6]byte, spa, tpa [4]byte) {
	if i.proxyArp && op == arpOpRequest {
		t := addr4(tpa)
		for _, r := range st.proxyArps {
			if r.vrf == i.vrf[0] && !t.Less(r.lo) && !r.hi.Less(t) {
				if p.tr != nil {
					st.tracef(p, "arp-proxy", "proxy reply for %s with %s", t, macString(i.mac))
				}
				st.arpSendReply(p, i, sha, spa, tpa)
				return
			}
		}
	}
	if !st.ip4Enabled(i) {
		st.drop(p, "arp-disabled", "ARP Disabled on this interface")
		return
	}
	st.drop(p, "arp-proxy", "ARP request for an address not ours")
}

// arpSendReply turns the request in p into the reply and sends it
// straight to interface-output (no NAT, no ACL).
func (st *state) arpSendReply(p *pkt, i *iface, sha [6]byte, spa, tpa [4]byte) {
	f := p.frame()
	copy(f[0:6], sha[:])
	copy(f[6:12], i.mac[:])
	a := p.buf[p.l3:]
	put16(a[6:8], arpOpReply)
	copy(a[8:14], i.mac[:])
	copy(a[14:18], tpa[:])
	copy(a[18:24], sha[:])
	copy(a[24:28], spa[:])
	p.end = p.l3 + arpLen
	if p.tr != nil {
		st.tracef(p, "arp-reply", "reply %s is-at %s to %s", addr4(tpa), macString(i.mac), addr4(spa))
	}
	st.count("arp-reply", "ARP replies sent")
	p.localOrig = true
	st.interfaceOutput(p, i)
}

// learnNeighbor records a dynamic neighbour; a static entry keeps its MAC
// (docs/dev-guide/VPP-FORWARDING.md §2: a dynamic update never replaces a static entry).
func (st *state) learnNeighbor(i *iface, ip [4]byte, mac [6]byte) {
	k := neighborKey{sw: i.idx, ip: addr4(ip)}
	n := st.neighbors[k]
	if n != nil {
		if n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0 || n.mac == mac {
			return
		}
		n.mac = mac
		return
	}
	if uint32(len(st.neighbors)) >= st.neighborCfg[0].maxNumber {
		st.count("arp-reply", "neighbour limit reached")
		return
	}
	st.neighbors[k] = &neighbor{neighborKey: k, mac: mac, seq: st.nextSeq()}
	st.gen++ // the adjacency /32 changes the FIB
}

// throttlePass records a request for k at now and tells whether it may be
// sent: not if the last one for k was less than window ago. Records that
// no longer throttle anything are forgotten when the map grows large.
func throttlePass(sent map[neighborKey]time.Duration, k neighborKey, now, window time.Duration) bool {
	if last, ok := sent[k]; ok && now-last < window {
		return false
	}
	if len(sent) >= 4096 {
		for key, at := range sent {
			if now-at >= window {
				delete(sent, key)
			}
		}
	}
	sent[k] = now
	return true
}

// arpRequest broadcasts an ARP request for target out of interface i, as
// ip4-glean and ip4-arp do for a dropped packet. The sender IP is the
// interface's address in the target's subnet, else its first address
// (unnumbered interfaces borrow); without one nothing is sent.
func (st *state) arpRequest(p *pkt, i *iface, target [4]byte) {
	t := addr4(target)
	var src netip.Addr
	for _, a := range st.effectiveAddrs(i) {
		if !a.Addr().Is4() {
			continue
		}
		if a.Contains(t) {
			src = a.Addr()
			break
		}
		if !src.IsValid() {
			src = a.Addr()
		}
	}
	if !src.IsValid() {
		st.count("ip4-glean", "no source address for ARP request")
		return
	}
	if !throttlePass(st.fwd.arpSent, neighborKey{sw: i.idx, ip: t}, st.uptime(), arpThrottle) {
		st.count("ip4-glean", "ARP requests throttled")
		return
	}
	q := st.newLocalPkt(p, arpLen)
	q.tr = st.newBufferTrace(p) // its own record: the packet p is dropped
	f := q.buf[q.off:q.end]
	copy(f[0:6], broadcastMAC[:])
	copy(f[6:12], i.mac[:])
	put16(f[12:14], etherTypeARP)
	a := f[ethHdrLen:]
	put16(a[0:2], 1)
	put16(a[2:4], etherTypeIP4)
	a[4], a[5] = 6, 4
	put16(a[6:8], arpOpRequest)
	copy(a[8:14], i.mac[:])
	s4 := src.As4()
	copy(a[14:18], s4[:])
	clear(a[18:24])
	copy(a[24:28], target[:])
	st.count("ip4-glean", "ARP requests sent")
	if q.tr != nil {
		st.tracef(q, "ip4-glean", "ARP request who-has %s tell %s on %s", t, src, i.name)
	}
	st.interfaceOutput(q, i)
}
