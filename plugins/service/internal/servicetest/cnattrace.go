package servicetest

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// CNAT is the cnat configuration found in a set of key-value pairs: the translations
// of every translation set, by identity (vpp_cnat.TranslationID), and the label of the
// set holding each.
type CNAT struct {
	Translations map[string]*vpp_cnat.Translation
	SetOf        map[string]string
}

// CNATFrom picks the translations of the cnat translation sets out of kvs (nil values
// are ignored). Of two sets holding the same identity (the renderer never stages
// that), the one whose key sorts last wins.
func CNATFrom(kvs map[string]proto.Message) CNAT {
	c := CNAT{Translations: make(map[string]*vpp_cnat.Translation), SetOf: make(map[string]string)}
	for _, key := range slices.Sorted(maps.Keys(kvs)) {
		set, ok := kvs[key].(*vpp_cnat.TranslationSet)
		if !ok || set == nil {
			continue
		}
		for _, t := range set.GetTranslations() {
			id := vpp_cnat.TranslationIDOf(t)
			c.Translations[id], c.SetOf[id] = t, set.GetLabel()
		}
	}
	return c
}

// Translation returns the translation of (vip, port, protocol) in the sets of kvs
// (nil: none).
func Translation(kvs map[string]proto.Message, vip string, port uint32, protocol vpp_cnat.Protocol) *vpp_cnat.Translation {
	return CNATFrom(kvs).Translations[vpp_cnat.TranslationID(vip, port, protocol)]
}

// Trace evaluates a new flow against the translations as VPP's ip4/ip6-cnat-tx would
// once the lookup in table 0 reaches the VIP: the translation of (destination address,
// destination port, protocol) sends it to one of its paths (every path is an
// outcome, VRF 0: cnat resolves backends in table 0), its source becoming the path's
// source address when the path has one (a port allocated by VPP: kept here). The
// interface the packet enters on does not matter (cnat is in the FIB, not a
// feature). It returns why nothing was translated when nothing was.
func (c CNAT) Trace(p Packet) (outcomes []Outcome, why string) {
	unchanged := []Outcome{{Dst: p.Dst, Src: p.Src}}
	var proto vpp_cnat.Protocol
	switch p.Proto {
	case vpp_nat.DNat44_TCP:
		proto = vpp_cnat.Protocol_TCP
	case vpp_nat.DNat44_UDP:
		proto = vpp_cnat.Protocol_UDP
	default:
		return unchanged, fmt.Sprintf("protocol %s has no cnat session", p.Proto)
	}
	t := c.Translations[vpp_cnat.TranslationID(p.Dst.Addr().String(), uint32(p.Dst.Port()), proto)]
	if t == nil || len(t.GetPaths()) == 0 {
		return unchanged, "no translation"
	}
	for _, path := range t.GetPaths() {
		dst, err := netip.ParseAddr(path.GetDst().GetAddress())
		if err != nil {
			return unchanged, fmt.Sprintf("bad path destination %q", path.GetDst().GetAddress())
		}
		o := Outcome{Dst: netip.AddrPortFrom(dst, uint16(path.GetDst().GetPort())), Src: p.Src}
		if s := path.GetSrc().GetAddress(); s != "" {
			src, err := netip.ParseAddr(s)
			if err != nil {
				return unchanged, fmt.Sprintf("bad path source %q", s)
			}
			o.Src = netip.AddrPortFrom(src, p.Src.Port())
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, ""
}

// Exclusive tells whether cnat owns addr: it has a translation of addr (on any port)
// that is not a node's real address, so that VPP drops what matches none of its
// translations (cnat's FIB entry of the VIP).
func (c CNAT) Exclusive(addr netip.Addr) bool {
	for _, t := range c.Translations {
		if t.GetVipAddress() == addr.String() && !t.GetIsRealIp() {
			return true
		}
	}
	return false
}
