package contivconf

import (
	"context"
	"fmt"
	"net"
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

// stolenInfo converts a record: its link, MAC and addresses, the gateway of its default
// route of the first address's family, and its other routes (that default route left
// out: the gateway stands for it; the other family's default route is kept).
func stolenInfo(rec *stn.Record) *StolenInterfaceInfo {
	info := &StolenInterfaceInfo{IPAddresses: rec.IPs(), LinkName: rec.Link}
	if mac, err := net.ParseMAC(rec.MAC); err == nil {
		info.MAC = mac
	}
	if len(info.IPAddresses) > 0 {
		info.DefaultGW = rec.DefaultGateway(info.IPAddresses[0].IP)
	}
	for _, rt := range rec.Routes {
		_, dst, err := net.ParseCIDR(rt.Dst)
		if err != nil {
			continue // Validate refuses such records
		}
		if rt.Table != 0 && rt.Table != mainRouteTable {
			continue // other tables are policy routing, which the host keeps to itself
		}
		if ones, _ := dst.Mask.Size(); ones == 0 && (len(info.IPAddresses) == 0 ||
			(dst.IP.To4() != nil) == (info.IPAddresses[0].IP.To4() != nil)) {
			continue // DefaultGW
		}
		info.Routes = append(info.Routes, &StolenRoute{Dst: dst, Gw: normalizeIP(net.ParseIP(rt.Gw))})
	}
	return info
}

// mainRouteTable is Linux's main routing table (RT_TABLE_MAIN).
const mainRouteTable = 254

// clone returns a deep copy (nil stays nil).
func (i *StolenInterfaceInfo) clone() *StolenInterfaceInfo {
	if i == nil {
		return nil
	}
	out := &StolenInterfaceInfo{DefaultGW: cloneIP(i.DefaultGW), PCIAddress: i.PCIAddress,
		KernelDriver: i.KernelDriver, LinkName: i.LinkName, MAC: append(net.HardwareAddr(nil), i.MAC...)}
	for _, a := range i.IPAddresses {
		out.IPAddresses = append(out.IPAddresses, cloneIPNet(a))
	}
	for _, rt := range i.Routes {
		out.Routes = append(out.Routes, &StolenRoute{Dst: cloneIPNet(rt.Dst), Gw: cloneIP(rt.Gw)})
	}
	return out
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
