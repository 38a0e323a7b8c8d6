package nat44

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/ip_types"

	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// reach tells, in terms that do not depend on the renderer, what answers a new flow
// from src to dst entering VPP on inIf: one line "backend IP:PORT" per backend that
// may answer (sorted), or "refused" (an ICMP_PROHIBIT route: no endpoint anywhere),
// "dropped" (a DROP route, or an address cnat owns without a translation of the
// port), "not a service" (neither translated nor routed by the renderer). The NAT44
// renderer's packets are traced through its NAT44 configuration, the cnat renderer's
// through its translations; with VPP, the simulator must hold the same backends.
func (e *env) reach(proto vpp_nat.DNat44_Protocol, src, dst netip.AddrPort, inIf string) []string {
	e.t.Helper()
	var outcomes []st.Outcome
	var why string
	if e.cnat != nil {
		c := st.CNATFrom(e.dp.KVs)
		outcomes, why = c.Trace(st.Packet{Proto: proto, Src: src, Dst: dst, InIf: inIf})
		if why == "" && e.agent != nil {
			mine := st.Destinations(outcomes)
			if sim := e.agent.cnatBackends(proto, dst); !slices.Equal(mine, sim) {
				e.t.Errorf("%s -> %s: traced %q, the simulator's translation has %q", src, dst, mine, sim)
			}
		}
		if why != "" && c.Exclusive(dst.Addr()) {
			return []string{"dropped"}
		}
	} else {
		outcomes, why = e.trace(proto, src.String(), dst.String(), inIf)
	}
	if why == "" {
		var lines []string
		for _, d := range st.Destinations(outcomes) {
			lines = append(lines, "backend "+d)
		}
		return slices.Compact(lines)
	}
	mainVRF := e.proc.ContivConf.GetRoutingConfig().MainVRFID
	bits := 32
	if dst.Addr().Is6() {
		bits = 128
	}
	for _, v := range e.dp.KVs {
		r, ok := v.(*l3.Route)
		if !ok || r.GetVrfId() != mainVRF || r.GetDstNetwork() != netip.PrefixFrom(dst.Addr(), bits).String() {
			continue
		}
		switch r.GetType() {
		case l3.Route_ICMP_PROHIBIT:
			return []string{"refused"}
		case l3.Route_DROP:
			return []string{"dropped"}
		}
	}
	return []string{"not a service"}
}

// cnatBackends returns the destinations ("ip:port", sorted) of the paths of the
// simulator's cnat translation of (dst, proto), nil without one.
func (a *agent) cnatBackends(proto vpp_nat.DNat44_Protocol, dst netip.AddrPort) []string {
	a.t.Helper()
	ipProto := ip_types.IP_API_PROTO_TCP
	if proto == vpp_nat.DNat44_UDP {
		ipProto = ip_types.IP_API_PROTO_UDP
	}
	req := a.vpp.ch.SendMultiRequest(&cnat.CnatTranslationDump{})
	var out []string
	for {
		d := &cnat.CnatTranslationDetails{}
		last, err := req.ReceiveReply(d)
		if err != nil {
			a.t.Fatalf("cnat_translation_dump: %v", err)
		}
		if last {
			break
		}
		tr := d.Translation
		if tr.IPProto != ipProto || tr.Vip.Port != dst.Port() || tr.Vip.Addr.ToIP().String() != dst.Addr().String() {
			continue
		}
		for _, p := range tr.Paths {
			out = append(out, netip.AddrPortFrom(netip.MustParseAddr(p.DstEp.Addr.ToIP().String()), p.DstEp.Port).String())
		}
	}
	sort.Strings(out)
	return out
}

// parseReach parses the arguments of reach: SRC:PORT DST:PORT/PROTO [INIF].
func parseReach(args []string) (proto vpp_nat.DNat44_Protocol, src, dst netip.AddrPort, inIf string, err error) {
	if len(args) < 2 || len(args) > 3 {
		return 0, src, dst, "", fmt.Errorf("usage: reach SRC:PORT DST:PORT/tcp|udp [INIF]")
	}
	d, p, ok := strings.Cut(args[1], "/")
	switch {
	case !ok:
		return 0, src, dst, "", fmt.Errorf("reach: %q has no /tcp or /udp", args[1])
	case p == "tcp":
		proto = vpp_nat.DNat44_TCP
	case p == "udp":
		proto = vpp_nat.DNat44_UDP
	default:
		return 0, src, dst, "", fmt.Errorf("reach: protocol %q: want tcp or udp", p)
	}
	if src, err = netip.ParseAddrPort(args[0]); err != nil {
		return 0, src, dst, "", fmt.Errorf("reach: source: %w", err)
	}
	if dst, err = netip.ParseAddrPort(d); err != nil {
		return 0, src, dst, "", fmt.Errorf("reach: destination: %w", err)
	}
	inIf = mainIf
	if len(args) == 3 {
		inIf = args[2]
	}
	return proto, src, dst, inIf, nil
}
