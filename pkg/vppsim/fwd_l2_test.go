package vppsim

import (
	"encoding/binary"
	"testing"

	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/vxlan"
)

func (e *testEnv) bridge(id uint32, flood, uuFlood, learn bool) {
	e.t.Helper()
	e.ok(&l2.BridgeDomainAddDelV2{BdID: id, Flood: flood, UuFlood: uuFlood, Forward: true, Learn: learn, IsAdd: true}, &l2.BridgeDomainAddDelV2Reply{})
}

func (e *testEnv) member(sw interface_types.InterfaceIndex, bd uint32, shg uint8, bvi bool) {
	e.t.Helper()
	pt := l2.L2_API_PORT_TYPE_NORMAL
	if bvi {
		pt = l2.L2_API_PORT_TYPE_BVI
	}
	e.ok(&l2.SwInterfaceSetL2Bridge{RxSwIfIndex: sw, BdID: bd, Shg: shg, PortType: pt, Enable: true})
}

func (e *testEnv) ifMAC(sw interface_types.InterfaceIndex) [6]byte {
	e.t.Helper()
	for _, i := range e.sim.Interfaces() {
		if i.SwIfIndex == uint32(sw) {
			return [6]byte(i.MAC)
		}
	}
	e.t.Fatalf("no interface %d", sw)
	return [6]byte{}
}

func TestBridgeDomainForwarding(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	e.bridge(1, true, true, true)
	e.member(1, 1, 0, false)
	e.member(2, 1, 0, false)
	bvi := e.loopback()
	e.member(bvi, 1, 0, true)
	e.addAddr(bvi, "10.5.0.1/24")
	e.up(1)
	e.up(2)
	e.up(bvi)
	bviMAC := e.ifMAC(bvi)
	payload := ipPkt("10.5.0.2", "10.5.0.3", protoUDP, 64, udpL4(1, 2, "x"))

	// Unknown unicast floods to NIC2, not into the BVI (not its MAC).
	e.inject(nic1, ethFrame(hostBMAC, hostAMAC, etherTypeIP4, payload))
	if r := oneFrame(t, c, nic2); r.dstMAC != hostBMAC || r.ttl != 64 {
		t.Errorf("flooded %v", r)
	}
	none(t, c)
	// Host A was learned on NIC1: the answer goes only there.
	e.inject(nic2, ethFrame(hostAMAC, hostBMAC, etherTypeIP4, payload))
	oneFrame(t, c, nic1)
	none(t, c)
	// A frame for a MAC on the receiving port is dropped.
	e.inject(nic1, ethFrame(hostAMAC, [6]byte{0x52, 0, 0, 0, 0, 0x99}, etherTypeIP4, payload))
	none(t, c)

	// Broadcast ARP for the BVI: flooded to NIC2 and answered by the BVI
	// through the bridge, to host A's port.
	e.inject(nic1, ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.5.0.2", [6]byte{}, "10.5.0.1")))
	if r := oneFrame(t, c, nic2); r.arpOp != arpOpRequest {
		t.Errorf("flooded ARP %v", r)
	}
	if r := oneFrame(t, c, nic1); r.arpOp != arpOpReply || r.arpSHA != bviMAC || r.srcMAC != bviMAC {
		t.Errorf("BVI ARP reply %v", r)
	}
	// Ping the BVI: the reply is routed out of the BVI into the bridge.
	e.inject(nic1, ethFrame(bviMAC, hostAMAC, etherTypeIP4, ipPkt("10.5.0.2", "10.5.0.1", protoICMP, 64, icmpEcho(icmpEchoRequest, 1, 1))))
	if r := oneFrame(t, c, nic1); r.icmpType != icmpEchoReply || r.srcMAC != bviMAC || r.dstMAC != hostAMAC {
		t.Errorf("BVI echo reply %v", r)
	}
	none(t, c)

	// A static entry is never moved: the moving frame is dropped.
	e.ok(&l2.L2fibAddDel{Mac: hostBMAC, BdID: 1, SwIfIndex: 2, IsAdd: true, StaticMac: true})
	e.inject(nic1, ethFrame(hostAMAC, hostBMAC, etherTypeIP4, payload))
	none(t, c)
	if e.sim.ErrorCount("l2-learn", "L2 MAC move of a static entry") != 1 {
		t.Error("static MAC move not counted")
	}
}

func TestBridgeDomainFloodFlagsAndSplitHorizon(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	lo := e.loopback()
	e.bridge(1, true, false, true)
	e.member(1, 1, 1, false)
	e.member(2, 1, 1, false)
	e.member(lo, 1, 0, false) // a loopback member stands for a third port
	e.up(1)
	e.up(2)
	e.up(lo)
	bcast := ethFrame(broadcastMAC, hostAMAC, etherTypeARP, arpPkt(1, hostAMAC, "10.0.0.2", [6]byte{}, "10.0.0.3"))
	// Split horizon: NIC1 and NIC2 share group 1, so only the loopback
	// port gets the broadcast (a loopback member transmits on its wire).
	e.inject(nic1, bcast)
	oneFrame(t, c, "loop0")
	none(t, c)
	// uu_flood off: unknown unicast is dropped.
	e.inject(nic1, ethFrame(hostBMAC, hostAMAC, etherTypeIP4, ipPkt("1.1.1.1", "2.2.2.2", protoUDP, 64, udpL4(1, 2, ""))))
	none(t, c)
	// flood off: broadcast is dropped.
	e.ok(&l2.BridgeFlags{BdID: 1, IsSet: false, Flags: l2.BRIDGE_API_FLAG_FLOOD})
	e.inject(nic1, bcast)
	none(t, c)
}

// vxlanFrame wraps inner in VXLAN from src to dst (outer on the NIC).
func vxlanFrame(dstMAC, srcMAC [6]byte, src, dst string, vni uint32, inner []byte) []byte {
	vx := make([]byte, vxlanHdrLen, vxlanHdrLen+len(inner))
	vx[0] = 0x08
	vx[4], vx[5], vx[6] = byte(vni>>16), byte(vni>>8), byte(vni)
	vx = append(vx, inner...)
	udp := udpL4(50000, vxlanPort, "")
	udp = append(udp[:udpHdrLen], vx...)
	binary.BigEndian.PutUint16(udp[4:6], uint16(len(udp)))
	return ethFrame(dstMAC, srcMAC, etherTypeIP4, ipPkt(src, dst, protoUDP, 64, udp))
}

func TestVXLANEncapDecap(t *testing.T) {
	e := newEnv(t)
	c := newCapture(e)
	e.addAddr(1, "192.168.16.1/24")
	e.up(1)
	e.neighbor(1, "192.168.16.2", hostAMAC)
	vx := &vxlan.VxlanAddDelTunnelV3Reply{}
	e.ok(&vxlan.VxlanAddDelTunnelV3{IsAdd: true, Instance: noIndex, SrcAddress: addr("192.168.16.1"),
		DstAddress: addr("192.168.16.2"), Vni: 10, DecapNextIndex: noIndex}, vx)
	e.bridge(2, false, false, false)
	bvi := e.loopback()
	e.member(bvi, 2, 0, true)
	e.member(vx.SwIfIndex, 2, 1, false)
	e.addAddr(bvi, "10.2.0.1/24")
	e.up(bvi)
	bviMAC := e.ifMAC(bvi)
	remoteBVI := [6]byte{0x02, 0xfe, 0, 0, 0, 0x77}
	e.neighbor(bvi, "10.2.0.2", remoteBVI)
	e.ok(&l2.L2fibAddDel{Mac: remoteBVI, BdID: 2, SwIfIndex: vx.SwIfIndex, IsAdd: true, StaticMac: true})
	// Routes towards the remote node's pods.
	e.addRoute(ip.IPRoute{Prefix: pfx("10.1.2.0/24"), Paths: []fib_types.FibPath{viaPath(bvi, "10.2.0.2")}})

	inner := ethFrame(bviMAC, remoteBVI, etherTypeIP4, ipPkt("10.1.2.5", "10.2.0.1", protoICMP, 63, icmpEcho(icmpEchoRequest, 3, 1)))
	e.inject(nic1, vxlanFrame(nic1MAC, hostAMAC, "192.168.16.2", "192.168.16.1", 10, inner))
	f := c.take(nic1)
	if len(f) != 1 {
		t.Fatalf("%d frames out of the NIC, want the encapsulated echo reply; errors:\n%s", len(f), cli(e, "show errors"))
	}
	outer := decodeFrame(t, f[0])
	if outer.proto != protoUDP || outer.dport != vxlanPort || outer.ttl != 253 || outer.src.String() != "192.168.16.1" ||
		outer.dst.String() != "192.168.16.2" || outer.dstMAC != hostAMAC || !outer.csumOK {
		t.Errorf("outer %v", outer)
	}
	if vni := uint32(outer.payload[4])<<16 | uint32(outer.payload[5])<<8 | uint32(outer.payload[6]); outer.payload[0] != 0x08 || vni != 10 {
		t.Errorf("VXLAN header % x", outer.payload[:8])
	}
	in := decodeFrame(t, outer.payload[vxlanHdrLen:])
	if in.icmpType != icmpEchoReply || in.dst.String() != "10.1.2.5" || in.dstMAC != remoteBVI || in.srcMAC != bviMAC {
		t.Errorf("inner %v", in)
	}
	// Unknown VNI and unknown peer are dropped.
	e.inject(nic1, vxlanFrame(nic1MAC, hostAMAC, "192.168.16.2", "192.168.16.1", 11, inner))
	e.neighbor(1, "192.168.16.3", hostBMAC)
	e.inject(nic1, vxlanFrame(nic1MAC, hostBMAC, "192.168.16.3", "192.168.16.1", 10, inner))
	none(t, c)
	if n := e.sim.ErrorCount("vxlan4-input", "no such tunnel packets"); n != 2 {
		t.Errorf("no-such-tunnel drops %d, want 2", n)
	}
	// Admin-down NIC: nothing is received.
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: 1})
	e.inject(nic1, vxlanFrame(nic1MAC, hostAMAC, "192.168.16.2", "192.168.16.1", 10, inner))
	none(t, c)
}
