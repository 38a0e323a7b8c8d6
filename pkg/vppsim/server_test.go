package vppsim

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/codec"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

func TestHandshakeAnnouncesEveryRegisteredMessage(t *testing.T) {
	e := newEnv(t)
	client := socketclient.NewVppClient(e.sock)
	if err := client.Connect(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer client.Disconnect()

	if id, err := client.GetMsgID("sockclnt_create", (&memclnt.SockclntCreate{}).GetCrcString()); err != nil || id != sockclntCreateID {
		t.Errorf("sockclnt_create has ID %d (%v), want %d", id, err, sockclntCreateID)
	}
	seen := map[uint16]string{}
	n := 0
	for _, msgs := range api.GetRegisteredMessages() {
		for key, m := range msgs {
			id, err := client.GetMsgID(m.GetMessageName(), m.GetCrcString())
			if err != nil {
				t.Fatalf("message %s is not in the table: %v", key, err)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("ID %d used by %s and %s", id, other, key)
			}
			seen[id] = key
			n++
		}
	}
	if n < 1500 {
		t.Fatalf("only %d messages registered; binapi packages missing?", n)
	}
}

func TestChannelCompatibilityCheckPassesForImplementedMessages(t *testing.T) {
	e := newEnv(t)
	var msgs []api.Message
	for _, name := range e.sim.ImplementedMessages() {
		info := e.sim.table.byName[name]
		msgs = append(msgs, info.newMsg())
		if info.reply != nil {
			msgs = append(msgs, info.reply.newMsg())
		}
		if info.details != nil {
			msgs = append(msgs, info.details.newMsg())
		}
	}
	if len(msgs) < 150 {
		t.Fatalf("only %d messages implemented", len(msgs))
	}
	if err := e.ch.CheckCompatiblity(msgs...); err != nil {
		t.Fatalf("CheckCompatiblity: %v", err)
	}
	want := []string{
		"control_ping", "show_version", "cli_inband", "create_loopback", "create_loopback_instance", "delete_loopback",
		"tap_create_v3", "tap_create_v2", "tap_delete_v2", "sw_interface_tap_v2_dump", "af_packet_create_v3",
		"af_packet_delete", "af_packet_dump", "vxlan_add_del_tunnel_v3", "vxlan_tunnel_v2_dump", "sw_interface_set_flags",
		"sw_interface_add_del_address", "sw_interface_set_table", "sw_interface_get_table", "sw_interface_set_unnumbered",
		"ip_unnumbered_dump", "sw_interface_set_mac_address", "sw_interface_set_mtu", "hw_interface_set_mtu",
		"sw_interface_set_rx_mode", "sw_interface_tag_add_del", "sw_interface_dump", "ip_address_dump",
		"want_interface_events", "dhcp_client_config", "ip_table_add_del", "ip_table_dump", "ip_route_add_del",
		"ip_route_add_del_v2", "ip_route_dump", "ip_route_v2_dump", "ip_neighbor_add_del", "ip_neighbor_dump",
		"ip_neighbor_config", "proxy_arp_add_del", "proxy_arp_intfc_enable_disable", "proxy_arp_dump",
		"proxy_arp_intfc_dump", "bridge_domain_add_del_v2", "bridge_domain_add_del", "bridge_domain_dump",
		"sw_interface_set_l2_bridge", "l2fib_add_del", "l2_fib_table_dump", "nat44_ed_plugin_enable_disable",
		"nat44_forwarding_enable_disable", "nat44_add_del_address_range", "nat44_address_dump",
		"nat44_interface_add_del_feature", "nat44_interface_dump", "nat44_ed_add_del_output_interface",
		"nat44_ed_output_interface_get", "nat44_add_del_static_mapping_v2", "nat44_add_del_static_mapping",
		"nat44_static_mapping_dump", "nat44_add_del_lb_static_mapping", "nat44_lb_static_mapping_dump",
		"nat44_add_del_identity_mapping", "nat44_identity_mapping_dump", "nat44_user_dump", "nat44_user_session_dump",
		"nat44_user_session_v2_dump", "nat44_user_session_v3_dump", "nat44_del_session",
	}
	impl := map[string]bool{}
	for _, n := range e.sim.ImplementedMessages() {
		impl[n] = true
	}
	for _, n := range want {
		if !impl[n] {
			t.Errorf("%s is not implemented", n)
		}
	}
}

func TestControlPingAndShowVersion(t *testing.T) {
	e := newEnv(t)
	ping := &memclnt.ControlPingReply{}
	e.ok(&memclnt.ControlPing{}, ping)
	if ping.VpePID != uint32(os.Getpid()) || ping.ClientIndex&sockRegHandleBit == 0 {
		t.Errorf("control_ping_reply = %+v", ping)
	}
	ver := &vpe.ShowVersionReply{}
	e.ok(&vpe.ShowVersion{}, ver)
	if ver.Program != "vpe" || ver.Version != "25.10-release" {
		t.Errorf("show_version_reply = %+v", ver)
	}
	th := &vlib.ShowThreadsReply{}
	e.ok(&vlib.ShowThreads{}, th)
	if th.Count != 1 || th.ThreadData[0].Name != "vpp_main" {
		t.Errorf("show_threads_reply = %+v", th)
	}
}

func TestUnimplementedRequestGetsUnimplementedRetval(t *testing.T) {
	e := newEnv(t)
	e.expect(retvalUnimplemented, &memif.MemifCreate{})
	e.expect(retvalUnimplemented, &memif.MemifSocketFilenameAddDel{})
	// A dump the simulator does not implement returns no details, and the
	// control_ping still ends it.
	if got := dump[memif.MemifDetails](t, e.ch, &memif.MemifDump{}); len(got) != 0 {
		t.Fatalf("memif_dump returned %d details", len(got))
	}
	// The connection still works.
	e.ok(&memclnt.ControlPing{})
}

func TestMultipleClientsShareState(t *testing.T) {
	e := newEnv(t)
	_, ch2 := e.connect()
	_, ch3 := e.connect()
	const perClient = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*perClient)
	for _, ch := range []api.Channel{ch2, ch3} {
		wg.Add(1)
		go func(ch api.Channel) {
			defer wg.Done()
			for range perClient {
				rep := &interfaces.CreateLoopbackReply{}
				if err := ch.SendRequest(&interfaces.CreateLoopback{}).ReceiveReply(rep); err != nil {
					errs <- err
				}
			}
		}(ch)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create_loopback: %v", err)
	}
	if n := e.sim.ClientCount(); n != 3 {
		t.Errorf("ClientCount = %d, want 3", n)
	}
	names := map[string]bool{}
	for _, d := range dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces}) {
		names[d.InterfaceName] = true
	}
	for i := range 2 * perClient {
		if !names["loop"+utoa(uint32(i))] {
			t.Errorf("loop%d missing from the dump of the first client", i)
		}
	}
}

func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	e := newEnv(t)
	ch, err := e.conn.NewAPIChannelBuffered(1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.SetReplyTimeout(5 * time.Second)
	const n = 500
	ctxs := make([]api.RequestCtx, n)
	for i := range n {
		ctxs[i] = ch.SendRequest(&interfaces.CreateLoopbackInstance{IsSpecified: true, UserInstance: uint32(i)})
	}
	for i, c := range ctxs {
		rep := &interfaces.CreateLoopbackInstanceReply{}
		if err := c.ReceiveReply(rep); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := e.sim.MessageCount("create_loopback_instance"); got != n {
		t.Errorf("MessageCount = %d, want %d", got, n)
	}
}

// rawClient speaks the socket protocol by hand to test what govpp cannot.
type rawClient struct {
	t     *testing.T
	c     net.Conn
	r     *bufio.Reader
	index uint32
	table *msgTable
}

func dialRaw(t *testing.T, e *testEnv) *rawClient {
	t.Helper()
	c, err := net.Dial("unix", e.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{t: t, c: c, r: bufio.NewReader(c), table: e.sim.table}
	data, err := codec.EncodeMsg(&memclnt.SockclntCreate{Name: "raw"}, sockclntCreateID)
	if err != nil {
		t.Fatal(err)
	}
	rc.write(data)
	reply := &memclnt.SockclntCreateReply{}
	if err := codec.DecodeMsg(rc.read(time.Second), reply); err != nil {
		t.Fatal(err)
	}
	rc.index = reply.Index
	return rc
}

func (rc *rawClient) write(payload []byte) {
	var hdr [16]byte
	binary.BigEndian.PutUint32(hdr[8:12], uint32(len(payload)))
	if _, err := rc.c.Write(append(hdr[:], payload...)); err != nil {
		rc.t.Fatal(err)
	}
}

// read returns the next message payload, or nil on timeout.
func (rc *rawClient) read(timeout time.Duration) []byte {
	_ = rc.c.SetReadDeadline(time.Now().Add(timeout))
	var hdr [16]byte
	if _, err := io.ReadFull(rc.r, hdr[:]); err != nil {
		return nil
	}
	buf := make([]byte, binary.BigEndian.Uint32(hdr[8:12]))
	if _, err := io.ReadFull(rc.r, buf); err != nil {
		return nil
	}
	return buf
}

func (rc *rawClient) request(m api.Message, index, context uint32) {
	info := rc.table.byName[m.GetMessageName()]
	data, err := codec.EncodeMsg(m, info.id)
	if err != nil {
		rc.t.Fatal(err)
	}
	binary.BigEndian.PutUint32(data[2:6], index)
	binary.BigEndian.PutUint32(data[6:10], context)
	rc.write(data)
}

func TestRawProtocolDetails(t *testing.T) {
	e := newEnv(t)
	rc := dialRaw(t, e)

	// The reply echoes the request's context.
	rc.request(&memclnt.ControlPing{}, rc.index, 0xabcdef)
	reply := rc.read(time.Second)
	if reply == nil || binary.BigEndian.Uint16(reply[0:2]) != e.sim.table.byName["control_ping_reply"].id ||
		binary.BigEndian.Uint32(reply[2:6]) != 0xabcdef {
		t.Fatalf("control_ping reply % x", reply)
	}

	// A request with another client's index is dropped, as VPP drops it.
	rc.request(&memclnt.ControlPing{}, rc.index+1, 7)
	if got := rc.read(200 * time.Millisecond); got != nil {
		t.Fatalf("request with a foreign client_index was answered: % x", got)
	}

	// Unknown message IDs and truncated requests are dropped; the
	// connection stays usable.
	rc.write([]byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	rc.write([]byte{0, byte(e.sim.table.byName["sw_interface_set_flags"].id)})
	rc.request(&memclnt.ControlPing{}, rc.index, 8)
	if got := rc.read(time.Second); got == nil || binary.BigEndian.Uint32(got[2:6]) != 8 {
		t.Fatalf("connection broken after bad messages: % x", got)
	}

	// sockclnt_delete is answered and the socket closed.
	rc.request(&memclnt.SockclntDelete{Index: rc.index}, rc.index, 124)
	if got := rc.read(time.Second); got == nil || binary.BigEndian.Uint16(got[0:2]) != e.sim.table.byName["sockclnt_delete_reply"].id {
		t.Fatalf("sockclnt_delete reply % x", got)
	}
	if got := rc.read(time.Second); got != nil {
		t.Fatalf("socket still open after sockclnt_delete")
	}
}

func TestFailMessageOnceNTimesAlwaysAndClear(t *testing.T) {
	e := newEnv(t)
	req := &interfaces.CreateLoopback{}
	tests := []struct {
		name  string
		times int
		want  []int32
	}{
		{"once", 1, []int32{-13, 0, 0}},
		{"twice", 2, []int32{-13, -13, 0}},
		{"always", 0, []int32{-13, -13, -13}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.sim.FailMessage("create_loopback", -13, tc.times); err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				if got := e.rv(req); got != want {
					t.Fatalf("call %d: retval %d, want %d", i, got, want)
				}
			}
			if err := e.sim.FailMessage("create_loopback", 0, 0); err != nil {
				t.Fatal(err)
			}
			e.expect(0, req)
		})
	}
	// A failed request changes nothing.
	before := len(e.sim.Interfaces())
	_ = e.sim.FailMessage("create_loopback_"+(&interfaces.CreateLoopback{}).GetCrcString(), -1, 1)
	e.expect(-1, req)
	if after := len(e.sim.Interfaces()); after != before {
		t.Errorf("failed create_loopback created an interface")
	}
	// A failed dump sends no details.
	_ = e.sim.FailMessage("sw_interface_dump", -1, 1)
	if got := dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces}); len(got) != 0 {
		t.Errorf("failed dump returned %d details", len(got))
	}
	if err := e.sim.FailMessage("no_such_message", -1, 0); err == nil {
		t.Error("FailMessage accepted an unknown message")
	}
	if err := e.sim.FailMessage("create_loopback_reply", -1, 0); err == nil {
		t.Error("FailMessage accepted a reply")
	}
}

func TestDelayMessage(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.DelayMessage("show_version", 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.ok(&vpe.ShowVersion{})
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("delayed request answered after %v", d)
	}
	e.ch.SetReplyTimeout(50 * time.Millisecond)
	if err := e.ch.SendRequest(&vpe.ShowVersion{}).ReceiveReply(&vpe.ShowVersionReply{}); err == nil {
		t.Error("delayed request did not time out")
	}
	e.sim.ClearFaults()
	time.Sleep(200 * time.Millisecond) // real time: the late reply, sent 150 ms after its request, arrives and is discarded
	e.ch.SetReplyTimeout(2 * time.Second)
	start = time.Now()
	e.ok(&vpe.ShowVersion{})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("request still delayed after ClearFaults: %v", d)
	}
}

// waitState waits for a connection state event.
func waitState(t *testing.T, events chan core.ConnectionEvent, want core.ConnectionState) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v event", want)
		}
	}
}

func TestDropConnectionsAndReconnectKeepsState(t *testing.T) {
	e := newEnv(t)
	lo := e.loopback()
	conn, events, err := core.AsyncConnect(socketclient.NewVppClient(e.sock), 10, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	waitState(t, events, core.Connected)

	e.sim.DropConnections()
	waitState(t, events, core.Disconnected)
	waitState(t, events, core.Connected)

	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.SetReplyTimeout(2 * time.Second)
	got := dump[interfaces.SwInterfaceDetails](t, ch, &interfaces.SwInterfaceDump{SwIfIndex: lo})
	if len(got) != 1 || got[0].InterfaceName != "loop0" {
		t.Fatalf("loopback lost after dropped connections: %+v", got)
	}
}

func TestRestartResetsStateAndDropsClients(t *testing.T) {
	e := newEnv(t)
	e.loopback()
	e.ok(&nat44_ed.Nat44EdPluginEnableDisable{Enable: true})
	conn, events, err := core.AsyncConnect(socketclient.NewVppClient(e.sock), 10, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	waitState(t, events, core.Connected)
	tableBefore := len(e.sim.table.entries)

	e.sim.Restart()
	waitState(t, events, core.Disconnected)
	waitState(t, events, core.Connected)

	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ch.SetReplyTimeout(2 * time.Second)
	var names []string
	for _, d := range dump[interfaces.SwInterfaceDetails](t, ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces}) {
		names = append(names, d.InterfaceName)
	}
	if strings.Join(names, ",") != "local0,"+nic1+","+nic2 {
		t.Fatalf("interfaces after restart: %v", names)
	}
	if e.sim.NAT().Enabled {
		t.Error("NAT still enabled after restart")
	}
	if len(e.sim.table.entries) != tableBefore {
		t.Error("message table changed")
	}
	// The old connection of the test env was dropped too.
	if err := e.ch.SendRequest(&memclnt.ControlPing{}).ReceiveReply(&memclnt.ControlPingReply{}); err == nil {
		t.Error("old client still served after restart")
	}
}

func TestMessageCounts(t *testing.T) {
	e := newEnv(t)
	e.sim.ResetMessageCounts()
	for range 3 {
		e.ok(&vpe.ShowVersion{})
	}
	dump[interfaces.SwInterfaceDetails](t, e.ch, &interfaces.SwInterfaceDump{SwIfIndex: allIfaces})
	if got := e.sim.MessageCount("show_version"); got != 3 {
		t.Errorf("show_version count %d", got)
	}
	counts := e.sim.MessageCounts()
	if counts["sw_interface_dump"] != 1 || counts["show_version"] != 3 {
		t.Errorf("counts %v", counts)
	}
	if total := e.sim.TotalMessageCount(); total != 4 {
		t.Errorf("TotalMessageCount = %d, want 4 (pings excluded)", total)
	}
}

func TestFaultSpecParsing(t *testing.T) {
	tests := []struct {
		spec    string
		name    string
		rv      int32
		times   int
		wantErr bool
	}{
		{"ip_route_add_del=-3", "ip_route_add_del", -3, 0, false},
		{"tap_create_v3=-13:2", "tap_create_v3", -13, 2, false},
		{"x", "", 0, 0, true},
		{"x=abc", "", 0, 0, true},
		{"x=-1:0", "", 0, 0, true},
	}
	for _, tc := range tests {
		name, rv, times, err := ParseFailSpec(tc.spec)
		if (err != nil) != tc.wantErr || name != tc.name || rv != tc.rv || times != tc.times {
			t.Errorf("ParseFailSpec(%q) = %q %d %d %v", tc.spec, name, rv, times, err)
		}
	}
	if name, d, err := ParseDelaySpec("sw_interface_dump=200ms"); err != nil || name != "sw_interface_dump" || d != 200*time.Millisecond {
		t.Errorf("ParseDelaySpec = %q %v %v", name, d, err)
	}
	if _, _, err := ParseDelaySpec("x=soon"); err == nil {
		t.Error("ParseDelaySpec accepted a bad duration")
	}
}

func TestNewRejectsBadNICs(t *testing.T) {
	for _, nics := range [][]string{{""}, {"a", "a"}, {"local0"}} {
		if _, err := New(Options{NICs: nics}); err == nil {
			t.Errorf("New accepted NICs %q", nics)
		}
	}
}

func TestCloseStopsEverything(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.sock); !os.IsNotExist(err) {
		t.Errorf("socket still exists after Close: %v", err)
	}
	if err := e.sim.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := e.sim.Start(); err == nil {
		t.Error("Start after Close succeeded")
	}
}

func TestCloseEndsAllGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := New(Options{SocketPath: sock})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sim.DelayMessage("control_ping", time.Hour); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, sim: sim, sock: sock}
	for range 3 {
		rc := dialRaw(t, e)
		rc.request(&memclnt.ControlPing{}, rc.index, 1) // parks the connection in a delay
	}
	testkit.EventuallyTrue(t, 2*time.Second, "3 clients", func() bool { return sim.ClientCount() == 3 })
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Second, "the goroutines of before", func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines after Close, %d before", n, before)
		}
		return nil
	})
}
