package contivconf

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
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
