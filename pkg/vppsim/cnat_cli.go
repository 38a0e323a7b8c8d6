package vppsim

// cnat's show commands (cnat_translation.c cnat_translation_show,
// cnat_session.c cnat_session_show; spec vpp-ip6-cnat-stn-stats.md §2.2.5,
// §2.4.9).

import (
	"fmt"
	"strconv"
	"strings"
)

// ipProtoName is format_ip_protocol: the protocols.def name.
func ipProtoName(p uint8) string {
	switch p {
	case protoICMP:
		return "ICMP"
	case protoTCP:
		return "TCP"
	case protoUDP:
		return "UDP"
	case protoICMP6:
		return "ICMP6"
	case protoSCTP:
		return "SCTP"
	}
	return "unknown " + strconv.Itoa(int(p))
}

// cnatEPString is format_cnat_endpoint: "<ip>;<port>", or for an interface
// endpoint "<ifname> (<ip>);<port>", "(ip4|ip6)" while unresolved.
func (st *state) cnatEPString(ep cnatEP) string {
	if ep.sw == noIndex {
		return ep.addr.String() + ";" + strconv.Itoa(int(ep.port))
	}
	a, ok := st.cnatResolve(ep)
	in := "ip4"
	switch {
	case ok:
		in = a.String()
	case ep.v6:
		in = "ip6"
	}
	return fmt.Sprintf("%s (%s);%d", st.ifName(ep.sw), in, ep.port)
}

// cliShowCnatTranslation prints "show cnat translation": one block per
// translation (format_cnat_translation). The FIB entry and DPO lines are
// the simulator's (it has no FIB entry indexes or DPOs): "fib-entry:-1"
// and the forwarding the path resolves to. With an id argument VPP prints
// only "Invalid policy ID:<n>", and so does the simulator.
func cliShowCnatTranslation(st *state, args []string) string {
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil {
			return fmt.Sprintf("Invalid policy ID:%d\n", n)
		}
		return fmt.Sprintf("unknown input '%s'\n", strings.Join(args, " "))
	}
	var b strings.Builder
	for _, tr := range st.cnat.sortedTrs() {
		lb := "default"
		if tr.lbType == 1 {
			lb = "maglev"
		} else if tr.lbType > 1 {
			lb = "unknown"
		}
		fhc := fmt.Sprintf("fhc:0x%x(default)", cnatDefaultFHC)
		if tr.fhc != 0 && tr.fhc != cnatDefaultFHC {
			fhc = fmt.Sprintf("fhc:0x%x", tr.fhc)
		}
		fmt.Fprintf(&b, "[%d] %s %s lb:%s %s\n", tr.id, st.cnatEPString(tr.vip), ipProtoName(tr.proto), lb, fhc)
		for _, p := range tr.paths {
			fmt.Fprintf(&b, "  %s->%s\n  fib-entry:-1\n", st.cnatEPString(p.src), st.cnatEPString(p.dst))
			if st.cnatPathActive(p) {
				d, _ := st.cnatResolve(p.dst)
				fmt.Fprintf(&b, "  [@0]: dpo-load-balance: [proto:%s] via %s\n", cnatAFName(d), d)
			} else {
				b.WriteString("  [@0]: dpo-drop\n")
			}
		}
		act := st.cnatActive(tr)
		fmt.Fprintf(&b, " via:\n  [@0]: dpo-load-balance: [proto:%s buckets:%d]\n", cnatAFName(tr.vipAddrOr(st)), len(act))
		if tr.lbType == 1 {
			b.WriteString("maglev backends map\n")
			mag := st.cnatMaglev(tr)
			for bid := range tr.paths {
				var set []string
				for i, v := range mag {
					if v == bid {
						set = append(set, strconv.Itoa(i))
					}
				}
				fmt.Fprintf(&b, "  backend#%d: %d entries\n", bid, len(set))
			}
		}
	}
	return b.String()
}

// cnatAFName names an address's DPO protocol.
func cnatAFName(a interface{ Is4() bool }) string {
	if a.Is4() {
		return "ip4"
	}
	return "ip6"
}

// cliShowCnatSession prints "show cnat session": the header with the
// current time, then the session DB (format_bihash with
// format_cnat_session): the table's name, one line per session, the count.
// Bucket and page lines are not simulated; sessions are in creation order.
func cliShowCnatSession(st *state, _ []string) string {
	now := st.uptime()
	st.cnat.sess.scan(&st.cnat, st.s.clock.Now())
	var b strings.Builder
	fmt.Fprintf(&b, "CNat Sessions: now:%f\nHash table 'CNat Session DB'\n", now.Seconds())
	ss := st.cnat.sess.sorted()
	for n, se := range ss {
		loc := "unknown"
		switch se.key.loc {
		case cnatLocFIB:
			loc = "fib"
		case cnatLocInput:
			loc = "input"
		case cnatLocOutput:
			loc = "output"
		}
		exp := se.ts.expiry().Sub(st.started).Seconds()
		fmt.Fprintf(&b, "    %d: session:[%s;%d -> %s;%d, %s] => %s;%d -> %s;%d %s lb:%d age:%f\n", n,
			se.key.src, se.key.sport, se.key.dst, se.key.dport, ipProtoName(se.key.proto),
			se.newSrc, se.newSport, se.newDst, se.newDpt, loc, se.lb, exp)
	}
	fmt.Fprintf(&b, "    %d active elements\n", len(ss))
	return b.String()
}
