package natplugin

import (
	"testing"

	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// runningTimeouts returns the timeouts VPP reports in its running configuration.
func runningTimeouts(t *testing.T, e *env) nat_types.NatTimeouts {
	t.Helper()
	rc := &nat44_ed.Nat44ShowRunningConfigReply{}
	if err := e.ch.SendRequest(&nat44_ed.Nat44ShowRunningConfig{}).ReceiveReply(rc); err != nil {
		t.Fatal(err)
	}
	return rc.Timeouts
}

// TestNat44GlobalTimeoutsAreSetReadBackAndRestored: a value with tcp_transitory 1 s
// sets VPP's timeouts, the other fields at VPP's defaults (0 is never sent); a
// restarted agent reads back NB's value; an update sends nat_set_timeouts only when
// the timeouts change; deleting the value restores the defaults.
func TestNat44GlobalTimeoutsAreSetReadBackAndRestored(t *testing.T) {
	e := newEnv(t)
	g := &nat.Nat44Global{Forwarding: true, Timeouts: &nat.Timeouts{TcpTransitory: 1}}
	applyGlobal(t, e, g)
	want := nat_types.NatTimeouts{UDP: 300, TCPEstablished: 7440, TCPTransitory: 1, ICMP: 60}
	if got := runningTimeouts(t, e); got != want {
		t.Fatalf("VPP's timeouts %+v, want %+v", got, want)
	}
	expectRetrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), map[string]proto.Message{nat.GlobalNAT44Key: g})
	got := retrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), nil)[nat.GlobalNAT44Key].Value
	if tm := got.(*nat.Nat44Global).GetTimeouts(); tm.GetTcpTransitory() != 1 || tm.GetUdp() != 300 {
		t.Errorf("retrieved without NB: timeouts %v", tm)
	}

	gd := NewNat44GlobalDescriptor(e.deps())
	same := &nat.Nat44Global{Forwarding: true, Timeouts: &nat.Timeouts{Udp: 300, TcpTransitory: 1}}
	if !EquivalentNat44Global(g, same) {
		t.Error("a field at its default value compared unlike the same field left 0")
	}
	e.sim.ResetMessageCounts()
	if _, err := gd.Update(nat.GlobalNAT44Key, g, same, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.MessageCount("nat_set_timeouts"); n != 0 {
		t.Errorf("unchanged timeouts sent %d nat_set_timeouts", n)
	}
	if err := gd.Delete(nat.GlobalNAT44Key, same, nil); err != nil {
		t.Fatal(err)
	}
	if got := runningTimeouts(t, e); got != defaultTimeouts {
		t.Errorf("after delete VPP's timeouts %+v, want the defaults", got)
	}
	if got := retrieved(t, NewNat44GlobalDescriptor(e.freshDeps()), nil); len(got) != 0 {
		t.Errorf("default timeouts retrieved as configuration: %v", got)
	}
}

func TestNat44GlobalTimeoutsValidated(t *testing.T) {
	for _, tt := range []struct {
		name  string
		t     *nat.Timeouts
		field string
	}{
		{"defaults", &nat.Timeouts{}, ""},
		{"largest", &nat.Timeouts{Udp: MaxTimeout, TcpEstablished: MaxTimeout, TcpTransitory: MaxTimeout, Icmp: MaxTimeout}, ""},
		{"udp", &nat.Timeouts{Udp: MaxTimeout + 1}, "timeouts.udp"},
		{"tcp established", &nat.Timeouts{TcpEstablished: ^uint32(0)}, "timeouts.tcp_established"},
		{"tcp transitory", &nat.Timeouts{TcpTransitory: ^uint32(0)}, "timeouts.tcp_transitory"},
		{"icmp", &nat.Timeouts{Icmp: ^uint32(0)}, "timeouts.icmp"},
	} {
		t.Run(tt.name, func(t *testing.T) { checkInvalid(t, ValidateNat44Global(&nat.Nat44Global{Timeouts: tt.t}), tt.field) })
	}
}
