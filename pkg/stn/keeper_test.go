package stn

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// fakeNIC records the calls of the Keeper.
type fakeNIC struct {
	calls      []string
	restoreErr error
}

func (f *fakeNIC) Capture() (*Record, error) {
	f.calls = append(f.calls, "capture")
	return &Record{Version: RecordVersion, Link: "eth0", Addrs: []Addr{{CIDR: "10.0.0.5/24"}}}, nil
}
func (f *fakeNIC) Steal(*Record) error { f.calls = append(f.calls, "steal"); return nil }
func (f *fakeNIC) Restore(*Record) error {
	f.calls = append(f.calls, "restore")
	return f.restoreErr
}

// vppSwitch is a probe whose answer the test sets.
type vppSwitch struct{ up bool }

func (v *vppSwitch) probe(context.Context) error {
	if v.up {
		return nil
	}
	return errors.New("connection refused")
}

func newTestKeeper(t *testing.T, nic NIC, vpp *vppSwitch) *Keeper {
	log, _ := test.NewNullLogger()
	return &Keeper{NIC: nic, StateFile: filepath.Join(t.TempDir(), "stn.json"), Probe: vpp.probe,
		Interval: 1, DownAfter: 2, Log: log.WithField("test", t.Name())}
}

func TestKeeperStealsWhileVPPIsUpAndGivesBackAfterTwoFailedProbes(t *testing.T) {
	nic, vpp := &fakeNIC{}, &vppSwitch{}
	k := newTestKeeper(t, nic, vpp)
	ctx := context.Background()
	k.Step(ctx)
	if k.Stolen() || len(nic.calls) != 0 {
		t.Fatalf("VPP down at start, nothing recorded: calls %v", nic.calls)
	}
	vpp.up = true
	k.Step(ctx)
	k.Step(ctx)
	if got := nic.calls; len(got) != 2 || got[0] != "capture" || got[1] != "steal" {
		t.Fatalf("VPP up: calls %v, want capture then steal, once", got)
	}
	if r, err := Load(k.StateFile); err != nil || r == nil {
		t.Fatalf("the record is not on disk while the NIC is stolen: %v %v", r, err)
	}
	vpp.up = false
	k.Step(ctx)
	if !k.Stolen() {
		t.Fatal("one failed probe gave the NIC back; DownAfter is 2")
	}
	k.Step(ctx)
	if k.Stolen() || nic.calls[len(nic.calls)-1] != "restore" {
		t.Fatalf("two failed probes: stolen %v, calls %v", k.Stolen(), nic.calls)
	}
	if r, _ := Load(k.StateFile); r != nil {
		t.Fatal("the record outlived the give-back")
	}
	vpp.up = true
	k.Step(ctx)
	if !k.Stolen() {
		t.Fatal("VPP back: NIC not taken again")
	}
}

func TestKeeperKeepsTheRecordWhenRestoreFails(t *testing.T) {
	nic, vpp := &fakeNIC{restoreErr: errors.New("no such link")}, &vppSwitch{up: true}
	k := newTestKeeper(t, nic, vpp)
	ctx := context.Background()
	k.Step(ctx)
	vpp.up = false
	k.Step(ctx)
	k.Step(ctx)
	if !k.Stolen() {
		t.Fatal("a failed restore forgot the record")
	}
	if r, _ := Load(k.StateFile); r == nil {
		t.Fatal("a failed restore removed the record file")
	}
	nic.restoreErr = nil
	k.Step(ctx)
	if k.Stolen() {
		t.Fatal("the next probe did not retry the restore")
	}
}

// A daemon killed while the NIC is stolen leaves its record; the next one gives the
// NIC back at its first probe if VPP is down, or steals again if VPP is up.
func TestKeeperResumesFromTheRecordOfAKilledDaemon(t *testing.T) {
	for _, up := range []bool{false, true} {
		nic, vpp := &fakeNIC{}, &vppSwitch{up: true}
		first := newTestKeeper(t, nic, vpp)
		first.Step(context.Background()) // takes, then "SIGKILL": nothing more runs

		nic2 := &fakeNIC{}
		vpp.up = up
		clk := testkit.NewClock()
		k := &Keeper{NIC: nic2, StateFile: first.StateFile, Probe: vpp.probe, DownAfter: 2, Clock: clk,
			Log: logrus.New()}
		done := make(chan bool, 1)
		k.OnChange = func(stolen bool, err error) {
			if err != nil {
				t.Errorf("change: %v", err)
			}
			done <- stolen
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- k.Run(ctx) }()
		stolen := <-done
		cancel()
		clk.Step(k.Interval)
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		want := "restore"
		if up {
			want = "steal"
		}
		if stolen != up || len(nic2.calls) != 1 || nic2.calls[0] != want {
			t.Errorf("VPP up=%v at restart: stolen=%v calls %v, want one %s at the first probe", up, stolen, nic2.calls, want)
		}
	}
}

func TestKeeperRefusesAnIncompleteConfiguration(t *testing.T) {
	err := (&Keeper{}).Run(context.Background())
	if err == nil {
		t.Fatal("a Keeper without NIC, Probe and StateFile ran")
	}
}

func TestKeeperStoppingGivesTheNICBackOnlyIfVPPIsDown(t *testing.T) {
	for _, up := range []bool{true, false} {
		nic, vpp := &fakeNIC{}, &vppSwitch{up: true}
		clk := testkit.NewClock()
		k := newTestKeeper(t, nic, vpp)
		k.Clock = clk
		changes := make(chan bool, 2)
		k.OnChange = func(stolen bool, _ error) { changes <- stolen }
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- k.Run(ctx) }()
		<-changes // taken
		vpp.up = up
		cancel()
		clk.Step(k.Interval)
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if gaveBack := nic.calls[len(nic.calls)-1] == "restore"; gaveBack == up {
			t.Errorf("VPP up=%v when stopping: calls %v", up, nic.calls)
		}
	}
}
