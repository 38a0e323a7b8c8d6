package vppsim

// interface-output and the wire (docs/dev-guide/VPP-FORWARDING.md §1, §4).

// interfaceOutput sends an L3-built frame out of interface o: into the
// bridge domain when o is a BVI, back into its own input when o is a
// loopback outside any bridge domain, else onto the wire.
func (st *state) interfaceOutput(p *pkt, o *iface) {
	st.visit(nodeInterfaceOutput)
	if o.l2 != nil && o.l2.portType == l2PortBVI {
		// Out of L3 through the BVI: the frame enters l2-input as if
		// received on the BVI port, split-horizon group 0.
		if !o.adminUp {
			st.drop(p, "interface-output", "interface is down")
			return
		}
		o.ctr.txPkts++
		o.ctr.txBytes += uint64(p.length())
		st.statsTx(o.idx, p.length())
		p.shg = 0
		st.l2Input(p, o)
		return
	}
	if o.kind == kindLoopback && o.l2 == nil {
		if !o.adminUp {
			st.drop(p, "interface-output", "interface is down")
			return
		}
		o.ctr.txPkts++
		o.ctr.txBytes += uint64(p.length())
		o.ctr.rxPkts++
		o.ctr.rxBytes += uint64(p.length())
		st.statsTx(o.idx, p.length())
		st.statsRx(o.idx, p.length())
		if p.tr != nil {
			st.tracef(p, "loop-output", "%s echoes the frame into its input", o.name)
		}
		p.localOrig = false
		st.ethernetInput(p, o)
		return
	}
	if o.kind == kindVxlan || o.kind == kindLocal {
		st.drop(p, "interface-output", "L3 output on a non-Ethernet interface")
		return
	}
	st.txWire(p, o)
}

// txWire puts a frame on the wire of o: its Linux end if it has one, and
// the TxHook.
func (st *state) txWire(p *pkt, o *iface) {
	if !o.adminUp || !o.linkUp() {
		st.drop(p, "interface-output", "interface is down")
		return
	}
	f := p.frame()
	o.ctr.txPkts++
	o.ctr.txBytes += uint64(len(f))
	st.statsTx(o.idx, len(f))
	if p.tr != nil {
		st.tracef(p, o.name+"-output", "%s: len %d %s -> %s", o.name, len(f), macString(p.srcMAC()), macString(p.dstMAC()))
		st.tracef(p, o.name+"-tx", "transmitted")
	}
	if h := st.s.txHook; h != nil {
		h(o.name, f)
	}
	if o.port != nil {
		o.port.send(f)
	}
	st.putPkt(p)
}
