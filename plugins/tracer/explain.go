package tracer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Verdict is what became of a traced packet on one node.
type Verdict string

// The verdicts, from the packet's last step on the node.
const (
	// Delivered: VPP sent the packet to the destination pod's interface.
	Delivered Verdict = "delivered"
	// Forwarded: the packet left the node (a VXLAN tunnel to another node, the NIC,
	// or the host interconnect to the node's own stack).
	Forwarded Verdict = "forwarded"
	// LocalVPP: VPP itself took the packet (ip4-local: an address of VPP's).
	LocalVPP Verdict = "vpp-local"
	// DeniedByPolicy: an ACL rule of a NetworkPolicy (or the policy's isolation)
	// dropped it.
	DeniedByPolicy Verdict = "denied-by-policy"
	// NoEndpoints: the Service has no ready backend: its frontend routes to a
	// prohibit (reject) route, and VPP answered ICMP prohibited.
	NoEndpoints Verdict = "no-endpoints"
	// NoRoute: VPP's FIB has no route to the destination (or an unreachable one).
	NoRoute Verdict = "no-route"
	// DroppedByVPP: another node of VPP dropped it (DropNode, DropReason).
	DroppedByVPP Verdict = "dropped"
	// Unfinished: the trace ends without a decision (it was cut short).
	Unfinished Verdict = "unfinished"
)

// Names resolves what VPP prints to what Kubernetes knows. Each method returns ""
// (or false) when it does not know.
type Names interface {
	// InterfaceByIndex is the agent's logical name of VPP's sw_if_index.
	InterfaceByIndex(swIfIndex uint32) string
	// InterfaceByVPPName is the agent's logical name of VPP's interface name (tap3).
	InterfaceByVPPName(vppName string) string
	// PodOfInterface is the pod ("namespace/name") of a logical interface name.
	PodOfInterface(logical string) string
	// PodAt is the pod ("namespace/name") of this node with that IP address.
	PodAt(ip string) string
	// NodeAt is the node whose VPP has that address (a VXLAN endpoint).
	NodeAt(ip string) string
	// ServiceAt is the Service ("namespace/name") with a frontend at ip:port/proto
	// (proto: tcp, udp).
	ServiceAt(ip string, port uint16, proto string) string
	// RuleOwner is the NetworkPolicy ("namespace/name", several joined by ",") behind
	// rule index rule of the named ACL; ok is false for an ACL no policy made.
	RuleOwner(acl string, rule int) (policy string, deny bool, ok bool)
}

// Hop is one step of a packet in Kubernetes terms.
type Hop struct {
	// Node is VPP's graph node.
	Node string `json:"node"`
	// What says what happened there in Kubernetes terms.
	What string `json:"what"`
}

// Explained is one traced packet explained.
type Explained struct {
	// Packet is VPP's packet number in the node's trace.
	Packet int `json:"packet"`
	// Proto, Src and Dst are the IPv4 header as VPP received it.
	Proto string `json:"proto"`
	Src   string `json:"src"`
	Dst   string `json:"dst"`
	// Hops are the steps with something to say.
	Hops []Hop `json:"hops"`
	// Verdict is what became of the packet here; Reason says it in a sentence.
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// Policy and ACLRule name the policy decision that dropped (or last allowed)
	// the packet: "namespace/name" and "ACL <name> rule <n>".
	Policy  string `json:"policy,omitempty"`
	ACLRule string `json:"aclRule,omitempty"`
	// Service and Backend name the NAT mapping that translated the packet.
	Service string `json:"service,omitempty"`
	Backend string `json:"backend,omitempty"`
	// NewSrc and NewDst are the addresses after NAT ("" when unchanged).
	NewSrc string `json:"newSrc,omitempty"`
	NewDst string `json:"newDst,omitempty"`
	// Pod is the destination pod the packet was delivered to; ToNode the node a
	// VXLAN tunnel took it to.
	Pod    string `json:"pod,omitempty"`
	ToNode string `json:"toNode,omitempty"`
	// DropNode and DropReason are VPP's node and error of a dropped packet.
	DropNode   string `json:"dropNode,omitempty"`
	DropReason string `json:"dropReason,omitempty"`

	// inIf and outIf are the interfaces the packet came in on and is sent out on
	// (logical names, or VPP's when unknown), for naming where an ACL applied.
	inIf, outIf string
	// icmpError: VPP turned the packet into an ICMP error (ip4-icmp-error); what
	// the trace says after that is about the error, not the probe.
	icmpError bool
}

// Match selects the packets of a probe: the first IPv4 header of a packet must have
// one of Srcs as source and one of Dsts as destination (the probe's addresses and
// what NAT translated them to on the nodes before).
type Match struct {
	Srcs []string `json:"srcs"`
	Dsts []string `json:"dsts"`
	// Port and Proto are the probe's destination port and protocol (tcp, udp,
	// icmp), for naming the Service of a NAT session hit.
	Port  uint16 `json:"port,omitempty"`
	Proto string `json:"proto,omitempty"`
}

func (m Match) matches(src, dst string) bool {
	return slices.Contains(m.Srcs, src) && slices.Contains(m.Dsts, dst)
}

// The trace texts the explanation reads (VPP 25.10's, as the simulator prints them).
var (
	reInput     = regexp.MustCompile(`hw_if_index (\d+)`)
	reIP4       = regexp.MustCompile(`^(\S+): (\S+) -> (\S+) ttl`)
	reACL       = regexp.MustCompile(`acl (\d+) \(([^)]*)\) rule (\d+): (deny|permit\+reflect|permit)`)
	reStatic    = regexp.MustCompile(`new static session (\S+):(\d+) -> (\S+):(\d+)`)
	reNATResult = regexp.MustCompile(`: (\S+):(\d+) -> (\S+):(\d+) fib \d+$`)
	reEncap     = regexp.MustCompile(`VXLAN encap to (\S+) vni`)
	reDecap     = regexp.MustCompile(`VXLAN decap from (\S+) vni`)
	reErrorDrop = regexp.MustCompile(`^rx:\S+ (\S+): (.*)$`)
	reICMPError = regexp.MustCompile(`^ICMP type (\d+) code (\d+) to (\S+)`)
	reRewrite   = regexp.MustCompile(`^tx (\S+): `)
	reLocal     = regexp.MustCompile(`^(\S+): \S+ -> (\S+)`)
	reLookupDPO = regexp.MustCompile(`dpo-idx (\S+): `)
)

// Explain explains the packets of pkts that m selects, in order.
func Explain(pkts []Packet, names Names, m Match) []Explained {
	var out []Explained
	for _, p := range pkts {
		e, ok := explainPacket(p, names, m)
		if ok {
			out = append(out, e)
		}
	}
	return out
}

// explainPacket explains one packet; false if it is not the probe's. The probe's
// header may be the inner one of a VXLAN packet (the first ip4-input then reads
// the outer header), so every ip4-input of the packet is looked at.
func explainPacket(p Packet, names Names, m Match) (Explained, bool) {
	e := Explained{Packet: p.Index, Verdict: Unfinished}
	at := -1
	for i, l := range p.Lines {
		if sm := reIP4.FindStringSubmatch(l.Text); l.Node == "ip4-input" && sm != nil && m.matches(sm[2], sm[3]) {
			e.Proto, e.Src, e.Dst, at = sm[1], sm[2], sm[3], i
			break
		}
	}
	if at < 0 {
		return e, false
	}
	for i, l := range p.Lines {
		if l.Node == "ip4-input" {
			if i == at {
				e.Hops = append(e.Hops, Hop{Node: l.Node, What: fmt.Sprintf("%s %s -> %s", e.Proto, describeAddr(names, e.Src), describeAddr(names, e.Dst))})
			}
			continue
		}
		e.step(l, names, m)
	}
	return e, true
}

// step reads one node's line.
func (e *Explained) step(l Line, names Names, m Match) {
	add := func(format string, args ...any) {
		e.Hops = append(e.Hops, Hop{Node: l.Node, What: fmt.Sprintf(format, args...)})
	}
	switch {
	case strings.HasSuffix(l.Node, "-input") && reInput.MatchString(l.Text) && len(e.Hops) == 0:
		idx, _ := strconv.ParseUint(reInput.FindStringSubmatch(l.Text)[1], 10, 32)
		e.inIf = describeInterface(names, names.InterfaceByIndex(uint32(idx)), fmt.Sprintf("sw_if_index %d", idx))
		add("received on %s", e.inIf)
	case l.Node == "ip4-rewrite" && reRewrite.MatchString(l.Text) && !e.icmpError:
		vppIf := reRewrite.FindStringSubmatch(l.Text)[1]
		e.outIf = describeInterface(names, names.InterfaceByVPPName(vppIf), vppIf)
	case strings.HasPrefix(l.Node, "acl-plugin-"):
		e.aclStep(l, names, add)
	case strings.HasPrefix(l.Node, "nat44-"):
		e.natStep(l, names, m, add)
	case l.Node == "vxlan4-encap":
		if sm := reEncap.FindStringSubmatch(l.Text); sm != nil {
			e.ToNode = names.NodeAt(sm[1])
			e.Verdict, e.Reason = Forwarded, "sent through the VXLAN tunnel to "+orAddr(e.ToNode, "node", sm[1])
			add("VXLAN tunnel to %s", orAddr(e.ToNode, "node", sm[1]))
		}
	case l.Node == "vxlan4-input":
		if sm := reDecap.FindStringSubmatch(l.Text); sm != nil {
			add("VXLAN tunnel from %s", orAddr(names.NodeAt(sm[1]), "node", sm[1]))
		}
	case l.Node == "ip4-null":
		e.nullStep(l, add)
	case l.Node == "ip4-lookup":
		e.lookupStep(l, add)
	case l.Node == "ip4-icmp-error":
		if sm := reICMPError.FindStringSubmatch(l.Text); sm != nil && !e.icmpError {
			e.icmpError = true
			add("VPP answers %s with ICMP %s", sm[3], icmpName(sm[1], sm[2]))
		}
	case l.Node == "ip4-local":
		// the outer header of a VXLAN packet is VPP's own too: only the probe's
		// header counts
		if sm := reLocal.FindStringSubmatch(l.Text); sm != nil && (sm[2] == e.Dst || sm[2] == e.dstNow()) && !strings.Contains(l.Text, "drop:") {
			e.Verdict, e.Reason = LocalVPP, "taken by VPP itself (an address of VPP's)"
			add("for VPP itself")
		}
	case l.Node == "error-drop":
		e.dropStep(l, add)
	case strings.HasSuffix(l.Node, "-tx") && strings.Contains(l.Text, "transmitted") && !e.icmpError:
		e.txStep(strings.TrimSuffix(l.Node, "-tx"), names, add)
	}
}

func (e *Explained) aclStep(l Line, names Names, add func(string, ...any)) {
	sm := reACL.FindStringSubmatch(l.Text)
	dir := "input ACL of " + orDash(e.inIf)
	if strings.Contains(l.Node, "-out-") {
		dir = "output ACL of " + orDash(e.outIf)
	}
	dropped := strings.Contains(l.Text, "drop:")
	switch {
	case sm != nil:
		rule, _ := strconv.Atoi(sm[3])
		e.ACLRule = fmt.Sprintf("ACL %s rule %d", sm[2], rule)
		policy, _, known := names.RuleOwner(sm[2], rule)
		who := "a rule no NetworkPolicy made (the node's own traffic or the pod not isolated)"
		if known && policy != "" {
			e.Policy = policy
			who = "NetworkPolicy " + policy
		}
		if dropped {
			e.Verdict, e.Reason = DeniedByPolicy, fmt.Sprintf("denied by %s (%s)", who, e.ACLRule)
			add("DENY by %s: %s, in the %s", who, e.ACLRule, dir)
			return
		}
		add("allowed by %s: %s (%s), in the %s", who, e.ACLRule, sm[4], dir)
	case dropped && strings.Contains(l.Text, "no ACL rule matched"):
		e.Verdict, e.Reason = DeniedByPolicy, "denied: no rule of the pod's policy ACLs allows it"
		add("DENY: no ACL rule matched, in the %s", dir)
	case strings.Contains(l.Text, "session"):
		add("allowed by an ACL session of an allowed earlier packet (reflexive)")
	}
}

func (e *Explained) natStep(l Line, names Names, m Match, add func(string, ...any)) {
	if res := reNATResult.FindStringSubmatch(l.Text); res != nil {
		if res[1] != e.Src {
			e.NewSrc = res[1]
		}
		if res[3] != e.Dst {
			e.NewDst = res[3]
		}
	}
	if sm := reStatic.FindStringSubmatch(l.Text); sm != nil {
		port, _ := strconv.ParseUint(sm[2], 10, 16)
		e.Service = names.ServiceAt(sm[1], uint16(port), strings.ToLower(e.Proto))
		e.Backend = sm[3] + ":" + sm[4]
		add("NAT: Service %s (%s:%s) -> backend %s", orDash(e.Service), sm[1], sm[2], describeAddr(names, sm[3])+":"+sm[4])
		return
	}
	switch {
	case strings.Contains(l.Text, "session hit"):
		if e.NewDst != "" {
			e.Service = names.ServiceAt(e.Dst, m.Port, strings.ToLower(e.Proto))
			e.Backend = e.NewDst
			add("NAT: existing session of Service %s -> backend %s", orDash(e.Service), describeAddr(names, e.NewDst))
		} else if e.NewSrc != "" {
			add("NAT: existing session, source rewritten to %s", e.NewSrc)
		}
	case strings.Contains(l.Text, "new session"):
		add("NAT: source rewritten to %s (SNAT)", e.NewSrc)
	case strings.Contains(l.Text, "drop:"):
		add("NAT dropped it: %s", afterDrop(l.Text))
	}
}

// nullStep reads ip4-null, which sends the ICMP error of a reject (prohibit) or
// unreachable route. The route's kind is on the ip4-lookup line before it (lookupStep);
// ip4-null adds whether an answer went out.
func (e *Explained) nullStep(l Line, add func(string, ...any)) {
	switch {
	case strings.Contains(l.Text, "rate limited"):
		add("no ICMP answer: VPP's ICMP errors to this source are rate limited")
	case e.Verdict != NoEndpoints && e.Verdict != NoRoute && strings.Contains(l.Text, "send-prohibited"):
		e.noEndpoints("", add)
	case e.Verdict != NoEndpoints && e.Verdict != NoRoute && strings.Contains(l.Text, "send-unreachable"):
		e.noRoute("", add)
	}
}

// lookupStep reads ip4-lookup: a drop, prohibit or unreachable route decides.
func (e *Explained) lookupStep(l Line, add func(string, ...any)) {
	if e.icmpError {
		return // the lookup of VPP's ICMP error
	}
	prefix := ""
	if sm := reLookupDPO.FindStringSubmatch(l.Text); sm != nil {
		prefix = sm[1]
	}
	switch {
	case strings.HasSuffix(l.Text, ": drop"):
		e.Verdict, e.Reason = NoRoute, "no route: VPP's FIB drops "+prefix+" (the route to "+e.dstNow()+")"
		add("FIB entry %s drops it: no route", prefix)
	case strings.HasSuffix(l.Text, "action:send-prohibited"):
		e.noEndpoints(prefix, add)
	case strings.HasSuffix(l.Text, "action:send-unreachable"):
		e.noRoute(prefix, add)
	}
}

func (e *Explained) noEndpoints(prefix string, add func(string, ...any)) {
	e.Verdict, e.Reason = NoEndpoints, "no endpoints: "+e.dstNow()+" is a Service without ready backends (VPP rejects it with ICMP prohibited)"
	if prefix != "" {
		add("reject route %s: the Service has no endpoints (VPP answers ICMP prohibited)", prefix)
		return
	}
	add("reject route: the Service has no endpoints (VPP answers ICMP prohibited)")
}

func (e *Explained) noRoute(prefix string, add func(string, ...any)) {
	e.Verdict, e.Reason = NoRoute, "no route: VPP's FIB has an unreachable route for "+e.dstNow()+" (ICMP unreachable)"
	add("unreachable route %s: VPP answers ICMP unreachable", prefix)
}

func (e *Explained) dropStep(l Line, add func(string, ...any)) {
	sm := reErrorDrop.FindStringSubmatch(l.Text)
	if sm == nil {
		return
	}
	e.DropNode, e.DropReason = sm[1], sm[2]
	switch {
	case e.Verdict == DeniedByPolicy || e.Verdict == NoEndpoints || e.Verdict == NoRoute:
		// the node that decided already said why
	case sm[1] == "ip4-drop" && (sm[2] == "ip4 destination lookup miss" || sm[2] == "ip4 adjacency drop"):
		e.Verdict, e.Reason = NoRoute, "no route: VPP's FIB has no route to "+e.dstNow()
		add("no route to %s", e.dstNow())
	default:
		e.Verdict, e.Reason = DroppedByVPP, fmt.Sprintf("dropped by VPP at %s: %s", sm[1], sm[2])
		if sm[1] == "ip4-arp" {
			// VPP drops the packet that makes it resolve a neighbour (ip4-arp):
			// the sender's retransmission goes through once the neighbour answered.
			e.Reason += " (VPP drops the packet that starts ARP; a retransmission passes once the neighbour answers)"
		}
		add("DROP at %s: %s", sm[1], sm[2])
	}
}

// icmpName names the ICMP errors VPP sends.
func icmpName(typ, code string) string {
	switch typ + "/" + code {
	case "3/0":
		return "net unreachable"
	case "3/1":
		return "host unreachable"
	case "3/3":
		return "port unreachable"
	case "3/10", "3/13":
		return "administratively prohibited"
	case "11/0":
		return "time exceeded"
	}
	return "type " + typ + " code " + code
}

func (e *Explained) txStep(vppIf string, names Names, add func(string, ...any)) {
	logical := names.InterfaceByVPPName(vppIf)
	if pod := names.PodOfInterface(logical); pod != "" {
		e.Pod = pod
		e.Verdict, e.Reason = Delivered, "delivered to pod "+pod
		add("delivered to pod %s (interface %s)", pod, logical)
		return
	}
	if e.Verdict == Forwarded {
		return // the tunnel said where
	}
	e.Verdict, e.Reason = Forwarded, "sent out of VPP on "+describeInterface(names, logical, vppIf)
	add("sent out on %s", describeInterface(names, logical, vppIf))
}

// dstNow is the destination after NAT.
func (e *Explained) dstNow() string {
	if e.NewDst != "" {
		return e.NewDst
	}
	return e.Dst
}

func describeInterface(names Names, logical, fallback string) string {
	if logical == "" {
		return fallback
	}
	if pod := names.PodOfInterface(logical); pod != "" {
		return "pod " + pod + " (interface " + logical + ")"
	}
	return "interface " + logical
}

func describeAddr(names Names, ip string) string {
	if pod := names.PodAt(ip); pod != "" {
		return ip + " (pod " + pod + ")"
	}
	return ip
}

func orAddr(name, kind, addr string) string {
	if name == "" {
		return addr
	}
	return kind + " " + name + " (" + addr + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func afterDrop(text string) string {
	_, r, ok := strings.Cut(text, "drop: ")
	if !ok {
		return text
	}
	return r
}
