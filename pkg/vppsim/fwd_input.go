package vppsim

import (
	"errors"
	"fmt"
)

// Device input and ethernet-input (docs/dev-guide/VPP-FORWARDING.md §1).

// rxFrame is a frame received on interface i from its wire (TAP, raw
// socket or the Go API). It is copied into a graph buffer.
func (st *state) rxFrame(i *iface, frame []byte) {
	st.visit(inputSimNode(i.kind))
	node := inputNode(i.kind)
	if len(frame) < ethHdrLen || len(frame) > pktMaxFrame {
		st.count(node, "bad frame length")
		return
	}
	p := st.getPkt()
	p.off = pktHeadroom
	p.end = p.off + len(frame)
	copy(p.buf[p.off:p.end], frame)
	p.rx = i.idx
	p.tr = st.startTrace(node)
	if p.tr != nil {
		st.tracef(p, node, "%s: hw_if_index %d len %d", i.kind.devType(), i.idx, len(frame))
	}
	// Tap and af_packet queues are read only while the interface is
	// admin-up; a DPDK port that is admin-down does not receive either.
	if !i.adminUp {
		st.drop(p, node, "interface is down")
		return
	}
	i.ctr.rxPkts++
	i.ctr.rxBytes += uint64(len(frame))
	st.statsRx(i.idx, len(frame))
	st.ethernetInput(p, i)
}

// ethernetInput splits L2 from L3 and dispatches by ethertype.
func (st *state) ethernetInput(p *pkt, i *iface) {
	st.visit(nodeEthernetInput)
	if p.depth++; p.depth > maxGraphDepth {
		st.drop(p, "ethernet-input", "graph loop")
		return
	}
	f := p.frame()
	if p.tr != nil {
		st.tracef(p, "ethernet-input", "frame: type 0x%04x %s -> %s on %s", be16(f[12:14]), macString(p.srcMAC()), macString(p.dstMAC()), i.name)
	}
	if i.l2 != nil && i.l2.portType != l2PortBVI {
		// A bridge-domain member is in L2 mode: every untagged frame
		// goes to l2-input, whatever its destination.
		if et := be16(f[12:14]); et == etherTypeVLN || et == etherTypeQinQ {
			st.drop(p, "ethernet-input", "unknown vlan")
			return
		}
		p.shg = i.l2.shg
		st.l2Input(p, i)
		return
	}
	st.l3Input(p, i)
}

// l3Input is the L3 part of ethernet-input: the destination MAC filter and
// the ethertype dispatch. It is also where frames a BVI takes out of its
// bridge domain enter L3.
func (st *state) l3Input(p *pkt, i *iface) {
	f := p.frame()
	dst := p.dstMAC()
	if !isGroupMAC(dst) && dst != i.mac {
		st.drop(p, "ethernet-input", "l3 mac mismatch")
		return
	}
	p.rx = i.idx
	p.rxVRF = i.vrf[0]
	p.vrf = i.vrf[0]
	switch et := be16(f[12:14]); et {
	case etherTypeIP4:
		p.l3 = p.off + ethHdrLen
		st.ip4Input(p, i)
	case etherTypeARP:
		p.l3 = p.off + ethHdrLen
		st.arpInput(p, i)
	case etherTypeIP6:
		p.l3 = p.off + ethHdrLen
		p.rxVRF = i.vrf[1]
		p.vrf = i.vrf[1]
		st.ip6Input(p, i)
	case etherTypeVLN, etherTypeQinQ:
		st.drop(p, "ethernet-input", "unknown vlan")
	default:
		st.drop(p, "ethernet-input", "unknown ethernet type")
	}
}

// InjectFrame processes an Ethernet frame as if it had been received on
// the named interface from its wire (the host side of a TAP, the veth of
// an af_packet interface, the cable of a NIC). What the simulator
// transmits is delivered to the TxHook and to the interface's Linux end,
// if it has one.
func (s *Sim) InjectFrame(ifName string, frame []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.st.byName[ifName]
	if i == nil {
		return fmt.Errorf("vppsim: inject frame: no interface %q", ifName)
	}
	if i.kind == kindVxlan || i.kind == kindLocal {
		return fmt.Errorf("vppsim: inject frame: %s (%s) has no wire", ifName, i.kind.devType())
	}
	if len(frame) < ethHdrLen {
		return errors.New("vppsim: inject frame: shorter than an Ethernet header")
	}
	s.st.rxFrame(i, frame)
	return nil
}

// TxHook receives every frame an interface transmits on its wire. The
// frame is valid only during the call; the hook runs with the simulator's
// state locked and must not call the Sim.
type TxHook func(ifName string, frame []byte)

// SetTxHook installs (or, with nil, removes) the hook that sees every
// transmitted frame.
func (s *Sim) SetTxHook(h TxHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.txHook = h
}
