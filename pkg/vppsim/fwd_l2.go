package vppsim

import (
	"go.fd.io/govpp/binapi/l2"
)

// l2-input, l2-learn, l2-fwd, l2-flood and l2-output (docs/dev-guide/VPP-FORWARDING.md §4).

const l2PortBVI = l2.L2_API_PORT_TYPE_BVI

// l2Input bridges a frame received on port i (a member, or the BVI when L3
// sends through it; then p.shg is 0).
func (st *state) l2Input(p *pkt, i *iface) {
	st.visit(nodeL2Input)
	if p.depth++; p.depth > maxGraphDepth {
		st.drop(p, "l2-input", "graph loop")
		return
	}
	bd := st.bds[i.l2.bd]
	if bd == nil {
		st.drop(p, "l2-input", "bridge domain gone")
		return
	}
	src, dst := p.srcMAC(), p.dstMAC()
	if p.tr != nil {
		st.tracef(p, "l2-input", "l2-input: sw_if_index %d bd %d %s -> %s shg %d", i.idx, bd.id, macString(src), macString(dst), p.shg)
	}
	// Learning: not from the BVI, not multicast or zero source MACs.
	if bd.learn && i.idx != bd.bvi && !isGroupMAC(src) && src != ([6]byte{}) {
		k := l2fibKey{bd: bd.id, mac: src}
		e := st.l2fib[k]
		switch {
		case e == nil:
			st.l2fib[k] = &l2fibEntry{sw: i.idx, seq: st.nextSeq()}
			if p.tr != nil {
				st.tracef(p, "l2-learn", "learned %s on %s", macString(src), i.name)
			}
		case e.sw == i.idx:
		case e.static || e.filter || e.bvi:
			// A static entry is never moved: the moving frame is dropped.
			st.drop(p, "l2-learn", "L2 MAC move of a static entry")
			return
		default:
			e.sw = i.idx
			st.count("l2-learn", "L2 mac moves")
		}
	}
	if isGroupMAC(dst) {
		if !bd.flood {
			st.drop(p, "l2-flood", "L2 flood disabled (broadcast/multicast)")
			return
		}
		st.l2Flood(p, bd, i)
		return
	}
	if bd.forward {
		if e := st.l2fib[l2fibKey{bd: bd.id, mac: dst}]; e != nil {
			switch {
			case e.filter:
				st.drop(p, "l2-fwd", "L2 filter entry")
			case e.sw == i.idx:
				st.drop(p, "l2-fwd", "L2 destination on the receiving port")
			case e.bvi || e.sw == bd.bvi:
				bvi := st.ifaces[bd.bvi]
				if bvi == nil {
					st.drop(p, "l2-fwd", "BVI gone")
					return
				}
				if p.tr != nil {
					st.tracef(p, "l2-fwd", "to BVI %s", bvi.name)
				}
				st.bviToL3(p, bvi)
			default:
				o := st.ifaces[e.sw]
				if o == nil {
					st.drop(p, "l2-fwd", "L2 output interface gone")
					return
				}
				if p.tr != nil {
					st.tracef(p, "l2-fwd", "l2-fwd: %s -> %s", macString(dst), o.name)
				}
				st.l2Output(p, o)
			}
			return
		}
	}
	if !bd.uuFlood {
		st.drop(p, "l2-fwd", "L2 unknown unicast flood disabled")
		return
	}
	if bd.uuFwd != noIndex {
		if o := st.ifaces[bd.uuFwd]; o != nil && o.idx != i.idx {
			st.l2Output(p, o)
			return
		}
	}
	st.l2Flood(p, bd, i)
}

// l2Flood sends one copy to every member except the receiving port and
// members of its non-zero split-horizon group. The BVI copy enters L3 only
// for broadcast, multicast or its own MAC.
func (st *state) l2Flood(p *pkt, bd *bridgeDomain, in *iface) {
	if p.tr != nil {
		st.tracef(p, "l2-flood", "flood in bd %d from %s", bd.id, in.name)
	}
	var targets [64]uint32
	n := 0
	for _, sw := range bd.members {
		if sw == in.idx || n == len(targets) {
			continue
		}
		o := st.ifaces[sw]
		if o == nil || o.l2 == nil {
			continue
		}
		if p.shg != 0 && o.l2.shg == p.shg {
			continue
		}
		if sw == bd.bvi {
			dst := p.dstMAC()
			if !isGroupMAC(dst) && dst != o.mac {
				continue
			}
		}
		targets[n] = sw
		n++
	}
	if n == 0 {
		st.drop(p, "l2-flood", "L2 replication complete (no members)")
		return
	}
	for k := 0; k < n; k++ {
		q := p
		if k < n-1 {
			q = st.clonePkt(p)
		}
		o := st.ifaces[targets[k]]
		if targets[k] == bd.bvi {
			st.bviToL3(q, o)
		} else {
			st.l2Output(q, o)
		}
	}
}

// l2Output sends a bridged frame out of a member port.
func (st *state) l2Output(p *pkt, o *iface) {
	st.visit(nodeL2Output)
	if p.shg != 0 && o.l2 != nil && o.l2.shg == p.shg {
		st.drop(p, "l2-output", "L2 output split horizon drop")
		return
	}
	if o.kind == kindVxlan {
		st.vxlanEncap(p, o)
		return
	}
	st.txWire(p, o)
}

// bviToL3 takes a frame out of the bridge domain into L3 on the BVI.
func (st *state) bviToL3(p *pkt, bvi *iface) {
	if !bvi.adminUp {
		st.drop(p, "l2-fwd", "BVI is down")
		return
	}
	p.shg = 0
	if p.tr != nil {
		st.tracef(p, "bvi", "into L3 on %s", bvi.name)
	}
	st.l3Input(p, bvi)
}
