package contivconf

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
)

func TestSTNRecordSourceWaitsForTheRecordAndConvertsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stn.json")
	clk := testkit.NewClock()
	src := STNRecordSource{Path: path, Wait: time.Minute, Interval: time.Second, Clock: clk}
	type result struct {
		info *StolenInterfaceInfo
		err  error
	}
	done := make(chan result, 1)
	go func() { info, err := src.GetSTNInfo("eth0"); done <- result{info, err} }()
	clk.AwaitWaiters(t, 1)
	rec := &stn.Record{Version: stn.RecordVersion, Link: "eth0", Addrs: []stn.Addr{{CIDR: "192.168.16.5/24"}},
		Routes: []stn.Route{{Dst: "0.0.0.0/0", Gw: "192.168.16.1"}}}
	if err := stn.Save(path, rec); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	r := <-done
	if r.err != nil || len(r.info.IPAddresses) != 1 || r.info.IPAddresses[0].String() != "192.168.16.5/24" || r.info.DefaultGW.String() != "192.168.16.1" {
		t.Fatalf("GetSTNInfo = %+v, %v", r.info, r.err)
	}
	if _, err := src.GetSTNInfo("eth1"); err == nil || !strings.Contains(err.Error(), `NIC "eth0", not "eth1"`) {
		t.Errorf("another NIC's record: %v", err)
	}
}

func TestSTNRecordSourceGivesUpAfterWait(t *testing.T) {
	clk := testkit.NewClock()
	src := STNRecordSource{Path: filepath.Join(t.TempDir(), "none.json"), Wait: 2 * time.Second, Interval: time.Second, Clock: clk}
	done := make(chan error, 1)
	go func() { _, err := src.GetSTNInfo(""); done <- err }()
	for i := 0; i < 2; i++ {
		clk.AwaitWaiters(t, 1)
		clk.Step(time.Second)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "no STN record") {
		t.Fatalf("GetSTNInfo without a record = %v", err)
	}
}

// The agent as assembled (Cell) reads contiv-stn's record at contiv.conf's
// stnRecordFile: the stolen NIC's address becomes the node's main IP and its default
// route's gateway the node's gateway.
func TestTheCellReadsTheSTNRecordAtStnRecordFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node1-stn.json")
	rec := &stn.Record{Version: stn.RecordVersion, Link: "nic0", Addrs: []stn.Addr{{CIDR: "192.168.16.7/24"}},
		Routes: []stn.Route{{Dst: "0.0.0.0/0", Gw: "192.168.16.254"}}}
	if err := stn.Save(path, rec); err != nil {
		t.Fatal(err)
	}
	logs, err := infra.NewLogRegistry(io.Discard, infra.LogFormatText)
	if err != nil {
		t.Fatal(err)
	}
	given := infra.Cell{Name: "given", Provides: []string{infra.LogsKey.String(), infra.ConfigKey("contiv").String(),
		infra.NodeNameKey.String(), DPDKInterfacesKey.String()},
		Build: func(s *infra.Scope) (infra.Plugin, error) {
			infra.Provide(s, infra.LogsKey, logs)
			infra.Provide(s, infra.ConfigKey("contiv"), infra.ConfigLoader(yamlLoader("stealInterface: nic0\nstnRecordFile: "+path+"\n")))
			infra.Provide(s, infra.NodeNameKey, "node1")
			infra.Provide(s, DPDKInterfacesKey, func() ([]string, error) { return []string{"GigabitEthernet0/8/0"}, nil })
			return nil, nil
		}}
	none := func(s *infra.Scope) (infra.Plugin, error) { return nil, nil }
	asm, err := infra.Assemble(given, Cell(), infra.Cell{Name: "kvscheduler", Build: none}, infra.Cell{Name: "nodesync", Build: none})
	if err != nil {
		t.Fatal(err)
	}
	p := asm.Plugins[0].(*Plugin)
	if err := p.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if got := p.GetMainInterfaceConfiguredIPs().String(); got != "192.168.16.7/24" {
		t.Errorf("main IPs %q, want the record's 192.168.16.7/24", got)
	}
	if gw := p.GetStaticDefaultGW(); gw.String() != "192.168.16.254" {
		t.Errorf("default gateway %v, want the record's 192.168.16.254", gw)
	}
}

func TestSTNSettingsWithoutEffectAreWarnedAbout(t *testing.T) {
	for _, tt := range []struct{ conf, want string }{
		{"stealFirstNIC: true\nstealInterface: eth1", `stealFirstNIC is ignored: stealInterface "eth1" names the NIC to steal`},
		{"stnSocketFile: /var/run/contiv/stn.sock", `stnSocketFile ("/var/run/contiv/stn.sock") is deprecated and ignored`},
		{"stnVersion: 2", "stnVersion 2 has no effect: no node steals its NIC"},
	} {
		log, hook := logtest.NewNullLogger()
		if _, err := Parse([]byte(tt.conf), true, log); err != nil {
			t.Errorf("Parse(%q): %v", tt.conf, err)
			continue
		}
		var warnings []string
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel {
				warnings = append(warnings, e.Message)
			}
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], tt.want) {
			t.Errorf("Parse(%q) warned %q, want one warning with %q", tt.conf, warnings, tt.want)
		}
	}
}

// A single-NIC node whose VPP has no DPDK NIC drives the stolen link as af_packet
// (VPP names it host-<link>); a DPDK NIC in VPP (the NIC bound to DPDK) wins.
func TestSTNMainInterfaceIsAFPacketOnTheStolenLinkWithoutDPDK(t *testing.T) {
	info := &StolenInterfaceInfo{IPAddresses: []*net.IPNet{ipNet(t, "10.20.0.5/24")}, LinkName: "ens3",
		MAC: net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}}
	tests := []struct {
		name string
		dpdk []string
		want string
	}{
		{"no DPDK NIC in VPP", nil, "host-ens3"},
		{"a DPDK NIC in VPP", []string{"GigabitEthernet0/8/0"}, "GigabitEthernet0/8/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustInit(t, "stealInterface: ens3", withSTN(info, nil), withDPDK(tt.dpdk...))
			if got := p.GetMainInterfaceName(); got != tt.want {
				t.Errorf("GetMainInterfaceName() = %q, want %q", got, tt.want)
			}
			got := p.GetStolenInterface()
			if got == nil || got.LinkName != "ens3" || got.MAC.String() != "52:54:00:12:34:56" {
				t.Fatalf("GetStolenInterface() = %+v, want link ens3 and its MAC", got)
			}
			got.MAC[0] = 0xff // a copy: the caller may change it
			if p.GetStolenInterface().MAC[0] != 0x52 {
				t.Error("GetStolenInterface returned the plugin's own MAC slice")
			}
		})
	}
	if got := mustInit(t, "").GetStolenInterface(); got != nil {
		t.Errorf("GetStolenInterface() outside STN mode = %+v, want nil", got)
	}
}

// The record's link, MAC and routes reach the agent; default routes stand only as the
// gateway, and routes of other tables (policy routing) stay with the host.
func TestSTNRecordGivesTheLinkMACAndOtherRoutes(t *testing.T) {
	rec := &stn.Record{Version: stn.RecordVersion, Link: "eth0", MAC: "08:00:27:00:00:05",
		Addrs: []stn.Addr{{CIDR: "192.168.16.5/24"}},
		Routes: []stn.Route{
			{Dst: "0.0.0.0/0", Gw: "192.168.16.1"},
			{Dst: "10.50.0.0/16", Gw: "192.168.16.2"},
			{Dst: "172.16.0.0/24"},
			{Dst: "10.60.0.0/16", Gw: "192.168.16.3", Table: 100},
			{Dst: "::/0", Gw: "2001:db8:16::1"},
		}}
	info := stolenInfo(rec)
	var routes []string
	for _, r := range info.Routes {
		routes = append(routes, fmt.Sprintf("%s via %v", r.Dst, r.Gw))
	}
	// The default route of the first address's family is DefaultGW; the other family's
	// stays a route (a dual-stack NIC keeps its IPv6 default route through VPP).
	want := []string{"10.50.0.0/16 via 192.168.16.2", "172.16.0.0/24 via <nil>", "::/0 via 2001:db8:16::1"}
	if info.LinkName != "eth0" || info.MAC.String() != "08:00:27:00:00:05" || !reflect.DeepEqual(routes, want) {
		t.Errorf("stolenInfo = link %q, MAC %v, routes %v; want eth0, 08:00:27:00:00:05, %v", info.LinkName, info.MAC, routes, want)
	}
}
