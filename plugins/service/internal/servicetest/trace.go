package servicetest

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// NAT is the NAT44 configuration found in a set of key-value pairs.
type NAT struct {
	Global *vpp_nat.Nat44Global
	DNATs  map[string]*vpp_nat.DNat44 // by label
}

// NATFrom picks the NAT44 values out of kvs (nil values are ignored).
func NATFrom(kvs map[string]proto.Message) NAT {
	n := NAT{DNATs: make(map[string]*vpp_nat.DNat44)}
	for key, v := range kvs {
		switch m := v.(type) {
		case *vpp_nat.Nat44Global:
			n.Global = m
		case *vpp_nat.DNat44:
			if label, ok := vpp_nat.ParseDNAT44Key(key); ok {
				n.DNATs[label] = m
			}
		}
	}
	return n
}

// Packet is a packet entering VPP on interface InIf.
type Packet struct {
	Proto    vpp_nat.DNat44_Protocol
	Src, Dst netip.AddrPort
	InIf     string
}

// Outcome is one way the packet may leave the NAT: its new destination (in VRF), and
// its new source. A twice-NATed source keeps its port here (VPP would allocate one).
type Outcome struct {
	Dst netip.AddrPort
	VRF uint32
	Src netip.AddrPort
}

// String returns "src -> dst (vrf N)".
func (o Outcome) String() string { return fmt.Sprintf("%s -> %s (vrf %d)", o.Src, o.Dst, o.VRF) }

// Trace evaluates the packet against the configuration like VPP's NAT44-ED out2in
// path would: destination translation happens only when the packet arrives on an
// interface with the NAT "out" feature or the output feature (which runs out2in on
// the interface's input), identity mappings exempt their address, and a
// static mapping matching (protocol, destination IP, destination port) translates to
// one of its locals, the source becoming the twice-NAT pool address when twice-NAT is
// ENABLED, or SELF and the packet is sent to its own source. It returns every possible
// outcome (one per local) and why nothing was translated when nothing was.
func (n NAT) Trace(p Packet) (outcomes []Outcome, why string) {
	unchanged := []Outcome{{Dst: p.Dst, Src: p.Src}}
	if n.Global == nil {
		return unchanged, "no global NAT configuration"
	}
	if !n.hasOut2In(p.InIf) {
		return unchanged, fmt.Sprintf("interface %q has neither the NAT out nor the output feature", p.InIf)
	}
	// Like VPP, a mapping of the exact address and port wins over an address-only one.
	dst := p.Dst.Addr().String()
	var match *vpp_nat.DNat44_StaticMapping
	for _, d := range n.DNATs {
		for _, m := range d.GetStMappings() {
			if m.GetProtocol() == p.Proto && m.GetExternalIp() == dst && m.GetExternalPort() == uint32(p.Dst.Port()) {
				if match != nil {
					return unchanged, fmt.Sprintf("ambiguous: %s:%d matched by two mappings", m.GetExternalIp(), m.GetExternalPort())
				}
				match = m
			}
		}
	}
	for _, d := range n.DNATs {
		for _, id := range d.GetIdMappings() {
			exact := id.GetPort() == uint32(p.Dst.Port()) && id.GetProtocol() == p.Proto
			if id.GetIpAddress() == dst && (exact || (id.GetPort() == 0 && match == nil)) {
				if exact && match != nil {
					return unchanged, fmt.Sprintf("ambiguous: %s:%d has a static and an identity mapping", dst, p.Dst.Port())
				}
				return unchanged, "identity mapping of " + d.GetLabel()
			}
		}
	}
	if match == nil {
		return unchanged, "no static mapping"
	}
	twice, hasTwice := n.twiceNATAddress()
	for _, l := range match.GetLocalIps() {
		ip, err := netip.ParseAddr(l.GetLocalIp())
		if err != nil {
			return unchanged, fmt.Sprintf("bad local IP %q", l.GetLocalIp())
		}
		o := Outcome{Dst: netip.AddrPortFrom(ip, uint16(l.GetLocalPort())), VRF: l.GetVrfId(), Src: p.Src}
		snat := match.GetTwiceNat() == vpp_nat.DNat44_StaticMapping_ENABLED ||
			(match.GetTwiceNat() == vpp_nat.DNat44_StaticMapping_SELF && ip == p.Src.Addr())
		if snat {
			if !hasTwice {
				return unchanged, "twice-NAT needed but the pool has no twice-NAT address"
			}
			o.Src = netip.AddrPortFrom(twice, p.Src.Port())
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, ""
}

// SNAT tells the source a packet from src gets when it leaves VPP through outIf: the
// first (non twice-NAT) pool address when outIf has the output feature and src is not
// exempted by an identity mapping, src itself otherwise.
func (n NAT) SNAT(src netip.Addr, outIf string) netip.Addr {
	if n.Global == nil {
		return src
	}
	output := false
	for _, i := range n.Global.GetNatInterfaces() {
		if i.GetName() == outIf && i.GetOutputFeature() {
			output = true
		}
	}
	if !output {
		return src
	}
	for _, d := range n.DNATs {
		for _, id := range d.GetIdMappings() {
			if id.GetIpAddress() == src.String() && id.GetPort() == 0 {
				return src
			}
		}
	}
	for _, a := range n.Global.GetAddressPool() {
		if !a.GetTwiceNat() {
			if ip, err := netip.ParseAddr(a.GetAddress()); err == nil {
				return ip
			}
		}
	}
	return src
}

func (n NAT) hasOut2In(ifName string) bool {
	for _, i := range n.Global.GetNatInterfaces() {
		if i.GetName() == ifName && !i.GetIsInside() {
			return true
		}
	}
	return false
}

func (n NAT) twiceNATAddress() (netip.Addr, bool) {
	for _, a := range n.Global.GetAddressPool() {
		if a.GetTwiceNat() {
			ip, err := netip.ParseAddr(a.GetAddress())
			return ip, err == nil
		}
	}
	return netip.Addr{}, false
}

// Destinations returns the destinations of the outcomes, sorted, as strings.
func Destinations(outcomes []Outcome) []string {
	out := make([]string, len(outcomes))
	for i, o := range outcomes {
		out[i] = o.Dst.String()
	}
	sort.Strings(out)
	return out
}

// ProtoDiff returns "" when the messages are equal, else a line diff of their text
// forms ("-" lines only in want, "+" lines only in got).
func ProtoDiff(want, got proto.Message) string {
	if proto.Equal(want, got) {
		return ""
	}
	return DiffLines(protoText(want), protoText(got))
}

func protoText(m proto.Message) string {
	if m == nil || !m.ProtoReflect().IsValid() {
		return "<none>"
	}
	b, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	// prototext randomly uses one or two spaces after a colon; normalise.
	return strings.ReplaceAll(string(b), ":  ", ": ")
}

// DiffLines returns a line diff of two texts based on their longest common
// subsequence of lines: common lines indented by two spaces, removed ones prefixed by
// "- ", added ones by "+ ".
func DiffLines(want, got string) string {
	a, b := strings.Split(strings.TrimRight(want, "\n"), "\n"), strings.Split(strings.TrimRight(got, "\n"), "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("+ " + b[j] + "\n")
			j++
		default:
			sb.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}
