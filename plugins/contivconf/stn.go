package contivconf

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
)

// DefaultSTNRecordFile is where contiv-stn keeps the record of the stolen NIC (its
// -state-file default) and the default of contiv.conf's stnRecordFile.
const DefaultSTNRecordFile = "/var/lib/contiv/stn.json"

// STNRecordSource is a Deps.GetSTNInfo that reads the record contiv-stn (pkg/stn) keeps
// while it holds the NIC: the NIC's addresses and the gateway of its default route.
// contiv-stn takes the NIC once VPP's API socket answers, so the record may appear
// shortly after the agent starts: the source waits for it up to Wait, checking every
// Interval on Clock.
type STNRecordSource struct {
	// Path is the record file (contiv.conf's stnRecordFile).
	Path string
	// Wait bounds the wait for the record (default 30s); Interval is the time between
	// two reads (default 100ms); Clock defaults to the real clock.
	Wait, Interval time.Duration
	Clock          clock.WithTicker
	// Ctx cancels the wait (default: none).
	Ctx context.Context
}

// GetSTNInfo implements Deps.GetSTNInfo. ifName "" (stealFirstNIC) accepts the
// record's NIC; another name must be the record's.
func (s STNRecordSource) GetSTNInfo(ifName string) (*StolenInterfaceInfo, error) {
	clk, wait, every, ctx := s.Clock, s.Wait, s.Interval, s.Ctx
	if clk == nil {
		clk = clock.RealClock{}
	}
	if wait <= 0 {
		wait = 30 * time.Second
	}
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	if ctx == nil {
		ctx = context.Background()
	}
	deadline := clk.Now().Add(wait)
	t := clk.NewTicker(every)
	defer t.Stop()
	for {
		rec, err := stn.Load(s.Path)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			if ifName != "" && rec.Link != ifName {
				return nil, fmt.Errorf("the STN record %s is of NIC %q, not %q", s.Path, rec.Link, ifName)
			}
			return stolenInfo(rec), nil
		}
		if !clk.Now().Before(deadline) {
			return nil, fmt.Errorf("no STN record at %s after %v: is contiv-stn running, and is VPP up?", s.Path, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C():
		}
	}
}

// stolenInfo converts a record: its addresses, and the gateway of its default route of
// the first address's family.
func stolenInfo(rec *stn.Record) *StolenInterfaceInfo {
	info := &StolenInterfaceInfo{IPAddresses: rec.IPs()}
	if len(info.IPAddresses) > 0 {
		info.DefaultGW = rec.DefaultGateway(info.IPAddresses[0].IP)
	}
	return info
}

// NICToSteal returns what contiv.conf asks the node called nodeName to steal: its
// nodeConfig entry's stealInterface, else the global stealInterface, else, with
// stealFirstNIC, the host's first NIC (link "", firstNIC true). ok is false when the
// node steals nothing. contiv-stn reads it; the agent's resolution follows the same
// order.
func (c *Config) NICToSteal(nodeName string) (link string, firstNIC, ok bool) {
	if nc := c.nodeConfigFor(nodeName); nc != nil && nc.StealInterface != "" {
		return nc.StealInterface, false, true
	}
	if c.StealInterface != "" {
		return c.StealInterface, false, true
	}
	return "", c.StealFirstNIC, c.StealFirstNIC
}
