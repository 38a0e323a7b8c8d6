package cnatplugin

import (
	"fmt"
	"net/netip"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// noInterface is VPP's ~0 sw_if_index: the endpoint is an address.
const noInterface = ^uint32(0)

// protocols maps the model's protocols to VPP's ip_proto and back.
var protocols = map[cnatmodel.Protocol]ip_types.IPProto{
	cnatmodel.Protocol_TCP:  ip_types.IP_API_PROTO_TCP,
	cnatmodel.Protocol_UDP:  ip_types.IP_API_PROTO_UDP,
	cnatmodel.Protocol_SCTP: ip_types.IP_API_PROTO_SCTP,
}

// protocolFromAPI is the model protocol of VPP's ip_proto; ok is false for others.
func protocolFromAPI(p ip_types.IPProto) (cnatmodel.Protocol, bool) {
	for m, v := range protocols {
		if v == p {
			return m, true
		}
	}
	return 0, false
}

// swIfIndexOf resolves a logical interface name for what (a message context).
type swIfIndexOf func(name, what string) (uint32, error)

// endpointToAPI converts a validated endpoint of a translation whose VIP is of
// family. An empty endpoint (a path source left unchanged) is the zero address of
// the family: VPP rewrites a source only when the path's source address is not zero
// (cnat_node_vip.c).
func endpointToAPI(e *cnatmodel.Endpoint, family cnatmodel.AddressFamily, sw swIfIndexOf, at endpointAt) (cnat.CnatEndpoint, error) {
	out := cnat.CnatEndpoint{SwIfIndex: interface_types.InterfaceIndex(noInterface), Port: uint16(e.GetPort())}
	switch {
	case e.GetInterface() != "":
		idx, err := sw(e.GetInterface(), at.String())
		if err != nil {
			return out, err
		}
		out.SwIfIndex = interface_types.InterfaceIndex(idx)
		out.IfAf = vppbase.AddrFamily(e.GetInterfaceFamily() == cnatmodel.AddressFamily_IPV6)
		out.Addr.Af = out.IfAf
	case e.GetAddress() != "":
		a, ok := cnatmodel.ParseAddr(e.GetAddress())
		if !ok {
			return out, fmt.Errorf("%s: address %q is not an IP address", at, e.GetAddress())
		}
		out = addressToAPI(a, e.GetPort())
	default:
		out.Addr.Af = vppbase.AddrFamily(family == cnatmodel.AddressFamily_IPV6)
		out.IfAf = out.Addr.Af
	}
	return out, nil
}

// addressToAPI returns the cnat endpoint of an address and port (no interface).
func addressToAPI(a netip.Addr, port uint32) cnat.CnatEndpoint {
	out := cnat.CnatEndpoint{SwIfIndex: interface_types.InterfaceIndex(noInterface), Port: uint16(port), Addr: vppbase.AddrToAPI(a)}
	out.IfAf = out.Addr.Af
	return out
}

// endpointAt names an endpoint of translation t in messages: its VIP (path < 0), or
// side ("dst", "src") of paths[path]. The text is made only when a message needs it:
// made for every endpoint converted, it was most of what a translation update
// allocated.
type endpointAt struct {
	t    *cnatmodel.Translation
	path int
	side string
}

func (at endpointAt) String() string {
	what := "cnat translation " + cnatmodel.FormatTranslation(at.t)
	if at.path < 0 {
		return what
	}
	return fmt.Sprintf("%s paths[%d].%s", what, at.path, at.side)
}

// translationToAPI converts a validated translation.
func translationToAPI(t *cnatmodel.Translation, sw swIfIndexOf) (cnat.CnatTranslation, error) {
	out, family, err := translationHeadToAPI(t, sw)
	if err != nil {
		return out, err
	}
	out.Paths = make([]cnat.CnatEndpointTuple, 0, len(t.GetPaths()))
	for i, p := range t.GetPaths() {
		dst, err := endpointToAPI(p.GetDst(), family, sw, endpointAt{t: t, path: i, side: "dst"})
		if err != nil {
			return cnat.CnatTranslation{}, err
		}
		src, err := endpointToAPI(p.GetSrc(), family, sw, endpointAt{t: t, path: i, side: "src"})
		if err != nil {
			return cnat.CnatTranslation{}, err
		}
		out.Paths = append(out.Paths, cnat.CnatEndpointTuple{DstEp: dst, SrcEp: src})
	}
	return out, nil
}

// translationHeadToAPI converts a validated translation but its paths (NPaths set,
// Paths nil); it returns the VIP's family too.
func translationHeadToAPI(t *cnatmodel.Translation, sw swIfIndexOf) (cnat.CnatTranslation, cnatmodel.AddressFamily, error) {
	vipAddr, ok := cnatmodel.ParseAddr(t.GetVipAddress())
	family := cnatmodel.FamilyOf(vipAddr)
	if !ok {
		return cnat.CnatTranslation{}, family, fmt.Errorf("%s: address %q is not an IP address", endpointAt{t: t, path: -1}, t.GetVipAddress())
	}
	out := cnat.CnatTranslation{
		Vip:            addressToAPI(vipAddr, t.GetVipPort()),
		IPProto:        protocols[t.GetProtocol()],
		LbType:         cnat.CnatLbType(t.GetLbType()),
		FlowHashConfig: ip.IPFlowHashConfigV2(t.GetFlowHashConfig()),
		NPaths:         uint32(len(t.GetPaths())),
	}
	if t.GetIsRealIp() {
		out.IsRealIP = 1
	}
	if t.GetAllocPort() {
		out.Flags |= uint8(cnat.CNAT_TRANSLATION_ALLOC_PORT)
	}
	if t.GetNoReturnSession() {
		out.Flags |= uint8(cnat.CNAT_TRANSLATION_NO_RETURN_SESSION)
	}
	return out, family, nil
}

// endpointFromAPI converts a dumped endpoint: an interface endpoint by its logical
// name (names: sw_if_index -> name; an interface the agent does not know becomes
// "sw_if_index=<n>", which no NB value names, so a resync replaces or deletes the
// translation), an address endpoint by its address (zero: nil, no endpoint).
func endpointFromAPI(e cnat.CnatEndpoint, names map[uint32]string) *cnatmodel.Endpoint {
	if sw := uint32(e.SwIfIndex); sw != noInterface {
		name, ok := names[sw]
		if !ok {
			name = fmt.Sprintf("sw_if_index=%d", sw)
		}
		family := cnatmodel.AddressFamily_IPV4
		if e.IfAf == ip_types.ADDRESS_IP6 {
			family = cnatmodel.AddressFamily_IPV6
		}
		return &cnatmodel.Endpoint{Interface: name, InterfaceFamily: family, Port: uint32(e.Port)}
	}
	out := &cnatmodel.Endpoint{Port: uint32(e.Port)}
	if a, ok := vppbase.AddrFromAPI(e.Addr); ok && !a.IsUnspecified() {
		out.Address = a.String()
	}
	if out.Address == "" && out.Port == 0 {
		return nil
	}
	return out
}

// translationFromAPI converts a dumped translation. VPP's dump does not report
// is_real_ip, the flags or flow_hash_config (cnat_api.c,
// cnat_translation_send_details fills vip, id, ip_proto, lb_type and the paths
// only): they are taken from nb, the value NB wants under the same key (nil: none).
func translationFromAPI(t cnat.CnatTranslation, names map[uint32]string, nb *cnatmodel.Translation) (*cnatmodel.Translation, bool) {
	proto, ok := protocolFromAPI(t.IPProto)
	if !ok {
		return nil, false
	}
	vip := endpointFromAPI(t.Vip, names)
	if vip == nil || vip.GetAddress() == "" {
		return nil, false
	}
	out := &cnatmodel.Translation{VipAddress: vip.GetAddress(), VipPort: vip.GetPort(), Protocol: proto,
		LbType: cnatmodel.Translation_LbType(t.LbType)}
	if nb != nil {
		out.IsRealIp, out.AllocPort, out.NoReturnSession = nb.GetIsRealIp(), nb.GetAllocPort(), nb.GetNoReturnSession()
		out.FlowHashConfig = nb.GetFlowHashConfig()
	}
	for _, p := range t.Paths {
		out.Paths = append(out.Paths, &cnatmodel.Path{Dst: endpointFromAPI(p.DstEp, names), Src: endpointFromAPI(p.SrcEp, names)})
	}
	return out, true
}
