package vppsim

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/nat_types"
)

// cliCommand is a debug CLI command: its words, which VPP lets the user
// abbreviate to any unambiguous prefix, and what it prints.
type cliCommand struct {
	words []string
	run   func(st *state, args []string) string
}

var cliCommands = []cliCommand{
	{[]string{"show", "version"}, cliShowVersion},
	{[]string{"show", "interface"}, cliShowInterface},
	{[]string{"show", "interface", "address"}, cliShowInterfaceAddress},
	{[]string{"show", "ip", "fib"}, func(st *state, args []string) string { return cliShowFIB(st, false, args) }},
	{[]string{"show", "ip6", "fib"}, func(st *state, args []string) string { return cliShowFIB(st, true, args) }},
	{[]string{"show", "ip", "neighbors"}, cliShowNeighbors},
	{[]string{"show", "nat44", "static", "mappings"}, cliShowNATStatic},
	{[]string{"show", "nat44", "interfaces"}, cliShowNATInterfaces},
	{[]string{"show", "nat44", "addresses"}, cliShowNATAddresses},
	{[]string{"show", "bridge-domain"}, cliShowBridgeDomain},
	{[]string{"show", "nat44", "sessions"}, cliShowNATSessions},
	{[]string{"show", "trace"}, cliShowTrace},
	{[]string{"show", "errors"}, cliShowErrors},
	{[]string{"show", "stn", "rules"}, cliShowSTNRules},
	{[]string{"show", "cnat", "translation"}, cliShowCnatTranslation},
	{[]string{"show", "cnat", "session"}, cliShowCnatSession},
	{[]string{"trace", "add"}, cliTraceAdd},
	{[]string{"clear", "trace"}, cliTraceClear},
	{[]string{"show", "acl-plugin", "acl"}, cliShowACL},
	{[]string{"show", "acl-plugin", "interface"}, cliShowACLInterface},
	{[]string{"clear", "interfaces"}, cliClearInterfaces},
	{[]string{"clear", "errors"}, cliClearErrors},
}

// cli runs a debug CLI command as cli_inband does. Output of unknown
// commands mimics VPP's parse error; like VPP, errors are reported in the
// text and not in retval.
func (st *state) cli(cmd string) string {
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return ""
	}
	var best *cliCommand
	bestLen := 0
	for k := range cliCommands {
		c := &cliCommands[k]
		if len(c.words) > len(words) || len(c.words) <= bestLen {
			continue
		}
		match := true
		for j, w := range c.words {
			if !strings.HasPrefix(w, strings.ToLower(words[j])) {
				match = false
				break
			}
		}
		if match {
			best, bestLen = c, len(c.words)
		}
	}
	if best == nil {
		if strings.HasPrefix("show", strings.ToLower(words[0])) && len(words) > 1 {
			return "show: unknown input `" + strings.Join(words[1:], " ") + "'\n"
		}
		return "unknown input `" + strings.Join(words, " ") + "'\n"
	}
	return best.run(st, words[bestLen:])
}

// center centres s in a field of width w, as VPP's %=Ns does.
func center(s string, w int) string {
	if len(s) >= w {
		return s
	}
	left := (w - len(s)) / 2
	return strings.Repeat(" ", left) + s + strings.Repeat(" ", w-len(s)-left)
}

func cliShowVersion(*state, []string) string {
	return "vpp v" + VPPVersion + " built by root on vpp-sim at 2025-10-29T00:00:00\n"
}

func (st *state) ifacesByName() []*iface {
	list := st.sortedIfaces()
	sort.Slice(list, func(a, b int) bool { return list[a].name < list[b].name })
	return list
}

func cliShowInterface(st *state, args []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s%s%s%s%s\n", center("Name", 32), center("Idx", 5), center("State", 10),
		center("MTU (L3/IP4/IP6/MPLS)", 21), center("Counter", 16), center("Count", 16))
	for _, i := range st.ifacesByName() {
		if len(args) > 0 && args[0] != i.name {
			continue
		}
		state := "down"
		if i.adminUp {
			state = "up"
		}
		mtu := fmt.Sprintf("%d/%d/%d/%d", i.mtu[0], i.mtu[1], i.mtu[2], i.mtu[3])
		ctrs := i.ctr.lines()
		if len(ctrs) == 0 {
			fmt.Fprintf(&b, "%-32s%s%s%s\n", i.name, center(strconv.Itoa(int(i.idx)), 5), center(state, 10), center(mtu, 21))
			continue
		}
		for k, c := range ctrs {
			if k == 0 {
				fmt.Fprintf(&b, "%-32s%s%s%s", i.name, center(strconv.Itoa(int(i.idx)), 5), center(state, 10), center(mtu, 21))
			} else {
				b.WriteString(strings.Repeat(" ", 68))
			}
			fmt.Fprintf(&b, "%-16s%16s\n", c[0], c[1])
		}
	}
	return b.String()
}

func cliShowInterfaceAddress(st *state, _ []string) string {
	var b strings.Builder
	for _, i := range st.ifacesByName() {
		state := "dn"
		if i.adminUp {
			state = "up"
		}
		fmt.Fprintf(&b, "%s (%s):\n", i.name, state)
		if i.l2 != nil {
			fmt.Fprintf(&b, "  L2 bridge bd-id %d idx %d shg %d", i.l2.bd, i.l2.bd, i.l2.shg)
			if i.l2.portType == l2.L2_API_PORT_TYPE_BVI {
				b.WriteString(" bvi")
			}
			b.WriteString("\n")
		}
		if i.unnumOf != noIndex {
			fmt.Fprintf(&b, "  unnumbered, use %s\n", st.ifName(i.unnumOf))
		}
		for _, a := range st.effectiveAddrs(i) {
			vrf := i.vrf[afIndex(a.Addr().Is6())]
			if vrf != 0 {
				fmt.Fprintf(&b, "  L3 %s ip%d table-id %d fib-idx %d\n", a, map[bool]int{false: 4, true: 6}[a.Addr().Is6()], vrf, vrf)
			} else {
				fmt.Fprintf(&b, "  L3 %s\n", a)
			}
		}
	}
	return b.String()
}

func cliShowFIB(st *state, ipv6 bool, args []string) string {
	var only *uint32
	if len(args) >= 2 && strings.HasPrefix("table", args[0]) {
		v, err := strconv.ParseUint(args[1], 10, 32)
		if err != nil {
			return "unknown input `" + strings.Join(args, " ") + "'\n"
		}
		id := uint32(v)
		only = &id
	}
	proto := "ip4"
	if ipv6 {
		proto = "ip6"
	}
	var b strings.Builder
	for _, t := range st.sortedTables() {
		if t.ipv6 != ipv6 || (only != nil && *only != t.id) {
			continue
		}
		fmt.Fprintf(&b, "%s, fib_index:%d, flow hash:[src dst sport dport proto flowlabel ] epoch:0 flags:none locks:[", t.name, t.id)
		if t.apiLock {
			b.WriteString("API:1, ")
		}
		if t.ifRefs > 0 {
			fmt.Fprintf(&b, "interface:%d, ", t.ifRefs)
		}
		if t.natRefs > 0 {
			fmt.Fprintf(&b, "NAT-lo:%d, ", t.natRefs)
		}
		if t.id == 0 {
			b.WriteString("default-route:1, ")
		}
		b.WriteString("]\n")
		for n, e := range st.fibEntries(t) {
			fmt.Fprintf(&b, "%s\n  unicast-%s-chain\n  [@0]: dpo-load-balance: [proto:%s index:%d buckets:%d uRPF:%d to:[0:0]]\n",
				e.prefix, proto, proto, n+1, len(e.paths), n+1)
			for k, p := range e.paths {
				fmt.Fprintf(&b, "    [%d] %s\n", k, st.formatPath(e.prefix, p, proto))
			}
		}
	}
	return b.String()
}

func (st *state) formatPath(pfx netip.Prefix, p fib_types.FibPath, proto string) string {
	nh, _ := addrFromAPI(pathNextHop(p))
	switch p.Type {
	case fib_types.FIB_API_PATH_TYPE_DROP:
		return "[@0]: dpo-drop " + proto
	case fib_types.FIB_API_PATH_TYPE_ICMP_UNREACH:
		return "[@0]: " + proto + "-null action:send-unreachable"
	case fib_types.FIB_API_PATH_TYPE_ICMP_PROHIBIT:
		return "[@0]: " + proto + "-null action:send-prohibited"
	case fib_types.FIB_API_PATH_TYPE_LOCAL:
		return fmt.Sprintf("[@2]: dpo-receive: %s on %s", pfx.Addr(), st.ifName(p.SwIfIndex))
	}
	switch {
	case p.SwIfIndex == noIndex && nh.IsUnspecified():
		return fmt.Sprintf("[@12]: dst-address,unicast lookup in %s", defaultTableName(proto == "ip6", p.TableID))
	case p.SwIfIndex == noIndex:
		return fmt.Sprintf("[@13]: recursive via %s in table %d", nh, p.TableID)
	case nh.IsUnspecified():
		return fmt.Sprintf("[@4]: ipv%s-glean: [src:%s] %s", proto[2:], pfx, st.ifName(p.SwIfIndex))
	}
	return fmt.Sprintf("[@5]: ipv%s via %s %s", proto[2:], nh, st.ifName(p.SwIfIndex))
}

// pathNextHop returns the next hop of a path as an address of the path's
// protocol.
func pathNextHop(p fib_types.FibPath) ip_types.Address {
	if p.Proto == fib_types.FIB_API_PATH_NH_PROTO_IP6 {
		return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: p.Nh.Address}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: p.Nh.Address}
}

func cliShowNeighbors(st *state, _ []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%10s%21s%22s%10s%22s%22s\n", "Time", "IP", "", "Flags", "Ethernet", "Interface")
	list := make([]*neighbor, 0, len(st.neighbors))
	for _, n := range st.neighbors {
		list = append(list, n)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].seq < list[b].seq })
	for _, n := range list {
		flags := "D"
		if n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0 {
			flags = "S"
		}
		if n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY != 0 {
			flags += "N"
		}
		fmt.Fprintf(&b, "%10.4f%21s%32s%22s%22s\n", 0.0, n.ip, flags, net.HardwareAddr(n.mac[:]), st.ifName(n.sw))
	}
	return b.String()
}

func protoName(p uint8) string {
	switch p {
	case 1:
		return "icmp"
	case 6:
		return "tcp"
	case 17:
		return "udp"
	}
	return "unknown(" + strconv.Itoa(int(p)) + ")"
}

func twiceName(m *natMapping) string {
	switch {
	case m.has(nat_types.NAT_IS_TWICE_NAT):
		return "twice-nat"
	case m.has(nat_types.NAT_IS_SELF_TWICE_NAT):
		return "self twice-nat"
	}
	return ""
}

func out2inName(m *natMapping) string {
	if m.has(nat_types.NAT_IS_OUT2IN_ONLY) {
		return "out2in-only"
	}
	return ""
}

func cliShowNATStatic(st *state, _ []string) string {
	var b strings.Builder
	b.WriteString("NAT44 static mappings:\n")
	var all []*natMapping
	for _, m := range st.nat.mappings {
		all = append(all, m)
	}
	sort.Slice(all, func(a, b int) bool { return all[a].seq < all[b].seq })
	for _, m := range all {
		ext := st.mappingExtAddr(m)
		addrOnly := m.has(nat_types.NAT_IS_ADDR_ONLY)
		switch m.kind {
		case natIdentity:
			if addrOnly {
				fmt.Fprintf(&b, " identity mapping %s", ext)
			} else {
				fmt.Fprintf(&b, " identity mapping %s %s:%d", protoName(m.ext.proto), ext, m.ext.port)
			}
			for _, v := range m.idVRFs {
				fmt.Fprintf(&b, " vrf %d", v)
			}
			b.WriteString("\n")
		case natLB:
			fmt.Fprintf(&b, " %s external %s:%d %s %s\n", protoName(m.ext.proto), ext, m.ext.port, twiceName(m), out2inName(m))
			for _, l := range m.locals {
				fmt.Fprintf(&b, "  local %s:%d vrf %d probability %d%%\n", l.addr, l.port, l.vrf, l.prob)
			}
		default:
			if addrOnly {
				fmt.Fprintf(&b, " local %s external %s vrf %d %s %s\n", m.local, ext, m.vrf, twiceName(m), out2inName(m))
			} else {
				fmt.Fprintf(&b, " %s local %s:%d external %s:%d vrf %d %s %s\n", protoName(m.ext.proto), m.local, m.localPort,
					ext, m.ext.port, m.vrf, twiceName(m), out2inName(m))
			}
		}
	}
	return b.String()
}

func cliShowNATInterfaces(st *state, _ []string) string {
	var b strings.Builder
	b.WriteString("NAT44 interfaces:\n")
	n := &st.nat
	for _, sw := range n.sortedIfaces() {
		f := n.ifaces[sw].flags
		dir := "out"
		switch {
		case f&nat_types.NAT_IS_INSIDE != 0 && f&nat_types.NAT_IS_OUTSIDE != 0:
			dir = "in out"
		case f&nat_types.NAT_IS_INSIDE != 0:
			dir = "in"
		}
		fmt.Fprintf(&b, " %s %s\n", st.ifName(sw), dir)
	}
	for _, sw := range n.outputIfs {
		fmt.Fprintf(&b, " %s output-feature in out\n", st.ifName(sw))
	}
	return b.String()
}

func cliShowNATAddresses(st *state, _ []string) string {
	var b strings.Builder
	for _, twice := range []bool{false, true} {
		if twice {
			b.WriteString("NAT44 twice-nat pool addresses:\n")
		} else {
			b.WriteString("NAT44 pool addresses:\n")
		}
		for _, a := range st.nat.addrs {
			if a.twice != twice {
				continue
			}
			fmt.Fprintf(&b, "%s\n", a.addr)
			if a.vrf == noIndex {
				b.WriteString("  tenant VRF independent\n")
			} else {
				fmt.Fprintf(&b, "  tenant VRF: %d\n", a.vrf)
			}
		}
	}
	return b.String()
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

func cliShowBridgeDomain(st *state, args []string) string {
	var only uint32
	detail := false
	if len(args) > 0 {
		v, err := strconv.ParseUint(args[0], 10, 32)
		if err != nil {
			return "show bridge-domain: unknown input `" + strings.Join(args, " ") + "'\n"
		}
		only = uint32(v)
		detail = len(args) > 1 && strings.HasPrefix("detail", args[1])
		if st.bds[only] == nil {
			return fmt.Sprintf("No operational bridge domain with BD-ID %d\n", only)
		}
	}
	ids := make([]uint32, 0, len(st.bds))
	for id := range st.bds {
		if only == 0 || id == only {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "no bridge-domains in use\n"
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s%s%s%s%s%s%s%s%s%s%s%s\n", center("BD-ID", 7), center("Index", 7), center("BSN", 5),
		center("Age(min)", 10), center("Learning", 10), center("U-Forwrd", 10), center("UU-Flood", 10),
		center("Flooding", 10), center("ARP-Term", 10), center("arp-ufwd", 10), center("Learn-co", 10),
		center("Learn-li", 10), center("BVI-Intf", 12))
	for _, id := range ids {
		bd := st.bds[id]
		age := "off"
		if bd.macAge > 0 {
			age = strconv.Itoa(int(bd.macAge))
		}
		uu := "drop"
		if bd.uuFlood {
			uu = "flood"
		}
		bvi := "N/A"
		if bd.bvi != noIndex {
			bvi = st.ifName(bd.bvi)
		}
		learned := 0
		for k, e := range st.l2fib {
			if k.bd == id && !e.static {
				learned++
			}
		}
		fmt.Fprintf(&b, "%s%s%s%s%s%s%s%s%s%s%s%s%s\n", center(strconv.Itoa(int(id)), 7), center(strconv.Itoa(int(id)), 7),
			center("0", 5), center(age, 10), center(onOff(bd.learn), 10), center(onOff(bd.forward), 10), center(uu, 10),
			center(onOff(bd.flood), 10), center(onOff(bd.arpTerm), 10), center(onOff(bd.arpUf), 10),
			center(strconv.Itoa(learned), 10), center("16777216", 10), center(bvi, 12))
		if detail {
			fmt.Fprintf(&b, "\n%s%s%s%s%s%s%s\n", center("Interface", 30), center("If-idx", 7), center("ISN", 5),
				center("SHG", 5), center("BVI", 5), center("TxFlood", 9), center("VLAN-Tag-Rewrite", 22))
			for _, sw := range bd.members {
				i := st.ifaces[sw]
				isBVI := "-"
				if sw == bd.bvi {
					isBVI = "*"
				}
				fmt.Fprintf(&b, "%s%s%s%s%s%s%s\n", center(i.name, 30), center(strconv.Itoa(int(sw)), 7), center("1", 5),
					center(strconv.Itoa(int(i.l2.shg)), 5), center(isBVI, 5), center("*", 9), center("none", 22))
			}
		}
	}
	return b.String()
}

// cliShowNATSessions lists the sessions per user, in the spirit of VPP's
// "show nat44 sessions".
func cliShowNATSessions(st *state, _ []string) string {
	var b strings.Builder
	b.WriteString("NAT44 ED sessions:\n")
	now := st.uptime()
	live := st.nat.liveSessions()
	fmt.Fprintf(&b, "-------- thread 0 vpp_main: %d sessions --------\n", len(live))
	for _, ns := range live {
		s := st.toSession(ns, now)
		fmt.Fprintf(&b, "  i2o %s proto %s port %d fib %d\n", s.InsideAddr.Addr(), protoName(s.Protocol), s.InsideAddr.Port(), s.InsideVRF)
		fmt.Fprintf(&b, "    o2i %s proto %s port %d fib %d\n", s.OutsideAddr.Addr(), protoName(s.Protocol), s.OutsideAddr.Port(), s.OutsideVRF)
		fmt.Fprintf(&b, "       external host %s\n", s.ExtHostAddr)
		if s.TwiceNAT {
			fmt.Fprintf(&b, "       external host nat %s\n", s.extNAT())
		}
		fmt.Fprintf(&b, "       last heard %d s ago\n", s.TimeSinceLastHeard)
		fmt.Fprintf(&b, "       total pkts %d, total bytes %d\n", s.TotalPkts, s.TotalBytes)
		switch {
		case ns.bypass:
			b.WriteString("       forwarding-bypass\n")
		case s.Static && s.TwiceNAT:
			b.WriteString("       static translation, twice-nat\n")
		case s.Static:
			b.WriteString("       static translation\n")
		default:
			b.WriteString("       dynamic translation\n")
		}
	}
	return b.String()
}
