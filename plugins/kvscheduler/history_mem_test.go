package kvscheduler

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// TestHistoryKeepsSupersededValuesWithinItsBound: every update's record refers to the
// previous value, which nothing else keeps alive once superseded. The heap the history
// retains that way stays within TransactionHistoryMaxBytes, though values of many small
// messages (a DNAT's local IPs) take six times their encoded size (bounded by encoded
// size, it held twice its bound here, and six times with more history).
func TestHistoryKeepsSupersededValuesWithinItsBound(t *testing.T) {
	const maxBytes = 4 << 20
	cfg := DefaultConfig()
	cfg.PrintTxnSummary = false
	cfg.TransactionHistoryMaxBytes = maxBytes
	noop := &api.KVDescriptor{
		Name:        "v",
		KeySelector: func(k string) bool { return strings.HasPrefix(k, "v/") },
		Create:      func(string, proto.Message) (api.Metadata, error) { return nil, nil },
		Update:      func(string, proto.Message, proto.Message, api.Metadata) (api.Metadata, error) { return nil, nil },
		Delete:      func(string, proto.Message, api.Metadata) error { return nil },
	}
	s := newTestScheduler(t, &cfg, noop)
	value := func(gen int) proto.Message { // a NodePort service's DNAT, 21 mappings
		d := &nat.DNat44{Label: fmt.Sprint(gen)}
		for m := range 21 {
			sm := &nat.DNat44_StaticMapping{ExternalIp: fmt.Sprintf("10.20.0.%d", m), ExternalPort: 30000, TwiceNat: nat.DNat44_StaticMapping_SELF}
			for l := range 10 {
				sm.LocalIps = append(sm.LocalIps, &nat.DNat44_StaticMapping_LocalIP{LocalIp: fmt.Sprintf("10.1.%d.%d", l, gen%250), LocalPort: 8080, Probability: 1})
			}
			d.StMappings = append(d.StMappings, sm)
		}
		return d
	}
	commit := func(gen int) {
		if _, err := s.StartNBTransaction().SetValue("v/a", value(gen)).Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	commit(0)
	before := heapInUse()
	for gen := 1; gen <= 2000; gen++ {
		commit(gen)
	}
	retained := int64(heapInUse()) - int64(before)
	if retained > maxBytes {
		t.Errorf("the history retains %d bytes of superseded values, want at most %d", retained, maxBytes)
	}
	runtime.KeepAlive(s)
}
