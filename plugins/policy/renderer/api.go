// Package renderer is the contract between the policy configurator and the
// renderers: ContivRule, the total order over rules, and the Renderer
// interface through which the rules of each local pod reach a dataplane.
//
// Directions are the pod's: PodIngress rules filter traffic the pod
// receives (their peers are sources), PodEgress rules filter traffic it
// sends (their peers are destinations). A nil list means the pod is not
// isolated in that direction (everything is allowed); an isolated list is a
// set of PERMIT rules followed by one DENY of everything.
package renderer

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// Action is what a rule does with matching traffic.
type Action uint8

const (
	// ActionDeny drops the traffic.
	ActionDeny Action = iota
	// ActionPermit lets the traffic pass.
	ActionPermit
)

// String returns "DENY" or "PERMIT".
func (a Action) String() string {
	if a == ActionDeny {
		return "DENY"
	}
	return "PERMIT"
}

// Protocol is the L4 protocol a rule matches.
type Protocol uint8

// The protocols, in the order Compare puts them (ANY last: it is the
// widest).
const (
	// TCP matches TCP (IP protocol 6).
	TCP Protocol = iota
	// UDP matches UDP (17).
	UDP
	// SCTP matches SCTP (132).
	SCTP
	// ANY matches every IP protocol, ICMP included; ports are ignored.
	ANY
)

// String returns the protocol name.
func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	case SCTP:
		return "SCTP"
	}
	return "ANY"
}

// IPProtocol returns the IP protocol number (0 for ANY).
func (p Protocol) IPProtocol() uint8 {
	switch p {
	case TCP:
		return 6
	case UDP:
		return 17
	case SCTP:
		return 132
	}
	return 0
}

// ContivRule is one rule of a pod's policy. A zero (invalid) prefix is any
// address; DestPortFirst = DestPortLast = 0 is any port; ports are ignored
// for protocol ANY. Source ports are never restricted.
type ContivRule struct {
	Action        Action
	SrcNetwork    netip.Prefix
	DestNetwork   netip.Prefix
	Protocol      Protocol
	DestPortFirst uint16
	DestPortLast  uint16
}

// AnyPort tells whether the rule matches every port of its protocol.
func (r ContivRule) AnyPort() bool {
	return r.Protocol == ANY || (r.DestPortFirst == 0 && r.DestPortLast == 0) ||
		(r.DestPortFirst == 0 && r.DestPortLast == 65535)
}

// String formats the rule, e.g. "PERMIT 10.1.1.2/32 -> any TCP:80-81".
func (r ContivRule) String() string {
	var b strings.Builder
	b.WriteString(r.Action.String())
	b.WriteByte(' ')
	b.WriteString(prefixString(r.SrcNetwork))
	b.WriteString(" -> ")
	b.WriteString(prefixString(r.DestNetwork))
	b.WriteByte(' ')
	b.WriteString(r.Protocol.String())
	if !r.AnyPort() {
		if r.DestPortFirst == r.DestPortLast {
			fmt.Fprintf(&b, ":%d", r.DestPortFirst)
		} else {
			fmt.Fprintf(&b, ":%d-%d", r.DestPortFirst, r.DestPortLast)
		}
	}
	return b.String()
}

func prefixString(p netip.Prefix) string {
	if !p.IsValid() {
		return "any"
	}
	return p.String()
}

// ports returns the inclusive destination port range of r.
func (r ContivRule) ports() (uint16, uint16) {
	if r.AnyPort() {
		return 0, 65535
	}
	return r.DestPortFirst, r.DestPortLast
}

// Compare is a total order over rules: source network, then destination
// network (more specific prefixes first, then by address; any last), then
// protocol (TCP, UDP, SCTP, ANY), then destination ports (narrower ranges
// first, then by first port; any last), then action (DENY first). If a
// rule matches a strict subset of what another matches, it sorts first, so
// a sorted list of PERMITs followed by DENYs of wider scope keeps its
// meaning under first-match evaluation.
func Compare(a, b ContivRule) int {
	if c := ComparePrefix(a.SrcNetwork, b.SrcNetwork); c != 0 {
		return c
	}
	if c := ComparePrefix(a.DestNetwork, b.DestNetwork); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Protocol, b.Protocol); c != 0 {
		return c
	}
	if a.Protocol != ANY {
		af, al := a.ports()
		bf, bl := b.ports()
		if c := cmp.Compare(uint32(al)-uint32(af), uint32(bl)-uint32(bf)); c != 0 {
			return c
		}
		if c := cmp.Compare(af, bf); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Action, b.Action)
}

// ComparePrefix is the order of Compare over one side's prefixes: longer
// first, then by address, any (invalid) last. In a list sorted by Compare
// the rules with one source prefix are contiguous, and so are those with a
// source shorter than n bits (with the "any" sources after them).
func ComparePrefix(a, b netip.Prefix) int {
	switch {
	case !a.IsValid() && !b.IsValid():
		return 0
	case !a.IsValid():
		return 1
	case !b.IsValid():
		return -1
	}
	if c := cmp.Compare(b.Bits(), a.Bits()); c != 0 {
		return c
	}
	return a.Addr().Compare(b.Addr())
}

// PodConfig is what a renderer is told about one local pod.
type PodConfig struct {
	// ID is the pod's name and namespace.
	ID podmodel.ID
	// IP is the pod's address (invalid when it has none yet): the primary one,
	// IPs[0].
	IP netip.Addr
	// IPs are all the pod's addresses, the primary first (a dual-stack pod has
	// one of each family); nil: IP alone.
	IPs []netip.Addr
	// Interface is the logical name of the pod's VPP interface ("" when the
	// pod is not wired).
	Interface string
	// PodIngress filters what the pod receives; nil: not isolated.
	PodIngress []ContivRule
	// PodEgress filters what the pod sends; nil: not isolated.
	PodEgress []ContivRule
	// IngressOwners and EgressOwners name, rule by rule, the NetworkPolicies
	// PodIngress and PodEgress come from: "namespace/name", several joined by
	// JoinOwners, "" for a rule no policy made (the node's sources always
	// allowed in); the final DENY is owned by the policies isolating the pod.
	// nil (or a length that differs from the rules'): unknown, no rule names
	// a policy.
	IngressOwners, EgressOwners []string
	// Removed is true for a pod that is gone: its ACLs must go.
	Removed bool
}

// Addrs returns the pod's addresses: IPs, or IP alone when IPs is nil (none
// when IP is invalid).
func (c *PodConfig) Addrs() []netip.Addr {
	switch {
	case len(c.IPs) > 0:
		return c.IPs
	case c.IP.IsValid():
		return []netip.Addr{c.IP}
	}
	return nil
}

// OwnerSeparator separates the policies of an owner list.
const OwnerSeparator = ","

// JoinOwners returns the union of two owner lists (sorted policy names
// joined by OwnerSeparator; "" is the empty list), itself sorted. It
// allocates only when the union is neither list.
func JoinOwners(a, b string) string {
	switch {
	case a == b || b == "":
		return a
	case a == "":
		return b
	}
	// walk both lists in order: count what each has that the other has not
	onlyA, onlyB := 0, 0
	walkOwners(a, b, func(name string, inA, inB bool) {
		if !inB {
			onlyA++
		}
		if !inA {
			onlyB++
		}
	})
	switch {
	case onlyB == 0:
		return a
	case onlyA == 0:
		return b
	}
	var out strings.Builder
	out.Grow(len(a) + len(b) + 1)
	walkOwners(a, b, func(name string, _, _ bool) {
		if out.Len() > 0 {
			out.WriteString(OwnerSeparator)
		}
		out.WriteString(name)
	})
	return out.String()
}

// walkOwners calls fn with every name of the union of two sorted owner lists,
// in order, saying which lists have it.
func walkOwners(a, b string, fn func(name string, inA, inB bool)) {
	next := func(s string) (string, string, bool) {
		if s == "" {
			return "", "", false
		}
		head, rest, _ := strings.Cut(s, OwnerSeparator)
		return head, rest, true
	}
	ha, ra, okA := next(a)
	hb, rb, okB := next(b)
	for okA || okB {
		switch {
		case !okB || okA && ha < hb:
			fn(ha, true, false)
			ha, ra, okA = next(ra)
		case !okA || hb < ha:
			fn(hb, false, true)
			hb, rb, okB = next(rb)
		default:
			fn(ha, true, true)
			ha, ra, okA = next(ra)
			hb, rb, okB = next(rb)
		}
	}
}

// OwnerAt returns the owner of rule i of a list with the given owners ("" when
// the owners are unknown).
func OwnerAt(owners []string, rules []ContivRule, i int) string {
	if len(owners) != len(rules) {
		return ""
	}
	return owners[i]
}

// Renderer turns the rules of local pods into dataplane configuration.
type Renderer interface {
	// Render applies the new configuration of the given pods; only these pods
	// changed. With resync, the pods are the complete set and everything not
	// listed is removed.
	Render(pods []PodConfig, resync bool) error
}
