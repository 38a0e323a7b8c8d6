package l3plugin

import (
	"fmt"

	"go.fd.io/govpp/binapi/ip_neighbor"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// IPScanNeighborDescriptorName names the descriptor of IP neighbor aging.
const IPScanNeighborDescriptorName = "vpp-ip-scan-neighbor"

// VPP 19.x's neighbor scan defaults, used where the value leaves a field 0.
const (
	defaultScanIntervalMin   = 1 // scan_interval
	defaultStaleThresholdMin = 4 // stale_threshold
)

// ipScanDescriptor implements the callbacks of the IPScanNeighbor
// descriptor: VPP 25.10's neighbor aging (ip_neighbor_config) stands in for
// the removed neighbor scan, as the package documentation explains.
type ipScanDescriptor struct {
	base
}

// NewIPScanNeighborDescriptor returns the descriptor of the global
// IPScanNeighbor value, mapped onto VPP's neighbor aging (see the package
// documentation and NeighborAging).
func NewIPScanNeighborDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &ipScanDescriptor{base: vppbase.NewDescriptor(deps, IPScanNeighborDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.IPScanNeighbor, kvapi.Metadata]{
		Name:        IPScanNeighborDescriptorName,
		NBKeyPrefix: l3.IPScanNeighborKey,
		KeySelector: func(key string) bool { return key == l3.IPScanNeighborKey },
		ValueComparator: func(_ string, a, b *l3.IPScanNeighbor) bool {
			return NeighborAging(a) == NeighborAging(b)
		},
		Validate: func(_ string, v *l3.IPScanNeighbor) error { return ValidateIPScanNeighbor(v) },
		Create: func(_ string, v *l3.IPScanNeighbor) (kvapi.Metadata, error) {
			return nil, d.apply(NeighborAging(v), "set")
		},
		Update: func(_ string, _, v *l3.IPScanNeighbor, _ kvapi.Metadata) (kvapi.Metadata, error) {
			return nil, d.apply(NeighborAging(v), "update")
		},
		Delete: func(string, *l3.IPScanNeighbor, kvapi.Metadata) error {
			return d.apply([2]AgingConfig{}, "reset")
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
	})
}

// maxMinutes is the longest threshold whose max_age (seconds) fits VPP's u32.
const maxMinutes = (1<<32 - 1) / 60

// ValidateIPScanNeighbor checks the mode and that the thresholds fit VPP's
// max_age.
func ValidateIPScanNeighbor(s *l3.IPScanNeighbor) error {
	if _, known := l3.IPScanNeighbor_Mode_name[int32(s.GetMode())]; !known {
		return kvapi.NewInvalidValueError(fmt.Errorf("unknown mode %d", s.GetMode()), "mode")
	}
	if s.GetStaleThreshold() > maxMinutes {
		return kvapi.NewInvalidValueError(fmt.Errorf("stale_threshold %d min is too large", s.GetStaleThreshold()), "stale_threshold")
	}
	if s.GetScanInterval() > maxMinutes/defaultStaleThresholdMin {
		return kvapi.NewInvalidValueError(fmt.Errorf("scan_interval %d min is too large", s.GetScanInterval()), "scan_interval")
	}
	return nil
}

// AgingConfig is VPP's neighbor aging of one address family.
type AgingConfig struct {
	// MaxAge is the age in seconds after which an entry is probed and
	// removed if stale; 0 disables aging.
	MaxAge uint32
	// Recycle lets VPP replace the oldest entry when the table is full.
	Recycle bool
}

// NeighborAging maps an IPScanNeighbor onto VPP's neighbor aging, index 0
// for IPv4 and 1 for IPv6 (see the descriptor documentation).
func NeighborAging(s *l3.IPScanNeighbor) [2]AgingConfig {
	stale := s.GetStaleThreshold()
	if stale == 0 {
		interval := s.GetScanInterval()
		if interval == 0 {
			interval = defaultScanIntervalMin
		}
		stale = interval * defaultStaleThresholdMin
	}
	on := AgingConfig{MaxAge: stale * 60, Recycle: true}
	var out [2]AgingConfig
	switch s.GetMode() {
	case l3.IPScanNeighbor_IPV4:
		out[0] = on
	case l3.IPScanNeighbor_IPV6:
		out[1] = on
	case l3.IPScanNeighbor_BOTH:
		out[0], out[1] = on, on
	}
	return out
}

// apply sets the aging of both families, keeping VPP's max_number.
func (d *ipScanDescriptor) apply(cfg [2]AgingConfig, op string) error {
	for af, c := range cfg {
		ipv6 := af == 1
		cur := &ip_neighbor.IPNeighborConfigGetReply{}
		if err := vppbase.Call(d.Ch, &ip_neighbor.IPNeighborConfigGet{Af: vppbase.AddrFamily(ipv6)}, cur); err != nil {
			return fmt.Errorf("%s IP neighbor aging (%s): %w", op, vppbase.AddrFamily(ipv6), err)
		}
		req := &ip_neighbor.IPNeighborConfig{Af: vppbase.AddrFamily(ipv6), MaxNumber: cur.MaxNumber, MaxAge: c.MaxAge, Recycle: c.Recycle}
		if err := vppbase.Call(d.Ch, req, &ip_neighbor.IPNeighborConfigReply{}); err != nil {
			return fmt.Errorf("%s IP neighbor aging (%s, max_age %ds): %w", op, vppbase.AddrFamily(ipv6), c.MaxAge, err)
		}
	}
	d.Log.WithField("aging", cfg).Debugf("IP neighbor aging %s", op)
	return nil
}

// retrieve reads the aging of both families.
func (d *ipScanDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	var cfg [2]AgingConfig
	for af := range cfg {
		rep := &ip_neighbor.IPNeighborConfigGetReply{}
		if err := vppbase.Call(d.Ch, &ip_neighbor.IPNeighborConfigGet{Af: vppbase.AddrFamily(af == 1)}, rep); err != nil {
			return nil, fmt.Errorf("retrieve IP neighbor aging: %w", err)
		}
		cfg[af] = AgingConfig{MaxAge: rep.MaxAge, Recycle: rep.Recycle}
	}
	for _, kv := range correlate {
		if s, ok := kv.Value.(*l3.IPScanNeighbor); ok && NeighborAging(s) == cfg {
			return []kvapi.KVWithMetadata{{Key: l3.IPScanNeighborKey, Value: kv.Value, Origin: kvapi.UnknownOrigin}}, nil
		}
	}
	if cfg == ([2]AgingConfig{}) {
		return nil, nil // VPP's defaults: nothing configured
	}
	v := &l3.IPScanNeighbor{}
	switch {
	case cfg[0].MaxAge > 0 && cfg[1].MaxAge > 0:
		v.Mode, v.StaleThreshold = l3.IPScanNeighbor_BOTH, cfg[0].MaxAge/60
	case cfg[0].MaxAge > 0:
		v.Mode, v.StaleThreshold = l3.IPScanNeighbor_IPV4, cfg[0].MaxAge/60
	case cfg[1].MaxAge > 0:
		v.Mode, v.StaleThreshold = l3.IPScanNeighbor_IPV6, cfg[1].MaxAge/60
	}
	return []kvapi.KVWithMetadata{{Key: l3.IPScanNeighborKey, Value: v, Origin: kvapi.UnknownOrigin}}, nil
}
