package main

import (
	"strings"
	"testing"

	ctlapi "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

type recordingLoop struct{ events []ctlapi.Event }

func (l *recordingLoop) PushEvent(ev ctlapi.Event) error {
	l.events = append(l.events, ev)
	return nil
}

// TestVPPReconnectPushesHealingFullResync: govppmux's OnReconnect, as wired here,
// asks the controller for a healing full resync.
func TestVPPReconnectPushesHealingFullResync(t *testing.T) {
	loop := &recordingLoop{}
	if err := resyncOnVPPReconnect(loop)(); err != nil {
		t.Fatal(err)
	}
	if len(loop.events) != 1 {
		t.Fatalf("pushed %d events, want 1", len(loop.events))
	}
	ev, ok := loop.events[0].(*ctlapi.HealingResync)
	if !ok || ev.Type != ctlapi.AfterError || ev.Error == nil || !strings.Contains(ev.Error.Error(), "VPP reconnected") {
		t.Fatalf("pushed %v", loop.events[0])
	}
	if ev.Method() != ctlapi.FullResync {
		t.Errorf("healing resync method %v, want full resync", ev.Method())
	}
}
