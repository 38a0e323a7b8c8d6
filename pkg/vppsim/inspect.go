package vppsim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"

	"go.fd.io/govpp/binapi/fib_types"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/nat_types"
)

// NoIndex is VPP's ~0, used for "no interface" and "no VRF".
const NoIndex = noIndex

// Interface is a snapshot of one VPP interface.
type Interface struct {
	SwIfIndex uint32
	Name      string
	DevType   string // "dpdk", "Loopback", "virtio" (TAP), "af-packet", "VXLAN", "local"
	Tag       string
	MAC       net.HardwareAddr
	AdminUp   bool
	LinkUp    bool
	LinkMTU   uint32
	MTU       [4]uint32 // L3, IP4, IP6, MPLS
	VRF       uint32    // IPv4 table
	VRF6      uint32    // IPv6 table
	// Addresses are the interface's own addresses in the order added.
	Addresses []netip.Prefix
	// Unnumbered is the interface whose addresses this one uses, NoIndex
	// if it is numbered.
	Unnumbered uint32
	// BridgeDomain is the bridge domain the interface is in, 0 in L3 mode.
	BridgeDomain uint32
	BVI          bool
	SHG          uint8
	ProxyARP     bool
	Tap          *TapInfo
	Vxlan        *VxlanInfo
	// AfPacketHost is the Linux interface of an af_packet interface.
	AfPacketHost string
}

// TapInfo is the TAP-specific part of an Interface.
type TapInfo struct {
	ID            uint32
	HostIfName    string
	HostNamespace string
	HostBridge    string
	HostMAC       net.HardwareAddr
	HostMTU       uint32
	HostIPv4      netip.Prefix
	HostIPv6      netip.Prefix
	HostIPv4GW    netip.Addr
	HostIPv6GW    netip.Addr
	RxQueues      uint16
	TxQueues      uint16
	Flags         uint32
	// LinuxCreated tells whether the Linux end exists (Linux mode).
	LinuxCreated bool
}

// VxlanInfo is the VXLAN-specific part of an Interface.
type VxlanInfo struct {
	Instance         uint32
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	VNI              uint32
	EncapVRF         uint32
	DecapNext        uint32
}

func (st *state) exportIface(i *iface) Interface {
	out := Interface{
		SwIfIndex: i.idx, Name: i.name, DevType: i.kind.devType(), Tag: i.tag,
		MAC: net.HardwareAddr(slices.Clone(i.mac[:])), AdminUp: i.adminUp, LinkUp: i.linkUp(),
		LinkMTU: i.linkMTU, MTU: i.mtu, VRF: i.vrf[0], VRF6: i.vrf[1],
		Addresses: slices.Clone(i.addrs), Unnumbered: i.unnumOf, ProxyARP: i.proxyArp,
	}
	if i.l2 != nil {
		out.BridgeDomain, out.SHG, out.BVI = i.l2.bd, i.l2.shg, i.l2.portType == l2.L2_API_PORT_TYPE_BVI
	}
	if t := i.tap; t != nil {
		out.Tap = &TapInfo{ID: t.id, HostIfName: t.hostIfName, HostNamespace: t.hostNS, HostBridge: t.hostBridge,
			HostMAC: net.HardwareAddr(slices.Clone(t.hostMAC[:])), HostMTU: t.hostMTU, HostIPv4: t.hostIP4, HostIPv6: t.hostIP6,
			HostIPv4GW: t.hostIP4GW, HostIPv6GW: t.hostIP6GW, RxQueues: t.numRx, TxQueues: t.numTx, Flags: uint32(t.flags),
			LinuxCreated: t.host != nil}
	}
	if v := i.vxlan; v != nil {
		out.Vxlan = &VxlanInfo{Instance: v.instance, Src: v.src, Dst: v.dst, SrcPort: v.srcPort, DstPort: v.dstPort,
			VNI: v.vni, EncapVRF: v.encapVRF, DecapNext: v.decapNext}
	}
	if i.afp != nil {
		out.AfPacketHost = i.afp.hostIfName
	}
	return out
}

// Interfaces returns all interfaces in sw_if_index order.
func (s *Sim) Interfaces() []Interface {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Interface
	for _, i := range s.st.sortedIfaces() {
		out = append(out, s.st.exportIface(i))
	}
	return out
}

// InterfaceByName returns the interface with the given VPP name.
func (s *Sim) InterfaceByName(name string) (Interface, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.st.byName[name]
	if i == nil {
		return Interface{}, false
	}
	return s.st.exportIface(i), true
}

// InterfaceACLs returns the input and output ACL lists of an interface,
// each ACL by its tag ("#<acl_index>" if it has none); both nil if the
// interface has no lists or does not exist.
func (s *Sim) InterfaceACLs(swIfIndex uint32) (input, output []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.st.aclBinding(swIfIndex)
	if b == nil {
		return nil, nil
	}
	tag := func(idx uint32) string {
		if e := s.st.acl.acls[idx]; e != nil && e.tag != "" {
			return e.tag
		}
		return fmt.Sprintf("#%d", idx)
	}
	for _, x := range b.input {
		input = append(input, tag(x))
	}
	for _, x := range b.output {
		output = append(output, tag(x))
	}
	return input, output
}

// InterfaceByTag returns the interface with the given tag.
func (s *Sim) InterfaceByTag(tag string) (Interface, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.st.sortedIfaces() {
		if i.tag == tag {
			return s.st.exportIface(i), true
		}
	}
	return Interface{}, false
}

// Table is a FIB table (VRF).
type Table struct {
	ID   uint32
	IPv6 bool
	Name string
}

// Tables returns the existing FIB tables, IPv4 first.
func (s *Sim) Tables() []Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Table
	for _, t := range s.st.sortedTables() {
		out = append(out, Table{ID: t.id, IPv6: t.ipv6, Name: t.name})
	}
	return out
}

// Route is one FIB entry.
type Route struct {
	VRF    uint32
	Prefix netip.Prefix
	// Source is who installed the entry: "api" for routes added through
	// ip_route_add_del, "interface" for connected and local entries,
	// "adjacency" for neighbor entries, "dhcp", "special" or
	// "default-route".
	Source string
	Paths  []RoutePath
}

// RoutePath is one path of a route.
type RoutePath struct {
	// Type is "normal", "local", "drop" or another FIB path type name.
	Type      string
	SwIfIndex uint32 // NoIndex if the path has no interface
	NextHop   netip.Addr
	// NextHopVRF is the table a path without interface looks the next hop
	// (or, with no next hop, the destination) up in.
	NextHopVRF uint32
	Weight     uint8
	Preference uint8
}

func fibSourceName(src uint8) string {
	switch src {
	case fibSrcSpecial:
		return "special"
	case fibSrcDHCP:
		return "dhcp"
	case fibSrcAdj:
		return "adjacency"
	case fibSrcInterface:
		return "interface"
	case fibSrcAPI:
		return "api"
	case fibSrcDefaultRoute:
		return "default-route"
	}
	return fmt.Sprintf("source-%d", src)
}

func pathTypeName(t fib_types.FibPathType) string {
	switch t {
	case fib_types.FIB_API_PATH_TYPE_NORMAL:
		return "normal"
	case fib_types.FIB_API_PATH_TYPE_LOCAL:
		return "local"
	case fib_types.FIB_API_PATH_TYPE_DROP:
		return "drop"
	}
	return fib_types.FibPathType_name[uint32(t)]
}

// Routes returns the FIB of a table as ip_route_dump shows it, or nil if
// the table does not exist.
func (s *Sim) Routes(vrf uint32, ipv6 bool) []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.st.table(ipv6, vrf)
	if t == nil {
		return nil
	}
	var out []Route
	for _, e := range s.st.fibEntries(t) {
		r := Route{VRF: vrf, Prefix: e.prefix, Source: fibSourceName(e.src)}
		for _, p := range e.paths {
			nh, _ := addrFromAPI(pathNextHop(p))
			rp := RoutePath{Type: pathTypeName(p.Type), SwIfIndex: p.SwIfIndex, NextHopVRF: p.TableID, Weight: p.Weight, Preference: p.Preference}
			if !nh.IsUnspecified() {
				rp.NextHop = nh
			}
			r.Paths = append(r.Paths, rp)
		}
		out = append(out, r)
	}
	return out
}

// Neighbor is a static or dynamic IP neighbor (ARP/ND entry).
type Neighbor struct {
	SwIfIndex  uint32
	IP         netip.Addr
	MAC        net.HardwareAddr
	Static     bool
	NoFIBEntry bool
}

// Neighbors returns all IP neighbors in the order they were added.
func (s *Sim) Neighbors() []Neighbor {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]*neighbor, 0, len(s.st.neighbors))
	for _, n := range s.st.neighbors {
		list = append(list, n)
	}
	sort.Slice(list, func(a, b int) bool { return list[a].seq < list[b].seq })
	out := make([]Neighbor, 0, len(list))
	for _, n := range list {
		out = append(out, Neighbor{SwIfIndex: n.sw, IP: n.ip, MAC: net.HardwareAddr(slices.Clone(n.mac[:])),
			Static:     n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_STATIC != 0,
			NoFIBEntry: n.flags&ip_neighbor.IP_API_NEIGHBOR_FLAG_NO_FIB_ENTRY != 0})
	}
	return out
}

// BridgeDomain is a snapshot of a bridge domain.
type BridgeDomain struct {
	ID                                               uint32
	Flood, UUFlood, Forward, Learn, ArpTerm, ArpUfwd bool
	MacAge                                           uint8
	Tag                                              string
	// Members are the interfaces in the bridge domain, the BVI first.
	Members []uint32
	BVI     uint32 // NoIndex if none
}

// BridgeDomains returns the bridge domains by ID.
func (s *Sim) BridgeDomains() []BridgeDomain {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []BridgeDomain
	for _, bd := range s.st.bds {
		out = append(out, BridgeDomain{ID: bd.id, Flood: bd.flood, UUFlood: bd.uuFlood, Forward: bd.forward, Learn: bd.learn,
			ArpTerm: bd.arpTerm, ArpUfwd: bd.arpUf, MacAge: bd.macAge, Tag: bd.tag, Members: slices.Clone(bd.members), BVI: bd.bvi})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// L2FIBEntry is an entry of a bridge domain's L2 FIB.
type L2FIBEntry struct {
	BD                  uint32
	MAC                 net.HardwareAddr
	SwIfIndex           uint32
	Static, Filter, BVI bool
}

// L2FIB returns the L2 FIB entries of all bridge domains.
func (s *Sim) L2FIB() []L2FIBEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	type item struct {
		k l2fibKey
		e *l2fibEntry
	}
	var list []item
	for k, e := range s.st.l2fib {
		list = append(list, item{k, e})
	}
	sort.Slice(list, func(a, b int) bool { return list[a].e.seq < list[b].e.seq })
	out := make([]L2FIBEntry, 0, len(list))
	for _, it := range list {
		out = append(out, L2FIBEntry{BD: it.k.bd, MAC: net.HardwareAddr(slices.Clone(it.k.mac[:])), SwIfIndex: it.e.sw,
			Static: it.e.static, Filter: it.e.filter, BVI: it.e.bvi})
	}
	return out
}

// NAT is a snapshot of the NAT44-ED configuration.
type NAT struct {
	Enabled          bool
	Forwarding       bool
	InsideVRF        uint32
	OutsideVRF       uint32
	Addresses        []NATAddress
	Interfaces       []NATInterface
	StaticMappings   []StaticMapping
	IdentityMappings []IdentityMapping
	LBMappings       []LBMapping
}

// NATAddress is an address of the NAT pool or of the twice-NAT pool.
type NATAddress struct {
	Addr     netip.Addr
	VRF      uint32 // NoIndex: tenant VRF independent
	TwiceNAT bool
}

// NATInterface is an interface with a NAT feature.
type NATInterface struct {
	SwIfIndex       uint32
	Inside, Outside bool
	OutputFeature   bool
}

// MappingFlags are the flags of a static or LB mapping.
type MappingFlags struct {
	AddrOnly     bool
	Out2InOnly   bool
	TwiceNAT     bool
	SelfTwiceNAT bool
}

func mappingFlags(m *natMapping) MappingFlags {
	return MappingFlags{AddrOnly: m.has(nat_types.NAT_IS_ADDR_ONLY), Out2InOnly: m.has(nat_types.NAT_IS_OUT2IN_ONLY),
		TwiceNAT: m.has(nat_types.NAT_IS_TWICE_NAT), SelfTwiceNAT: m.has(nat_types.NAT_IS_SELF_TWICE_NAT)}
}

// StaticMapping is a 1:1 static mapping (DNAT of External to Local). For
// address-only mappings the ports are 0.
type StaticMapping struct {
	Protocol          uint8
	External          netip.AddrPort
	ExternalSwIfIndex uint32 // NoIndex unless the external address is taken from an interface
	Local             netip.AddrPort
	VRF               uint32
	MappingFlags
	Tag string
}

// IdentityMapping exempts an address (and port) from translation in the
// listed VRFs.
type IdentityMapping struct {
	Protocol  uint8
	Addr      netip.AddrPort
	SwIfIndex uint32
	VRFs      []uint32
	AddrOnly  bool
	Tag       string
}

// LBMapping is a load-balancing static mapping.
type LBMapping struct {
	Protocol uint8
	External netip.AddrPort
	Locals   []Backend
	Affinity uint32
	MappingFlags
	Tag string
}

// Backend is one translation target of a mapping.
type Backend struct {
	Addr        netip.AddrPort
	VRF         uint32
	Probability uint8 // LB mappings only
}

// NAT returns the NAT44-ED configuration.
func (s *Sim) NAT() NAT {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	n := &st.nat
	out := NAT{Enabled: n.enabled, Forwarding: n.forwarding, InsideVRF: n.insideVRF, OutsideVRF: n.outsideVRF}
	for _, a := range n.addrs {
		out.Addresses = append(out.Addresses, NATAddress{Addr: a.addr, VRF: a.vrf, TwiceNAT: a.twice})
	}
	for _, sw := range n.sortedIfaces() {
		f := n.ifaces[sw].flags
		out.Interfaces = append(out.Interfaces, NATInterface{SwIfIndex: sw, Inside: f&nat_types.NAT_IS_INSIDE != 0,
			Outside: f&nat_types.NAT_IS_OUTSIDE != 0})
	}
	for _, sw := range n.outputIfs {
		out.Interfaces = append(out.Interfaces, NATInterface{SwIfIndex: sw, OutputFeature: true})
	}
	for _, m := range n.sortedMappings(natStatic) {
		ext := st.mappingExtAddr(m)
		out.StaticMappings = append(out.StaticMappings, StaticMapping{Protocol: m.ext.proto,
			External: netip.AddrPortFrom(ext, m.ext.port), ExternalSwIfIndex: m.ext.sw,
			Local: netip.AddrPortFrom(m.local, m.localPort), VRF: m.vrf, MappingFlags: mappingFlags(m), Tag: m.tag})
	}
	for _, m := range n.sortedMappings(natIdentity) {
		out.IdentityMappings = append(out.IdentityMappings, IdentityMapping{Protocol: m.ext.proto,
			Addr: netip.AddrPortFrom(st.mappingExtAddr(m), m.ext.port), SwIfIndex: m.ext.sw, VRFs: slices.Clone(m.idVRFs),
			AddrOnly: m.has(nat_types.NAT_IS_ADDR_ONLY), Tag: m.tag})
	}
	for _, m := range n.sortedMappings(natLB) {
		lb := LBMapping{Protocol: m.ext.proto, External: netip.AddrPortFrom(m.ext.addr, m.ext.port), Affinity: m.affinity,
			MappingFlags: mappingFlags(m), Tag: m.tag}
		for _, l := range m.locals {
			lb.Locals = append(lb.Locals, Backend{Addr: netip.AddrPortFrom(l.addr, l.port), VRF: l.vrf, Probability: l.prob})
		}
		out.LBMappings = append(out.LBMappings, lb)
	}
	return out
}

// lookupMapping finds the mapping translating traffic to dst:port/proto:
// an exact (address, port, protocol) mapping first, then an address-only
// one, then mappings whose external address is an interface's.
func (st *state) lookupMapping(proto uint8, dst netip.Addr, port uint16) *natMapping {
	n := &st.nat
	if m := n.mappings[natExtKey{addr: dst, port: port, proto: proto, sw: noIndex}]; m != nil {
		return m
	}
	if m := n.mappings[natExtKey{addr: dst, sw: noIndex}]; m != nil {
		return m
	}
	if n.ifaceMappings == 0 {
		return nil // no mapping takes its address from an interface
	}
	for k, m := range n.mappings {
		if k.sw != noIndex && st.mappingExtAddr(m) == dst &&
			((k.port == port && k.proto == proto) || (k.port == 0 && k.proto == 0)) {
			return m
		}
	}
	return nil
}

// LookupDNAT returns the backends a packet of protocol proto (IP protocol
// number: 6 TCP, 17 UDP, 1 ICMP) to dst:dstPort is translated to by the
// static, load-balancing and identity mappings, or nil if no mapping
// matches or NAT is disabled.
func (s *Sim) LookupDNAT(proto uint8, dst netip.Addr, dstPort uint16) []Backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	if !st.nat.enabled {
		return nil
	}
	m := st.lookupMapping(proto, dst, dstPort)
	if m == nil {
		return nil
	}
	switch m.kind {
	case natStatic:
		port := m.localPort
		if m.has(nat_types.NAT_IS_ADDR_ONLY) {
			port = dstPort
		}
		return []Backend{{Addr: netip.AddrPortFrom(m.local, port), VRF: m.vrf}}
	case natIdentity:
		var out []Backend
		for _, v := range m.idVRFs {
			out = append(out, Backend{Addr: netip.AddrPortFrom(dst, dstPort), VRF: v})
		}
		return out
	default:
		out := make([]Backend, 0, len(m.locals))
		for _, l := range m.locals {
			out = append(out, Backend{Addr: netip.AddrPortFrom(l.addr, l.port), VRF: l.vrf, Probability: l.prob})
		}
		return out
	}
}

// LookupCNAT returns the destinations of the paths of the cnat translation
// of proto (IP protocol number) to the literal VIP vip:port, in path order
// with interface endpoints resolved (an unresolved one is left out), or nil
// if there is no such translation. It costs one map lookup, whatever the
// number of translations (cnat_translation_dump lists them all).
func (s *Sim) LookupCNAT(proto uint8, vip netip.Addr, port uint16) []netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	tr := st.cnat.byKey[cnatTrKey{addr: vip, sw: noIndex, v6: vip.Is6(), port: port, proto: proto}]
	if tr == nil {
		return nil
	}
	out := make([]netip.AddrPort, 0, len(tr.paths))
	for _, p := range tr.paths {
		if a, ok := st.cnatResolve(p.dst); ok {
			out = append(out, netip.AddrPortFrom(a, p.dst.port))
		}
	}
	return out
}

// Packet is a packet for Translate.
type Packet struct {
	Protocol uint8 // IP protocol number
	Src, Dst netip.AddrPort
}

// Translate returns the packets a packet can leave NAT as when it hits a
// static, LB or identity mapping: one per backend, with the destination
// rewritten and, for twice-NAT mappings (and self-twice-NAT mappings when
// the source is the chosen backend itself), the source rewritten to the
// first twice-NAT pool address. Source ports are kept (the simulator does
// not allocate ports). It returns nil if no mapping matches.
func (s *Sim) Translate(p Packet) []Packet {
	backends := s.LookupDNAT(p.Protocol, p.Dst.Addr(), p.Dst.Port())
	if backends == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	m := st.lookupMapping(p.Protocol, p.Dst.Addr(), p.Dst.Port())
	if m == nil {
		return nil
	}
	var twiceAddr netip.Addr
	for _, a := range st.nat.addrs {
		if a.twice {
			twiceAddr = a.addr
			break
		}
	}
	out := make([]Packet, 0, len(backends))
	for _, b := range backends {
		q := Packet{Protocol: p.Protocol, Src: p.Src, Dst: b.Addr}
		snat := m.has(nat_types.NAT_IS_TWICE_NAT) || (m.has(nat_types.NAT_IS_SELF_TWICE_NAT) && p.Src.Addr() == b.Addr.Addr())
		if snat && twiceAddr.IsValid() {
			q.Src = netip.AddrPortFrom(twiceAddr, p.Src.Port())
		}
		out = append(out, q)
	}
	return out
}

// Session is a NAT44-ED session as the dumps show it.
type Session struct {
	Protocol    uint8 // IP protocol number
	InsideAddr  netip.AddrPort
	OutsideAddr netip.AddrPort
	// ExtHostAddr is the remote host (as the outside sees it).
	ExtHostAddr netip.AddrPort
	// ExtHostNATAddr is the remote host as seen from inside: the
	// twice-NAT address of twice-NAT sessions; zero means the same as
	// ExtHostAddr. nat44_del_session names a session by it.
	ExtHostNATAddr     netip.AddrPort
	InsideVRF          uint32
	OutsideVRF         uint32
	Static             bool // created by a static mapping
	TwiceNAT           bool
	LastHeard          uint64 // seconds of uptime
	TimeSinceLastHeard uint64
	TotalBytes         uint64
	TotalPkts          uint32
	TimedOut           bool
}

func (s *Session) extNAT() netip.AddrPort {
	if s.ExtHostNATAddr.IsValid() {
		return s.ExtHostNATAddr
	}
	return s.ExtHostAddr
}

// InjectSession adds a NAT session as if traffic had created it, with the
// given times and counters (which it keeps: it never expires by itself).
// Its flows translate traffic like a real session's: the i2o flow matches
// InsideAddr -> ExtHostNATAddr (or ExtHostAddr) in InsideVRF. NAT must be
// enabled.
func (s *Sim) InjectSession(sess Session) error {
	if !sess.InsideAddr.Addr().Is4() || !sess.OutsideAddr.Addr().Is4() || !sess.ExtHostAddr.Addr().Is4() {
		return errors.New("vppsim: inject session: inside, outside and external host must be IPv4 address:port")
	}
	if sess.ExtHostNATAddr.IsValid() && !sess.ExtHostNATAddr.Addr().Is4() {
		return errors.New("vppsim: inject session: ExtHostNATAddr must be IPv4")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.st.nat.enabled {
		return errors.New("vppsim: inject session: NAT44 plugin is not enabled")
	}
	c := sess
	ns := natSessFromInjected(&c)
	if s.st.nat.sess.flows[ns.i2oKey] != nil || s.st.nat.sess.flows[ns.o2iKey] != nil {
		return errors.New("vppsim: inject session: a session with the same flow exists")
	}
	s.st.natAddSession(ns)
	return nil
}

// Sessions returns the NAT sessions in creation order.
func (s *Sim) Sessions() []Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	now := st.uptime()
	live := st.nat.liveSessions()
	out := make([]Session, 0, len(live))
	for _, sess := range live {
		out = append(out, st.toSession(sess, now))
	}
	return out
}

// ProxyARPRange is a range of addresses VPP answers ARP requests for.
type ProxyARPRange struct {
	VRF       uint32
	Low, High netip.Addr
}

// ProxyARPRanges returns the proxy ARP ranges in the order added.
func (s *Sim) ProxyARPRanges() []ProxyARPRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ProxyARPRange
	for _, r := range s.st.proxyArps {
		out = append(out, ProxyARPRange{VRF: r.vrf, Low: r.lo, High: r.hi})
	}
	return out
}
