package vppsim

import (
	"testing"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"
)

func TestBridgeDomainsAddDelDump(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		req  *l2.BridgeDomainAddDel
		want int32
	}{
		{"add", &l2.BridgeDomainAddDel{IsAdd: true, BdID: 1, Flood: true, Forward: true, Learn: true, MacAge: 5, BdTag: "vxlanBD"}, 0},
		{"add again", &l2.BridgeDomainAddDel{IsAdd: true, BdID: 1}, retvalBDAlreadyExists},
		{"bd 0", &l2.BridgeDomainAddDel{IsAdd: true, BdID: 0}, retvalBDNotModifiable},
		{"id too large", &l2.BridgeDomainAddDel{IsAdd: true, BdID: 1 << 24}, retvalBDIDExceedMax},
		{"delete missing", &l2.BridgeDomainAddDel{IsAdd: false, BdID: 2}, retvalNoSuchEntry},
		{"delete bd 0", &l2.BridgeDomainAddDel{IsAdd: false, BdID: 0}, retvalBDNotModifiable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	v2 := &l2.BridgeDomainAddDelV2Reply{}
	e.ok(&l2.BridgeDomainAddDelV2{IsAdd: true, BdID: noIndex, Flood: true}, v2)
	if v2.BdID != 2 {
		t.Errorf("allocated bd_id %d, want 2", v2.BdID)
	}
	all := dump[l2.BridgeDomainDetails](t, e.ch, &l2.BridgeDomainDump{BdID: noIndex, SwIfIndex: allIfaces})
	if len(all) != 2 || all[0].BdID != 1 || !all[0].Learn || all[0].MacAge != 5 || all[0].BdTag != "vxlanBD" ||
		all[0].BviSwIfIndex != allIfaces || all[0].UuFwdSwIfIndex != allIfaces {
		t.Errorf("bridge domains %+v", all)
	}
	// bd_id 0 dumps nothing, as in VPP.
	if n := len(dump[l2.BridgeDomainDetails](t, e.ch, &l2.BridgeDomainDump{BdID: 0, SwIfIndex: allIfaces})); n != 0 {
		t.Errorf("dump of bd 0 returned %d", n)
	}
	if one := dump[l2.BridgeDomainDetails](t, e.ch, &l2.BridgeDomainDump{BdID: 2, SwIfIndex: allIfaces}); len(one) != 1 || one[0].BdID != 2 {
		t.Errorf("dump of bd 2: %+v", one)
	}
	e.ok(&l2.BridgeDomainAddDelV2{IsAdd: false, BdID: 2})
	if n := len(e.sim.BridgeDomains()); n != 1 {
		t.Errorf("%d bridge domains", n)
	}
}

func TestBridgeDomainMembersBVIAndL2FIB(t *testing.T) {
	e := newEnv(t)
	e.ok(&l2.BridgeDomainAddDel{IsAdd: true, BdID: 1, Flood: true, Forward: true, Learn: true})
	bvi := e.loopback()
	bvi2 := e.loopback()
	tap := &tapv2.TapCreateV3Reply{}
	e.ok(&tapv2.TapCreateV3{ID: noIndex}, tap)
	vx := &vxlan.VxlanAddDelTunnelV3Reply{}
	e.ok(&vxlan.VxlanAddDelTunnelV3{IsAdd: true, Instance: noIndex, SrcAddress: addr("1.1.1.1"), DstAddress: addr("1.1.1.2"), Vni: 10, DecapNextIndex: noIndex}, vx)

	set := func(sw interface_types.InterfaceIndex, bd uint32, pt l2.L2PortType, shg uint8, enable bool) *l2.SwInterfaceSetL2Bridge {
		return &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: sw, BdID: bd, PortType: pt, Shg: shg, Enable: enable}
	}
	tests := []struct {
		name string
		req  *l2.SwInterfaceSetL2Bridge
		want int32
	}{
		{"bvi", set(bvi, 1, l2.L2_API_PORT_TYPE_BVI, 0, true), 0},
		{"second bvi", set(bvi2, 1, l2.L2_API_PORT_TYPE_BVI, 0, true), retvalBDAlreadyHasBVI},
		{"vxlan as bvi", set(vx.SwIfIndex, 3, l2.L2_API_PORT_TYPE_BVI, 0, true), retvalNonEthernet},
		{"vxlan member with shg", set(vx.SwIfIndex, 1, l2.L2_API_PORT_TYPE_NORMAL, 1, true), 0},
		{"unknown interface", set(88, 1, l2.L2_API_PORT_TYPE_NORMAL, 0, true), retvalInvalidSwIfIndex},
		{"bd 0", set(tap.SwIfIndex, 0, l2.L2_API_PORT_TYPE_NORMAL, 0, true), retvalBDNotModifiable},
		{"implicitly created bd", set(tap.SwIfIndex, 5, l2.L2_API_PORT_TYPE_NORMAL, 0, true), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { e.expect(tc.want, tc.req) })
	}
	bd1 := dump[l2.BridgeDomainDetails](t, e.ch, &l2.BridgeDomainDump{BdID: 1, SwIfIndex: allIfaces})[0]
	if bd1.BviSwIfIndex != bvi || bd1.NSwIfs != 2 || bd1.SwIfDetails[0].SwIfIndex != bvi ||
		bd1.SwIfDetails[1].SwIfIndex != vx.SwIfIndex || bd1.SwIfDetails[1].Shg != 1 {
		t.Errorf("bd 1 = %+v", bd1)
	}
	bd5 := dump[l2.BridgeDomainDetails](t, e.ch, &l2.BridgeDomainDump{BdID: noIndex, SwIfIndex: tap.SwIfIndex})
	if len(bd5) != 1 || bd5[0].BdID != 5 || !bd5[0].Flood || !bd5[0].Learn {
		t.Errorf("implicit bd 5 = %+v", bd5)
	}
	e.expect(retvalBDInUse, &l2.BridgeDomainAddDel{IsAdd: false, BdID: 1})

	// The BVI's MAC is a static BVI entry of the L2 FIB.
	fib := dump[l2.L2FibTableDetails](t, e.ch, &l2.L2FibTableDump{BdID: 1})
	bviIf, _ := e.sim.InterfaceByName("loop0")
	if len(fib) != 1 || !fib[0].BviMac || !fib[0].StaticMac || fib[0].SwIfIndex != bvi || fib[0].Mac.String() != bviIf.MAC.String() {
		t.Errorf("l2fib of bd 1: %+v", fib)
	}
	fibReq := func(isAdd bool, bd uint32, m string, sw interface_types.InterfaceIndex) *l2.L2fibAddDel {
		return &l2.L2fibAddDel{IsAdd: isAdd, BdID: bd, Mac: mac(m), SwIfIndex: sw, StaticMac: true}
	}
	e.ok(fibReq(true, 1, "02:00:00:00:00:01", vx.SwIfIndex))
	e.expect(retvalNoSuchEntry, fibReq(true, 9, "02:00:00:00:00:02", vx.SwIfIndex))
	e.expect(retvalInvalidSwIfIndex, fibReq(true, 1, "02:00:00:00:00:03", bvi2)) // not in bridge mode
	e.expect(retvalNoSuchEntry, fibReq(false, 1, "02:00:00:00:00:04", vx.SwIfIndex))
	if n := len(dump[l2.L2FibTableDetails](t, e.ch, &l2.L2FibTableDump{BdID: noIndex})); n != 2 {
		t.Errorf("l2fib has %d entries, want 2", n)
	}
	e.ok(fibReq(false, 1, "02:00:00:00:00:01", vx.SwIfIndex))

	// Removing the BVI removes its FIB entry; then the BD can be emptied
	// and deleted.
	e.ok(set(bvi, 1, l2.L2_API_PORT_TYPE_BVI, 0, false))
	e.ok(set(vx.SwIfIndex, 1, 0, 0, false))
	if n := len(e.sim.L2FIB()); n != 0 {
		t.Errorf("l2fib entries left: %+v", e.sim.L2FIB())
	}
	e.ok(&l2.BridgeDomainAddDel{IsAdd: false, BdID: 1})
	// Deleting an interface removes it from its bridge domain.
	e.ok(&tapv2.TapDeleteV2{SwIfIndex: tap.SwIfIndex})
	if bds := e.sim.BridgeDomains(); len(bds) != 1 || len(bds[0].Members) != 0 {
		t.Errorf("bridge domains after tap deletion: %+v", bds)
	}
}
