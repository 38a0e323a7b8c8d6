// Package acl is the ACL renderer of the policy plugin: it turns the tables
// of the renderer cache into VPP ACLs (api/models/vpp/acl) and the ACL lists
// of interfaces, staged into the event's transaction.
//
// Keys staged:
//
//	config/vpp/acls/v2/acl/contiv-policy-<hash>         LOCAL table (pod outputs)
//	config/vpp/acls/v2/acl/contiv-policy-EGRESS-<hash>  EGRESS table (pod inputs)
//	config/vpp/acls/v2/acl/contiv-policy-NODE-GLOBAL    GLOBAL (node outputs)
//	config/vpp/acls/v2/acl/contiv-policy-REFLECTION     permit+reflect any
//	config/vpp/acls/v2/interface/<interface>            the input and output ACLs of an interface
//
// Rule mapping: DENY -> DENY; PERMIT -> PERMIT in GLOBAL and REFLECT in the
// other tables; protocol ANY -> protocol 0 (no L4 part); a destination port
// range as given, every port as no range; an empty side -> any address of the
// other side's family; a rule without addresses on a cluster with IPv6 -> one
// rule per family (0.0.0.0/0 and ::/0). On such a cluster LOCAL and EGRESS
// ACLs open with a PERMIT of ICMPv6 types 135-136 (neighbour discovery); the
// owners of the rules follow the VPP rules one for one (no policy for it).
//
// Rule owners: RuleOwners maps the name of every ACL staged to the owner of
// each rule (the NetworkPolicies of renderer/cache's Table.Owners, and
// whether the rule denies); the statscollector labels VPP's per-rule match
// counters with them. The entries are replaced when a render creates,
// updates, deletes a table or changes its owners, before the transaction is
// committed (a failed transaction is healed by the resync that follows).
//
// Every interface has at most one input and one output ACL; rebinding a pod
// from one table to another is one InterfaceACLs update (one
// acl_interface_set_acl_list), so the pod is never unfiltered. Within an
// update the new ACLs are staged first, then the interface lists, then the
// deletions of ACLs no longer used.
//
// Cost: a table whose rules are known (same ID) costs nothing; a new LOCAL
// or EGRESS table that replaces a pod's old one (cache.Changes.Replaced)
// takes the rules the two share from the old ACL, walking both lists in
// step, and converts the others through the memo of converted rules; a new
// segment of GLOBAL does the same with the last segment of its pod address.
package acl

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer/cache"
)

// Name prefixes and names of the ACLs (upstream's, plus EGRESS).
const (
	NamePrefix     = "contiv-policy-"
	EgressPrefix   = NamePrefix + "EGRESS-"
	GlobalName     = NamePrefix + cache.GlobalID
	ReflectionName = NamePrefix + cache.ReflectionID
)

// Deps lists what the renderer needs.
type Deps struct {
	Log logrus.FieldLogger
	// Cache is the renderer cache holding the tables.
	Cache *cache.Cache
	// UpdateTxnFactory returns the transaction of the update event being
	// handled, recording the change description.
	UpdateTxnFactory func(change string) controller.UpdateOperations
	// ResyncTxnFactory returns the transaction of the resync being handled.
	ResyncTxnFactory func() controller.ResyncOperations
	// Lists, when set, merges the interface lists with the ACLs other plugins apply
	// to the same interfaces (the service plugin's firewall of LB source ranges on
	// the uplink), as owner ListsOwner; nil: the renderer stages the lists alone.
	Lists *ifacls.Lists
}

// ListsOwner is the renderer's owner name in ifacls.Lists.
const ListsOwner = ifacls.PolicyOwner

// Renderer is the ACL renderer.
type Renderer struct {
	Deps
	stats Stats
	// Converted values are immutable once built and reused: tables by ID
	// (their ID is their content, except GLOBAL's), GLOBAL by pod segment,
	// the rules of the other tables by rule. All are pruned as tables and
	// pods go, and cleared at every resync.
	byID      map[string]*vpp_acl.ACL
	bySegment map[segmentKey]segmentConv
	// segmentOf is the key of the segment of GLOBAL last converted for a pod
	// address: a new segment of the address takes the rules it shares with
	// it.
	segmentOf map[segmentPod]segmentKey
	// byRule memoizes the rules of LOCAL, EGRESS and REFLECTION tables
	// (tables with new content mostly repeat rules of the tables they
	// replace). byIDRules counts the rules of the tables of byID (with
	// repeats); when the memo holds more than twice that, the rules no
	// table of byID uses are swept out, so the memo stays bounded by the
	// live tables at an amortized O(1) per rule converted.
	byRule    map[renderer.ContivRule][]*vpp_acl.ACL_Rule
	byIDRules int
	// owners are the owners of the rules of the ACLs staged (RuleOwners).
	owners Owners
}

// RuleOwner is what a rule of a policy ACL enforces: the NetworkPolicy it
// comes from and whether it denies.
type RuleOwner struct {
	// Policy names the NetworkPolicy, "namespace/name"; a rule that several
	// policies produce (in the pods sharing the ACL, or within one pod) names
	// them all, joined with ","; "" for a rule no policy made (the node's
	// sources always allowed in, the cluster networks of an EGRESS ACL, the
	// PERMIT any closing GLOBAL or a LOCAL ACL of a pod without ingress
	// rules). The final DENY of an isolated pod's ACL names the policies
	// isolating the pods that use the ACL.
	Policy string
	// Deny is true for a rule that drops what it matches.
	Deny bool
}

// Owners maps the ACLs the renderer staged, by name, to the owners of their
// rules by rule index (VPP's rule index: the rules of the value in order).
// It is safe for concurrent use: the renderer replaces the entries of the
// tables that changed under a lock (O(the change)); a reader gets a slice
// that is never modified afterwards.
type Owners struct {
	mu    sync.RWMutex
	byACL map[string][]RuleOwner
}

// ACLRules returns the owners of the rules of the named ACL; nil for an ACL
// the renderer did not stage or whose rules no policy made (REFLECTION).
func (o *Owners) ACLRules(aclName string) []RuleOwner {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.byACL[aclName]
}

// replace sets the entries of the tables set (nil: removed), after clearing
// every entry when all is true.
func (o *Owners) replace(all bool, set map[string][]RuleOwner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if all || o.byACL == nil {
		o.byACL = make(map[string][]RuleOwner, len(set))
	}
	for name, owners := range set {
		if owners == nil {
			delete(o.byACL, name)
		} else {
			o.byACL[name] = owners
		}
	}
}

// ruleOwners converts the owners of a table to the rules of its ACL (the
// neighbour discovery permits first, no policy's; a rule without addresses
// once per IP family); nil when no rule has one.
func (r *Renderer) ruleOwners(t *cache.Table) []RuleOwner {
	if len(t.Owners) != len(t.Rules) {
		return nil
	}
	named := false
	out := make([]RuleOwner, r.ndRules(t), r.ndRules(t)+len(t.Rules))
	for i, cr := range t.Rules {
		for range r.copies(cr) {
			out = append(out, RuleOwner{Policy: t.Owners[i], Deny: cr.Action == renderer.ActionDeny})
		}
		named = named || t.Owners[i] != ""
	}
	if !named {
		return nil
	}
	return out
}

// RuleOwners returns the owners of the rules of the ACLs staged so far.
func (r *Renderer) RuleOwners() *Owners { return &r.owners }

// sweepSlack is how many rules the memo may hold beyond twice the rules of
// the memoized tables before it is swept.
const sweepSlack = 256

// segmentKey identifies a pod's egress rules by the pod, its address and
// the identity of its rule list.
type segmentKey struct {
	pod   podmodel.ID
	ip    netip.Addr
	first *renderer.ContivRule
	n     int
}

// segmentConv is a converted segment of GLOBAL: its rules and their VPP
// rules, one for one.
type segmentConv struct {
	rules []renderer.ContivRule
	conv  []*vpp_acl.ACL_Rule
}

// segmentPod is a pod address with a segment of GLOBAL.
type segmentPod struct {
	pod podmodel.ID
	ip  netip.Addr
}

var _ renderer.Renderer = (*Renderer)(nil)

// Stats counts what the last Render staged.
type Stats struct {
	// ACLs is the number of ACLs in use after the render, Rules their rules.
	ACLs, Rules int
	// Puts and Deletes are the values staged.
	Puts, Deletes int
	// Converted is the number of rules of new LOCAL and EGRESS tables and
	// of new segments of GLOBAL converted (looked up in the memo of
	// converted rules, or converted), rather than taken from what was
	// converted for the table or the pod address they replace.
	Converted int
}

// LastStats returns the counters of the last Render.
func (r *Renderer) LastStats() Stats { return r.stats }

// ACLName returns the VPP ACL name of a table.
func ACLName(t *cache.Table) string { return tableName(t.Kind, t.ID) }

func tableName(kind cache.Kind, id string) string {
	switch kind {
	case cache.Global:
		return GlobalName
	case cache.Reflection:
		return ReflectionName
	case cache.Egress:
		return EgressPrefix + id
	}
	return NamePrefix + id
}

// name returns the ACL name of a table ID in use ("" for "").
func (r *Renderer) name(id string) string {
	if id == "" {
		return ""
	}
	if t := r.Cache.Table(id); t != nil {
		return ACLName(t)
	}
	return NamePrefix + id
}

// Render implements renderer.Renderer.
func (r *Renderer) Render(pods []renderer.PodConfig, resync bool) error {
	ch := r.Cache.Update(pods, resync)
	r.stats = Stats{}
	for _, t := range r.Cache.Tables() {
		r.stats.ACLs++
		r.stats.Rules += len(t.Rules)
	}
	if resync {
		r.byID, r.bySegment, r.segmentOf, r.byRule = nil, nil, nil, nil
		txn := r.ResyncTxnFactory()
		owners := map[string][]RuleOwner{}
		for _, t := range r.Cache.Tables() {
			txn.Put(vpp_acl.ACLKey(ACLName(t)), r.acl(t))
			r.stats.Puts++
			owners[ACLName(t)] = r.ruleOwners(t)
		}
		r.owners.replace(true, owners)
		if r.Lists != nil {
			parts := make(map[string]ifacls.Part)
			for iface, b := range r.Cache.Bindings() {
				parts[iface] = r.part(b)
				r.stats.Puts++
			}
			r.Lists.Resync(txn, ListsOwner, parts)
			return nil
		}
		for iface, b := range r.Cache.Bindings() {
			txn.Put(vpp_acl.InterfaceKey(iface), r.binding(iface, b))
			r.stats.Puts++
		}
		return nil
	}
	r.publishOwners(ch)
	if len(ch.Created) == 0 && len(ch.Updated) == 0 && len(ch.Deleted) == 0 && len(ch.Interfaces) == 0 {
		return nil // only the owners of rules changed
	}
	txn := r.UpdateTxnFactory(fmt.Sprintf("policy ACLs: %d new, %d updated, %d deleted, %d interfaces",
		len(ch.Created), len(ch.Updated), len(ch.Deleted), len(ch.Interfaces)))
	for _, t := range ch.Created {
		txn.Put(vpp_acl.ACLKey(ACLName(t)), r.aclFrom(t, ch.Replaced[t.ID]))
		r.stats.Puts++
	}
	for _, t := range ch.Updated {
		txn.Put(vpp_acl.ACLKey(ACLName(t)), r.acl(t))
		r.stats.Puts++
	}
	for iface, b := range ch.Interfaces {
		if r.Lists != nil {
			r.Lists.Set(txn, ListsOwner, iface, r.part(b))
			if b == (cache.Binding{}) {
				r.stats.Deletes++
			} else {
				r.stats.Puts++
			}
			continue
		}
		if b == (cache.Binding{}) {
			txn.Delete(vpp_acl.InterfaceKey(iface))
			r.stats.Deletes++
			continue
		}
		txn.Put(vpp_acl.InterfaceKey(iface), r.binding(iface, b))
		r.stats.Puts++
	}
	for _, t := range ch.Deleted {
		txn.Delete(vpp_acl.ACLKey(ACLName(t)))
		r.stats.Deletes++
		if _, ok := r.byID[t.ID]; ok {
			delete(r.byID, t.ID)
			r.byIDRules -= len(t.Rules)
		}
	}
	if len(r.byRule) > 2*r.byIDRules+sweepSlack {
		r.sweepRules()
	}
	return nil
}

// publishOwners updates the owners of the rules of the tables an update
// created, changed or deleted.
func (r *Renderer) publishOwners(ch cache.Changes) {
	if len(ch.Created) == 0 && len(ch.Updated) == 0 && len(ch.Deleted) == 0 && len(ch.Owners) == 0 {
		return
	}
	set := make(map[string][]RuleOwner, len(ch.Created)+len(ch.Updated)+len(ch.Deleted)+len(ch.Owners))
	for _, t := range ch.Deleted {
		set[ACLName(t)] = nil
	}
	for _, ts := range [][]*cache.Table{ch.Created, ch.Updated, ch.Owners} {
		for _, t := range ts {
			set[ACLName(t)] = r.ruleOwners(t)
		}
	}
	r.owners.replace(false, set)
}

// sweepRules drops from the memo the rules that no memoized table uses
// (cost: the rules of the live tables).
func (r *Renderer) sweepRules() {
	kept := make(map[renderer.ContivRule][]*vpp_acl.ACL_Rule, len(r.byRule)/2)
	for _, t := range r.Cache.Tables() {
		if r.byID[t.ID] == nil {
			continue
		}
		for _, cr := range t.Rules {
			if ar := r.byRule[cr]; ar != nil {
				kept[cr] = ar
			}
		}
	}
	r.byRule = kept
}

func (r *Renderer) binding(iface string, b cache.Binding) *vpp_acl.InterfaceACLs {
	v := &vpp_acl.InterfaceACLs{Interface: iface}
	if b.Input != "" {
		v.InputAcls = []string{r.name(b.Input)}
	}
	if b.Output != "" {
		v.OutputAcls = []string{r.name(b.Output)}
	}
	return v
}

// part returns the binding as the renderer's part of the interface's lists.
func (r *Renderer) part(b cache.Binding) ifacls.Part {
	var p ifacls.Part
	if b.Input != "" {
		p.Input = []string{r.name(b.Input)}
	}
	if b.Output != "" {
		p.Output = []string{r.name(b.Output)}
	}
	return p
}

// acl converts a table, reusing what was converted before.
func (r *Renderer) acl(t *cache.Table) *vpp_acl.ACL { return r.aclFrom(t, nil) }

// aclFrom is acl for a table that replaces base (nil: none known): the rules
// the two share are taken from base's ACL (spliced) instead of being looked
// up one by one in the memo. A pod's new table mostly repeats its old one:
// a peer's label change adds or removes the rules of the peer's addresses.
func (r *Renderer) aclFrom(t *cache.Table, base *cache.Table) *vpp_acl.ACL {
	if r.byID == nil {
		r.byID, r.bySegment, r.segmentOf = map[string]*vpp_acl.ACL{}, map[segmentKey]segmentConv{}, map[segmentPod]segmentKey{}
		r.byRule, r.byIDRules = map[renderer.ContivRule][]*vpp_acl.ACL_Rule{}, 0
	}
	if t.Kind != cache.Global {
		if v := r.byID[t.ID]; v != nil {
			return v
		}
		v := &vpp_acl.ACL{Name: ACLName(t), Rules: make([]*vpp_acl.ACL_Rule, 0, r.ndRules(t)+len(t.Rules))}
		v.Rules = r.appendND(v.Rules, t)
		var old []renderer.ContivRule
		var oldVPP []*vpp_acl.ACL_Rule // the VPP rules of old, in order
		if base != nil && base.Kind == t.Kind {
			if b := r.byID[base.ID]; b != nil && len(b.Rules) == r.ndRules(base)+r.vppRules(base.Rules) {
				old, oldVPP = base.Rules, b.Rules[r.ndRules(base):]
			}
		}
		for i := 0; i < len(t.Rules); i++ {
			cr := t.Rules[i]
			// old and t.Rules are walked in step: equal rules are taken from
			// oldVPP (a run of them at once); an unequal rule of old that sorts
			// before cr is passed (with its VPP rules). Where the lists are not
			// sorted the walk may pass rules it could have reused; what it takes
			// is always equal.
			for len(old) > 0 && old[0] != cr && renderer.Compare(old[0], cr) < 0 {
				oldVPP, old = oldVPP[r.copies(old[0]):], old[1:]
			}
			if len(old) > 0 && old[0] == cr {
				k, n := 0, 0
				for ; k < len(old) && i+k < len(t.Rules) && old[k] == t.Rules[i+k]; k++ {
					n += r.copies(old[k])
				}
				v.Rules = append(v.Rules, oldVPP[:n]...)
				oldVPP, old = oldVPP[n:], old[k:]
				i += k - 1
				continue
			}
			r.stats.Converted++
			ar := r.byRule[cr]
			if ar == nil {
				ar = r.rules(nil, cr, t.Reflective()) // (every kind but GLOBAL is reflective: one memo serves them all)
				r.byRule[cr] = ar
			}
			v.Rules = append(v.Rules, ar...)
		}
		r.byID[t.ID] = v
		r.byIDRules += len(t.Rules)
		return v
	}
	out := &vpp_acl.ACL{Name: ACLName(t), Rules: make([]*vpp_acl.ACL_Rule, 0, len(t.Rules))}
	used := make(map[segmentKey]bool, len(t.Segments))
	pos := 0
	for _, seg := range t.Segments {
		k := segmentKey{pod: seg.Pod, ip: seg.IP, n: seg.N}
		if seg.N > 0 {
			k.first = &seg.Egress[0]
		}
		used[k] = true
		sp := segmentPod{pod: seg.Pod, ip: seg.IP}
		sc, ok := r.bySegment[k]
		if !ok {
			sc = r.convertSegment(t.Rules[pos:pos+seg.N], r.bySegment[r.segmentOf[sp]])
			r.bySegment[k] = sc
		}
		r.segmentOf[sp] = k
		out.Rules = append(out.Rules, sc.conv...)
		pos += seg.N
	}
	for ; pos < len(t.Rules); pos++ {
		out.Rules = r.rules(out.Rules, t.Rules[pos], false)
	}
	for k := range r.bySegment {
		if !used[k] {
			delete(r.bySegment, k)
		}
	}
	for sp, k := range r.segmentOf {
		if !used[k] {
			delete(r.segmentOf, sp)
		}
	}
	return out
}

// convertSegment converts the rules of a segment of GLOBAL (one VPP rule
// each), taking those it shares with prev, the last conversion of a segment
// of the same pod address (zero: none), walking both in step as aclFrom does.
func (r *Renderer) convertSegment(rules []renderer.ContivRule, prev segmentConv) segmentConv {
	// (a copy: a slice of GLOBAL's rules would keep every version of GLOBAL
	// that a live segment was converted in)
	sc := segmentConv{rules: slices.Clone(rules), conv: make([]*vpp_acl.ACL_Rule, len(rules))}
	old, oldConv := prev.rules, prev.conv
	for i, cr := range rules {
		for len(old) > 0 && old[0] != cr && renderer.Compare(old[0], cr) < 0 {
			old, oldConv = old[1:], oldConv[1:]
		}
		if len(old) > 0 && old[0] == cr {
			sc.conv[i] = oldConv[0]
			old, oldConv = old[1:], oldConv[1:]
			continue
		}
		r.stats.Converted++
		sc.conv[i] = Rule(cr, false)
	}
	return sc
}

// rules appends the VPP rules of one ContivRule to out: one rule, or, for a
// rule without addresses on a cluster with IPv6, one per IP family (a VPP
// rule has the addresses of one family: an empty side is read as 0.0.0.0/0
// by the ACL descriptor, and a VPP ACL list ends in an implicit deny, so an
// IPv4-only "any" would drop all IPv6).
func (r *Renderer) rules(out []*vpp_acl.ACL_Rule, cr renderer.ContivRule, reflective bool) []*vpp_acl.ACL_Rule {
	anyNets := r.Cache.Config().AnyNetworks
	if cr.SrcNetwork.IsValid() || cr.DestNetwork.IsValid() || !r.Cache.Config().HasIPv6() {
		return append(out, Rule(cr, reflective))
	}
	for _, n := range anyNets {
		cr.SrcNetwork, cr.DestNetwork = n, n
		out = append(out, Rule(cr, reflective))
	}
	return out
}

// copies returns the number of VPP rules of one ContivRule (rules).
func (r *Renderer) copies(cr renderer.ContivRule) int {
	if cr.SrcNetwork.IsValid() || cr.DestNetwork.IsValid() || !r.Cache.Config().HasIPv6() {
		return 1
	}
	return len(r.Cache.Config().AnyNetworks)
}

// vppRules returns the number of VPP rules of the ContivRules (copies).
func (r *Renderer) vppRules(rules []renderer.ContivRule) int {
	n := 0
	for _, cr := range rules {
		n += r.copies(cr)
	}
	return n
}

// ICMPv6 types of neighbour discovery permitted on the pod interfaces.
const (
	icmp6NeighborSolicitation  = 135
	icmp6NeighborAdvertisement = 136
	protoICMPv6                = 58
)

// ndRules returns the number of neighbour discovery permits that open the
// table's ACL: on a cluster with IPv6, the ACLs of pod interfaces (LOCAL on
// output, EGRESS on input) first permit ICMPv6 neighbour solicitations and
// advertisements, so that an isolated pod stays resolvable. VPP 25.10 runs the
// output ACL on its own solicitations to the pod (ip6-rewrite-mcast runs the
// interface's output features) and the input ACL on unicast solicitations
// and advertisements from the pod (the ip6-unicast arc), docs/dev-guide/
// VPP-FORWARDING.md §11.6 and §11.8; Calico's Felix likewise accepts ICMPv6
// types 130-133, 135 and 136 from workloads to the host whatever the policy
// (rules/static.go, the workload-to-host chain). MLD (130-132) and router
// solicitations (133) are not permitted here: they go to multicast groups,
// which VPP's input ACLs do not see (ip6-multicast arc), and VPP sends no
// router advertisements on pod interfaces (they are not turned on).
func (r *Renderer) ndRules(t *cache.Table) int {
	if (t.Kind != cache.Local && t.Kind != cache.Egress) || !r.Cache.Config().HasIPv6() {
		return 0
	}
	return 1
}

// ndPermit is the rule permitting ICMPv6 NS and NA (types in the source port
// range, any code in the destination port range, as VPP matches ICMP).
var ndPermit = &vpp_acl.ACL_Rule{Action: vpp_acl.ACL_Rule_PERMIT, Protocol: protoICMPv6,
	SourceNetwork: "::/0", DestinationNetwork: "::/0",
	SourcePortRange:      &vpp_acl.ACL_Rule_PortRange{LowerPort: icmp6NeighborSolicitation, UpperPort: icmp6NeighborAdvertisement},
	DestinationPortRange: &vpp_acl.ACL_Rule_PortRange{LowerPort: 0, UpperPort: 255}}

// appendND appends the table's neighbour discovery permits (ndRules).
func (r *Renderer) appendND(out []*vpp_acl.ACL_Rule, t *cache.Table) []*vpp_acl.ACL_Rule {
	for range r.ndRules(t) {
		out = append(out, ndPermit)
	}
	return out
}

// ACL converts a table to its VPP ACL (as on an IPv4-only cluster; the
// renderer's own conversion follows the cluster's families).
func ACL(t *cache.Table) *vpp_acl.ACL {
	acl := &vpp_acl.ACL{Name: ACLName(t), Rules: make([]*vpp_acl.ACL_Rule, 0, len(t.Rules))}
	for _, cr := range t.Rules {
		acl.Rules = append(acl.Rules, Rule(cr, t.Reflective()))
	}
	return acl
}

// Rule converts one ContivRule.
func Rule(cr renderer.ContivRule, reflective bool) *vpp_acl.ACL_Rule {
	r := &vpp_acl.ACL_Rule{Action: vpp_acl.ACL_Rule_DENY, Protocol: uint32(cr.Protocol.IPProtocol())}
	if cr.Action == renderer.ActionPermit {
		r.Action = vpp_acl.ACL_Rule_PERMIT
		if reflective {
			r.Action = vpp_acl.ACL_Rule_REFLECT
		}
	}
	if cr.SrcNetwork.IsValid() {
		r.SourceNetwork = cr.SrcNetwork.String()
	}
	if cr.DestNetwork.IsValid() {
		r.DestinationNetwork = cr.DestNetwork.String()
	}
	if cr.Protocol != renderer.ANY && !cr.AnyPort() {
		r.DestinationPortRange = &vpp_acl.ACL_Rule_PortRange{LowerPort: uint32(cr.DestPortFirst), UpperPort: uint32(cr.DestPortLast)}
	}
	return r
}

// Values returns every value the renderer would stage at a resync (for
// tests and the benchmark).
func (r *Renderer) Values() map[string]proto.Message {
	out := map[string]proto.Message{}
	for _, t := range r.Cache.Tables() {
		out[vpp_acl.ACLKey(ACLName(t))] = r.acl(t)
	}
	for iface, b := range r.Cache.Bindings() {
		out[vpp_acl.InterfaceKey(iface)] = r.binding(iface, b)
	}
	return out
}
