package vppsim

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/dhcp"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"go.fd.io/govpp/binapi/vlib"
)

func TestDHCPClientAndLeaseEvent(t *testing.T) {
	e := newEnv(t)
	events := make(chan api.Message, 4)
	sub, err := e.ch.SubscribeNotification(events, &dhcp.DHCPComplEvent{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	cfg := &dhcp.DHCPClientConfig{IsAdd: true, Client: dhcp.DHCPClient{SwIfIndex: 1, Hostname: "node1", WantDHCPEvent: true, PID: 99}}
	e.ok(cfg)
	e.expect(retvalInvalidValue, cfg)
	e.expect(retvalInvalidSwIfIndex, &dhcp.DHCPClientConfig{IsAdd: true, Client: dhcp.DHCPClient{SwIfIndex: 50}})
	e.expect(retvalNoSuchEntry, &dhcp.DHCPClientConfig{IsAdd: false, Client: dhcp.DHCPClient{SwIfIndex: 2}})
	got := dump[dhcp.DHCPClientDetails](t, e.ch, &dhcp.DHCPClientDump{})
	if len(got) != 1 || got[0].Client.Hostname != "node1" || got[0].Lease.State != dhcp.DHCP_CLIENT_STATE_API_DISCOVER {
		t.Fatalf("dhcp clients %+v", got)
	}
	if err := e.sim.PushDHCPLease(2, DHCPLease{Address: netip.MustParsePrefix("192.168.16.5/24")}); err == nil {
		t.Error("lease pushed to an interface without a client")
	}
	lease := DHCPLease{Address: netip.MustParsePrefix("192.168.16.5/24"), Router: netip.MustParseAddr("192.168.16.1")}
	if err := e.sim.PushDHCPLease(1, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-events:
		ev := m.(*dhcp.DHCPComplEvent)
		if ev.PID != 99 || ev.Lease.State != dhcp.DHCP_CLIENT_STATE_API_BOUND || ev.Lease.HostAddress.String() != "192.168.16.5" ||
			ev.Lease.MaskWidth != 24 || ev.Lease.RouterAddress.String() != "192.168.16.1" {
			t.Errorf("event %+v", ev)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no dhcp_compl_event")
	}
	addrs := dump[ip.IPAddressDetails](t, e.ch, &ip.IPAddressDump{SwIfIndex: 1})
	if len(addrs) != 1 || addrs[0].Prefix.String() != "192.168.16.5/24" {
		t.Errorf("leased address not on the interface: %+v", addrs)
	}
	var dflt *Route
	for _, r := range e.sim.Routes(0, false) {
		if r.Prefix.Bits() == 0 {
			dflt = &r
		}
	}
	if dflt == nil || dflt.Source != "dhcp" || dflt.Paths[0].NextHop.String() != "192.168.16.1" {
		t.Errorf("default route %+v", dflt)
	}
	e.ok(&dhcp.DHCPClientConfig{IsAdd: false, Client: dhcp.DHCPClient{SwIfIndex: 1}})
	if ifc, _ := e.sim.InterfaceByName(nic1); len(ifc.Addresses) != 0 {
		t.Errorf("lease address kept after removing the client: %v", ifc.Addresses)
	}
}

func cli(e *testEnv, cmd string) string {
	e.t.Helper()
	rep := &vlib.CliInbandReply{}
	e.ok(&vlib.CliInband{Cmd: cmd}, rep)
	return rep.Reply
}

func TestCLIInband(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback()
	e.ok(&interfaces.SwInterfaceSetFlags{SwIfIndex: lo, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP})
	if rv := e.addAddr(lo, "192.168.30.1/24"); rv != 0 {
		t.Fatal(rv)
	}
	e.ok(&l2.BridgeDomainAddDel{IsAdd: true, BdID: 1, Flood: true, Forward: true, Learn: true})
	e.ok(&l2.SwInterfaceSetL2Bridge{RxSwIfIndex: lo, BdID: 1, PortType: l2.L2_API_PORT_TYPE_BVI, Enable: true})
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, SwIfIndex: 1})
	e.ok(&nat44_ed.Nat44InterfaceAddDelFeature{IsAdd: true, SwIfIndex: lo, Flags: nat_types.NAT_IS_INSIDE})
	e.ok(&nat44_ed.Nat44AddDelAddressRange{IsAdd: true, FirstIPAddress: ip4("10.0.0.1"), LastIPAddress: ip4("10.0.0.1"), VrfID: noIndex})
	e.ok(static(true, protoTCP, "10.1.1.2", 8080, "10.96.0.10", 80, nat_types.NAT_IS_OUT2IN_ONLY))
	e.ok(&nat44_ed.Nat44AddDelLbStaticMapping{IsAdd: true, Flags: nat_types.NAT_IS_OUT2IN_ONLY, ExternalAddr: ip4("10.96.0.11"),
		ExternalPort: 80, Protocol: protoTCP, LocalNum: 2, Locals: []nat44_ed.Nat44LbAddrPort{
			{Addr: ip4("10.1.1.2"), Port: 8080, Probability: 50}, {Addr: ip4("10.1.1.3"), Port: 8080, Probability: 50}}})

	tests := []struct {
		cmd  string
		want []string
	}{
		{"show version", []string{"vpp v25.10-release"}},
		{"show interface", []string{"Name", "Idx", "MTU (L3/IP4/IP6/MPLS)", "local0", "loop0", nic1, "9000/0/0/0", "  up  "}},
		{"sh int", []string{"loop0"}},
		{"show interface address", []string{"loop0 (up):", "  L2 bridge bd-id 1 idx 1 shg 0 bvi", "  L3 192.168.30.1/24", "local0 (dn):"}},
		{"show ip fib", []string{"ipv4-VRF:0, fib_index:0", "0.0.0.0/0", "dpo-drop ip4", "192.168.30.0/24", "ipv4-glean", "192.168.30.1/32", "dpo-receive: 192.168.30.1 on loop0"}},
		{"show nat44 static mappings", []string{"NAT44 static mappings:", " tcp local 10.1.1.2:8080 external 10.96.0.10:80 vrf 0  out2in-only",
			" tcp external 10.96.0.11:80  out2in-only", "  local 10.1.1.3:8080 vrf 0 probability 50%"}},
		{"show nat44 interfaces", []string{"NAT44 interfaces:", " " + nic1 + " out", " loop0 in"}},
		{"show nat44 addresses", []string{"NAT44 pool addresses:", "10.0.0.1", "  tenant VRF independent", "NAT44 twice-nat pool addresses:"}},
		{"show bridge-domain", []string{"BD-ID", "BVI-Intf", "loop0", "drop"}},
		{"show bridge-domain 1 detail", []string{"Interface", "If-idx", "loop0"}},
		{"show bridge-domain 7", []string{"No operational bridge domain with BD-ID 7"}},
		{"show frobnicator", []string{"show: unknown input `frobnicator'"}},
		{"frobnicate now", []string{"unknown input `frobnicate now'"}},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			out := cli(e, tc.cmd)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q output lacks %q:\n%s", tc.cmd, w, out)
				}
			}
		})
	}
	if out := cli(e, ""); out != "" {
		t.Errorf("empty command printed %q", out)
	}
}
