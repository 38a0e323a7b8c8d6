// Package cache is the renderer cache: it turns the rule lists of local
// pods (renderer.PodConfig) into the tables a node needs, shares identical
// tables, and keeps them up to date at the cost of what changed.
//
// Where rules are enforced (the ACL renderer's placement; VPP runs input
// ACLs before NAT and output ACLs after it, so only output ACLs see the pod
// a service connection was translated to):
//
//	pod interface, output  LOCAL table of the pod: what it may receive. For
//	                       every other local pod S whose egress is
//	                       restricted towards it, first the intersection of
//	                       S's egress and the pod's ingress for source S
//	                       (PERMITs, then DENY S; omitted when the pod's own
//	                       rules deny S anyway): local pod-to-pod traffic
//	                       never reaches a node output. Then the pod's own
//	                       ingress rules, or PERMIT any. PERMITs reflect, so
//	                       replies pass the pod's input ACL.
//	pod interface, input   EGRESS table of a pod with egress rules: PERMIT
//	                       every destination inside the cluster (pod and
//	                       service networks: judged on the outputs after
//	                       NAT), then the pod's egress rules towards the
//	                       rest, then DENY; PERMITs reflect. It enforces
//	                       egress to the outside world before the SNAT of
//	                       the node's output interface hides the pod's
//	                       address from the output ACLs (the VPP 25.10
//	                       ordering hazard). Other pods with a LOCAL table
//	                       get REFLECTION here instead.
//	node outputs, output   GLOBAL: the egress rules of every local pod with
//	                       the pod's address as source, then PERMIT any;
//	                       absent when no local pod has egress rules.
//	node outputs, input    REFLECTION while GLOBAL exists, so replies to
//	                       connections from outside pass GLOBAL.
//
// A dual-stack pod (renderer.PodConfig.IPs) gets one GLOBAL segment per
// address, with the rules towards destinations of that address's family, and
// the parts of a local pair are computed per family (S's address of a family
// towards D's of the same family).
//
// Tables are identified by a hash (FNV-64a) of their kind and rules; pods
// with equal rules share one table. A table's Owners name the policies of
// each rule, for all the pods using it: each pod holds a counted reference to
// its own owner list of the table (the policies behind its rules: its
// ingress or egress owners, and for a part of S the policies isolating S's
// egress and the pod's ingress); the union is recomputed when the distinct
// lists of a table change (cost: its rules times its distinct lists). Equal
// rules from other policies change the owners, not the table. A change of one pod's ingress rules
// recomputes that pod's LOCAL table; a change of one pod's egress rules
// recomputes GLOBAL, its EGRESS table and the LOCAL tables of the local pods
// whose part for it changed; nothing else is touched. Within a recomputed
// LOCAL table only the parts a change concerns are computed again: those of
// the sources a changed ingress rule can match and of the pods whose egress
// changed towards it (a remote pod's label change computes none); in a
// dual-stack list an address is checked against the rules of its family
// only.
package cache

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy/renderer"
)

// Kind is the role of a table.
type Kind uint8

const (
	// Local is the output table of pod interfaces.
	Local Kind = iota
	// Egress is the input table of pods with egress rules.
	Egress
	// Global is the output table of the node's interfaces.
	Global
	// Reflection is the permit+reflect-everything input table.
	Reflection
)

// String names the kind.
func (k Kind) String() string {
	return [...]string{"LOCAL", "EGRESS", "GLOBAL", "REFLECTION"}[k]
}

// Table is a list of rules applied to interfaces. In Local, Egress and
// Reflection tables PERMITs are reflective (they create sessions).
type Table struct {
	ID    string
	Kind  Kind
	Rules []renderer.ContivRule
	// Segments splits the rules of GLOBAL by pod, in order (nil for the
	// other kinds), so a renderer can convert only the pods that changed.
	Segments []Segment
	// Owners names, rule by rule, the NetworkPolicies behind the rule in
	// every pod that uses the table (renderer.JoinOwners of the pods'
	// owners; "" for a rule no policy made). The slice is replaced, never
	// changed in place, when the pods using the table change; nil for
	// REFLECTION.
	Owners []string
}

// Segment is the part of GLOBAL that comes from one pod's egress rules.
type Segment struct {
	// Pod and IP identify the pod; Egress is its egress rule list (the same
	// slice as long as the pod's rules did not change).
	Pod    podmodel.ID
	IP     netip.Addr
	Egress []renderer.ContivRule
	// N is the number of rules of the segment.
	N int
}

// Reflective tells whether the PERMITs of the table create sessions.
func (t *Table) Reflective() bool { return t.Kind != Global }

// GlobalID and ReflectionID are the IDs of the two singleton tables.
const (
	GlobalID     = "NODE-GLOBAL"
	ReflectionID = "REFLECTION"
)

// ReflectionTable is the table that reflects everything.
var ReflectionTable = &Table{ID: ReflectionID, Kind: Reflection,
	Rules: []renderer.ContivRule{{Action: renderer.ActionPermit, Protocol: renderer.ANY}}}

// Binding is the tables of one interface (IDs, "" for none).
type Binding struct {
	Input, Output string
}

// Config is what the cache needs to know of the node.
type Config struct {
	// ClusterNetworks are the pod network of all nodes and the service
	// network: egress towards them is judged on outputs, after NAT.
	ClusterNetworks []netip.Prefix
	// NodeInterfaces are the node's interfaces towards other nodes, the host
	// and the outside (host interconnect, main and other NICs, VXLAN BVI).
	NodeInterfaces []string
	// AnyNetworks are the "any" networks (0.0.0.0/0, ::/0) of the IP families
	// of the cluster: a rule without addresses is rendered once per family,
	// and with IPv6 the pod interfaces' ACLs permit neighbour discovery.
	// Empty: IPv4 only.
	AnyNetworks []netip.Prefix
}

// HasIPv6 tells whether the cluster has IPv6 (an IPv6 "any" network).
func (c Config) HasIPv6() bool {
	return slices.ContainsFunc(c.AnyNetworks, func(p netip.Prefix) bool { return p.Addr().Is6() })
}

type pod struct {
	cfg     renderer.PodConfig
	binding Binding
	// owned are the owner sets of the binding's tables that this pod holds
	// a reference to (0: none).
	owned   [2]uint64                             // input, output
	parts   map[podmodel.ID][]renderer.ContivRule // S -> S's part of this pod's LOCAL table
	sources *sourceIndex                          // the sources cfg.PodIngress permits (lazily built, unsorted lists only)
	// inSorted: cfg.PodIngress is sorted by renderer.Compare; egSorted:
	// cfg.PodEgress is too and has no source prefixes (so it is sorted by
	// destination). The rules concerning one address are then found by
	// binary search (window) instead of a scan of the list.
	inSorted, egSorted bool
	// wide holds, per list (ingress, egress) and family (IPv4, IPv6), the
	// wide part of window for an address of the family without the rules of
	// the other family (lazily built; nil until then). In a dual-stack list
	// the window of an IPv6 address would otherwise hold every IPv4 host
	// rule (their /32 is shorter than its /128), which part then scanned for
	// every pair of pods: O(the list) instead of O(the rules that can match).
	wide [2][2]*[]renderer.ContivRule
}

// setConfig sets the pod's configuration and what is derived from it.
func (p *pod) setConfig(cfg renderer.PodConfig) {
	p.cfg = cfg
	p.sources = nil
	p.wide = [2][2]*[]renderer.ContivRule{}
	p.inSorted = slices.IsSortedFunc(cfg.PodIngress, renderer.Compare)
	p.egSorted = slices.IsSortedFunc(cfg.PodEgress, renderer.Compare)
	for i := 0; p.egSorted && i < len(cfg.PodEgress); i++ {
		p.egSorted = !cfg.PodEgress[i].SrcNetwork.IsValid()
	}
}

// ingressFrom returns the rules of the pod's ingress that can match traffic
// from a, in list order (all of them when the list is not sorted).
func (p *pod) ingressFrom(a netip.Addr) (host, wide []renderer.ContivRule) {
	if !p.inSorted {
		return p.cfg.PodIngress, nil
	}
	host, wide = window(p.cfg.PodIngress, a, srcSide)
	return host, p.familyWide(0, wide, a, srcSide)
}

// egressTo returns the rules of the pod's egress that can match traffic to
// a, in list order (all of them when the list is not sorted).
func (p *pod) egressTo(a netip.Addr) (host, wide []renderer.ContivRule) {
	if !p.egSorted {
		return p.cfg.PodEgress, nil
	}
	host, wide = window(p.cfg.PodEgress, a, destSide)
	return host, p.familyWide(1, wide, a, destSide)
}

// familyWide returns wide, the wide part of window of list (0: ingress, 1:
// egress) for a, without the rules whose prefix on the side is of the other
// family (they cannot contain a); built once per list and family.
func (p *pod) familyWide(list int, wide []renderer.ContivRule, a netip.Addr, dest bool) []renderer.ContivRule {
	fam := 0
	if a.Is6() {
		fam = 1
	}
	if w := p.wide[list][fam]; w != nil {
		return *w
	}
	other := func(r *renderer.ContivRule) bool {
		n := side(r, dest)
		return n.IsValid() && n.Addr().Is6() != a.Is6()
	}
	out := wide
	if i := slices.IndexFunc(wide, func(r renderer.ContivRule) bool { return other(&r) }); i >= 0 {
		out = slices.Clone(wide[:i])
		for j := i + 1; j < len(wide); j++ {
			if !other(&wide[j]) {
				out = append(out, wide[j])
			}
		}
	}
	p.wide[list][fam] = &out
	return out
}

// The sides of window.
const (
	srcSide  = false
	destSide = true
)

func side(r *renderer.ContivRule, dest bool) netip.Prefix {
	if dest {
		return r.DestNetwork
	}
	return r.SrcNetwork
}

// window returns, of rules sorted by renderer.Compare on one side (the
// source, or the destination of rules without sources), those whose prefix
// on that side can contain a: the ones with exactly a's host prefix, then
// the ones with a shorter prefix or any, both in list order (the host ones
// come first in the list). The others have a prefix at least as long as a
// host prefix of a's family and different from it, which cannot contain a.
func window(rules []renderer.ContivRule, a netip.Addr, dest bool) (host, wide []renderer.ContivRule) {
	hp := netip.PrefixFrom(a, a.BitLen())
	bits := a.BitLen()
	// first rule with a shorter prefix or any (the predicate turns true
	// once: longer prefixes first, any last)
	lo, hi := 0, len(rules)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if n := side(&rules[m], dest); n.IsValid() && n.Bits() >= bits {
			lo = m + 1
		} else {
			hi = m
		}
	}
	w := lo
	// first rule with a prefix not before a's host prefix
	lo, hi = 0, w
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if renderer.ComparePrefix(side(&rules[m], dest), hp) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	hi = lo
	for hi < w && side(&rules[hi], dest) == hp {
		hi++
	}
	return rules[lo:hi], rules[w:]
}

// sourceIndex answers whether an ingress rule list permits anything from an
// address: host prefixes in a set, wider ones in a list.
type sourceIndex struct {
	any   bool
	hosts map[netip.Addr]bool
	nets  []netip.Prefix
}

// admits tells whether the pod's ingress rules permit anything from a.
func (p *pod) admits(a netip.Addr) bool {
	if p.cfg.PodIngress == nil {
		return true
	}
	if p.inSorted {
		host, wide := p.ingressFrom(a)
		for _, list := range [2][]renderer.ContivRule{host, wide} {
			for _, r := range list {
				if r.Action == renderer.ActionPermit && (!r.SrcNetwork.IsValid() || r.SrcNetwork.Contains(a)) {
					return true
				}
			}
		}
		return false
	}
	if p.sources == nil {
		x := &sourceIndex{hosts: map[netip.Addr]bool{}}
		for _, r := range p.cfg.PodIngress {
			switch {
			case r.Action != renderer.ActionPermit:
			case !r.SrcNetwork.IsValid():
				x.any = true
			case r.SrcNetwork.IsSingleIP():
				x.hosts[r.SrcNetwork.Addr()] = true
			default:
				x.nets = append(x.nets, r.SrcNetwork)
			}
		}
		p.sources = x
	}
	if p.sources.any || p.sources.hosts[a] {
		return true
	}
	for _, n := range p.sources.nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// Cache keeps the tables and bindings of a node.
type Cache struct {
	conf   Config
	pods   map[podmodel.ID]*pod
	egress map[podmodel.ID]*pod // pods with egress rules and an address
	tables map[string]*Table
	refs   map[string]int
	ifaces map[string]Binding // the current binding of every interface
	global *Table
	stats  Stats
	// egAllowed caches what each egress pod allows towards each other pod,
	// per IP family.
	egAllowed map[podmodel.ID]map[egKey]egEntry
	created   map[string]bool   // tables that came into use in this Update
	replaced  map[string]*Table // Changes.Replaced of this Update
	// ownerSets are the distinct owner lists of the pods using each table
	// (by table ID, then by the hash of the list), counted; their union is
	// the table's Owners. ownersDirty: the tables whose sets changed in this
	// Update; globalOwners: GLOBAL's owners changed without its rules.
	ownerSets    map[string]map[uint64]*ownerSet
	ownersDirty  map[string]bool
	globalOwners bool
	// buffers of bindingOf, reused
	ids        []podmodel.ID
	partOwners []string
	decided    map[netip.Addr]bool
	skip       [][2]int
}

// Stats counts the work of the last Update.
type Stats struct {
	// LocalTablesComputed is the number of LOCAL tables computed.
	LocalTablesComputed int
	// GlobalComputed is true when GLOBAL was recomputed.
	GlobalComputed bool
	// PartsComputed is the number of parts (S's part of D's LOCAL table)
	// computed.
	PartsComputed int
}

// New returns an empty cache.
func New(conf Config) *Cache {
	c := &Cache{conf: conf, decided: map[netip.Addr]bool{}}
	c.reset()
	return c
}

func (c *Cache) reset() {
	c.pods = map[podmodel.ID]*pod{}
	c.egress = map[podmodel.ID]*pod{}
	c.tables = map[string]*Table{}
	c.refs = map[string]int{}
	c.ifaces = map[string]Binding{}
	c.global = nil
	c.egAllowed = map[podmodel.ID]map[egKey]egEntry{}
	c.ownerSets = map[string]map[uint64]*ownerSet{}
}

// ownerSet is one owner list of a table and the pods holding it.
type ownerSet struct {
	owners []string
	refs   int
}

// egKey is a pod and an IP family (the traffic of a dual-stack pair is
// judged per family, between the two pods' addresses of that family).
type egKey struct {
	pod podmodel.ID
	v6  bool
}

// egEntry is what S's egress allows towards D (from S's address src to D's
// address ip).
type egEntry struct {
	src, ip netip.Addr
	set     portSet
}

// egressTowards returns what s's egress allows from its address sa towards d
// at d's address da, from the cache (invalidated when s's egress changes,
// checked against both addresses).
func (c *Cache) egressTowards(s *pod, sa netip.Addr, d *pod, da netip.Addr) portSet {
	m := c.egAllowed[s.cfg.ID]
	if m == nil {
		m = map[egKey]egEntry{}
		c.egAllowed[s.cfg.ID] = m
	}
	k := egKey{pod: d.cfg.ID, v6: da.Is6()}
	if e, ok := m[k]; ok && e.ip == da && e.src == sa {
		return e.set
	}
	host, wide := s.egressTo(da)
	set := portsAllowedIn([2][]renderer.ContivRule{host, wide}, s.cfg.PodEgress == nil, sa, da)
	m[k] = egEntry{src: sa, ip: da, set: set}
	return set
}

// Config returns the node configuration.
func (c *Cache) Config() Config { return c.conf }

// SetConfig replaces the node configuration; call Update with resync after.
func (c *Cache) SetConfig(conf Config) { c.conf = conf }

// Changes is what an Update changed.
type Changes struct {
	// Created are the tables that came into use, Deleted those no longer used.
	Created, Deleted []*Table
	// Updated is GLOBAL when its rules changed while it stayed in use.
	Updated []*Table
	// Owners are the tables in use, neither created nor updated, whose
	// Owners changed (the pods using them come from other policies).
	Owners []*Table
	// Interfaces maps every interface whose binding changed to its new
	// binding (zero: no tables any more).
	Interfaces map[string]Binding
	// Replaced maps the ID of a created table to a table of the same kind
	// that a pod bound to it used before (deleted or still in use); a
	// renderer may reuse what it made of the rules the two share. Not set
	// by a resync.
	Replaced map[string]*Table
}

// Table returns the table with the ID, nil if not in use.
func (c *Cache) Table(id string) *Table { return c.tables[id] }

// Tables returns the tables in use, sorted by ID.
func (c *Cache) Tables() []*Table {
	out := make([]*Table, 0, len(c.tables))
	for _, t := range c.tables {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Table) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Bindings returns the binding of every interface with tables.
func (c *Cache) Bindings() map[string]Binding {
	out := make(map[string]Binding, len(c.ifaces))
	for k, v := range c.ifaces {
		out[k] = v
	}
	return out
}

// LastStats returns the counters of the last Update.
func (c *Cache) LastStats() Stats { return c.stats }

// Update applies the new configuration of the given pods (with resync: the
// complete set of local pods) and returns what changed.
func (c *Cache) Update(pods []renderer.PodConfig, resync bool) Changes {
	c.stats = Stats{}
	oldTables := map[string]*Table{}
	oldIfaces := c.ifaces
	if resync {
		for id, t := range c.tables {
			oldTables[id] = t
		}
		c.reset()
	} else {
		c.ifaces = make(map[string]Binding, len(oldIfaces))
		for k, v := range oldIfaces {
			c.ifaces[k] = v
		}
	}
	c.created, c.replaced = map[string]bool{}, map[string]*Table{}
	c.ownersDirty, c.globalOwners = map[string]bool{}, false
	deleted := map[string]*Table{}
	// egressIsolators: pods whose egress stays isolated by other policies (the
	// LOCAL tables with a part of theirs name them); egressOwners: a pod's
	// egress owners changed (GLOBAL names them).
	var egressIsolators []podmodel.ID
	egressOwners := false

	dirty := map[podmodel.ID]bool{}
	// ingressOnly: dirty pods whose parts depend on nothing that changed but
	// their ingress rules, with the rules that differ (keepParts).
	ingressOnly := map[podmodel.ID][]renderer.ContivRule{}
	// egressChanged: pods whose egress rules or address changed, with the rules
	// that differ (nil: any local pod may be concerned).
	egressChanged := map[podmodel.ID][]renderer.ContivRule{}
	for _, cfg := range pods {
		old := c.pods[cfg.ID]
		var oldEg []renderer.ContivRule
		var oldIPs []netip.Addr
		if old != nil {
			oldEg, oldIPs = old.cfg.PodEgress, old.cfg.Addrs()
		}
		newEg, newIPs := cfg.PodEgress, cfg.Addrs()
		if cfg.Removed {
			newEg, newIPs = nil, nil
		}
		switch {
		case !slices.Equal(oldIPs, newIPs) && (oldEg != nil || newEg != nil), (oldEg == nil) != (newEg == nil):
			egressChanged[cfg.ID] = nil
			delete(c.egAllowed, cfg.ID)
		case !sameRules(oldEg, newEg):
			egressChanged[cfg.ID] = ruleDiff(oldEg, newEg)
			delete(c.egAllowed, cfg.ID)
		}
		if old != nil && !cfg.Removed && newEg != nil && !slices.Equal(old.cfg.EgressOwners, cfg.EgressOwners) {
			egressOwners = true
			if isolators(old.cfg.PodEgress, old.cfg.EgressOwners) != isolators(newEg, cfg.EgressOwners) {
				egressIsolators = append(egressIsolators, cfg.ID)
			}
		}
		if cfg.Removed {
			if old != nil {
				c.setBinding(old, Binding{}, [2]uint64{}, deleted)
				delete(c.pods, cfg.ID)
				delete(c.egress, cfg.ID)
				for _, m := range c.egAllowed {
					delete(m, egKey{pod: cfg.ID})
					delete(m, egKey{pod: cfg.ID, v6: true})
				}
			}
			continue
		}
		if old != nil && !resync && slices.Equal(old.cfg.Addrs(), cfg.Addrs()) && old.cfg.Interface == cfg.Interface &&
			sameRules(old.cfg.PodIngress, cfg.PodIngress) && sameRules(old.cfg.PodEgress, cfg.PodEgress) &&
			slices.Equal(old.cfg.IngressOwners, cfg.IngressOwners) && slices.Equal(old.cfg.EgressOwners, cfg.EgressOwners) {
			continue // nothing of this pod changed
		}
		p := old
		if p == nil {
			p = &pod{parts: map[podmodel.ID][]renderer.ContivRule{}}
			c.pods[cfg.ID] = p
		}
		if old != nil && old.cfg.Interface != cfg.Interface && old.cfg.Interface != "" {
			c.setBinding(p, Binding{}, [2]uint64{}, deleted) // moved to another interface
		}
		wasSorted, oldIn := old != nil && old.inSorted, renderer.PodConfig{}
		if old != nil {
			oldIn = old.cfg
		}
		p.setConfig(cfg)
		if diff, ok := ingressDiff(wasSorted, oldIn, p); ok && !resync {
			ingressOnly[cfg.ID] = diff
		}
		if cfg.PodEgress != nil && cfg.IP.IsValid() {
			c.egress[cfg.ID] = p
		} else {
			delete(c.egress, cfg.ID)
		}
		dirty[cfg.ID] = true
	}
	if resync {
		for id := range c.pods {
			dirty[id] = true
		}
	}
	// Parts of changed egress pods in the LOCAL tables of the other pods: only
	// the pods a changed rule can reach are looked at.
	if len(egressChanged) > 0 && !resync {
		for did, d := range c.pods {
			if dirty[did] {
				continue // recomputed in full below
			}
			for sid, diff := range egressChanged {
				if sid == did || (diff != nil && !reachesAny(diff, d.cfg.Addrs())) {
					continue
				}
				c.stats.PartsComputed++
				part := c.part(c.egress[sid], d)
				if !slices.Equal(part, d.parts[sid]) {
					if part == nil {
						delete(d.parts, sid)
					} else {
						d.parts[sid] = part
					}
					dirty[did] = true
				}
			}
		}
	}
	// The LOCAL tables with a part of a pod whose egress owners changed name
	// them: rebound (their parts stay).
	for _, sid := range egressIsolators {
		for did, d := range c.pods {
			if _, ok := d.parts[sid]; ok && !dirty[did] {
				b, owned := c.bindingOf(d)
				c.setBinding(d, b, owned, deleted)
			}
		}
	}
	// The parts of pods whose ingress or address changed are recomputed in full.
	for id := range dirty {
		d := c.pods[id]
		if d == nil {
			continue
		}
		if diff, ok := ingressOnly[id]; ok {
			c.keepParts(id, d, diff, egressChanged)
		} else {
			d.parts = map[podmodel.ID][]renderer.ContivRule{}
			for sid, s := range c.egress {
				if sid != id {
					c.stats.PartsComputed++
					if part := c.part(s, d); part != nil {
						d.parts[sid] = part
					}
				}
			}
		}
		c.stats.LocalTablesComputed++
		b, owned := c.bindingOf(d)
		c.setBinding(d, b, owned, deleted)
	}
	if len(egressChanged) > 0 || egressOwners || resync {
		c.updateGlobal(deleted)
	}
	ch := Changes{Interfaces: map[string]Binding{}}
	if !resync {
		ch.Replaced = c.replaced
	}
	ch.Owners = c.updateOwners()
	for id := range c.created {
		if _, gone := deleted[id]; gone {
			delete(deleted, id) // released and taken again in this update
			continue
		}
		if t, was := oldTables[id]; was && resync && sameRules(t.Rules, c.tables[id].Rules) {
			continue
		}
		ch.Created = append(ch.Created, c.tables[id])
	}
	for id, t := range deleted {
		if c.tables[id] == nil {
			ch.Deleted = append(ch.Deleted, t)
		}
	}
	if resync {
		for id, t := range oldTables {
			if c.tables[id] == nil {
				ch.Deleted = append(ch.Deleted, t)
			}
		}
	}
	for iface, b := range c.ifaces {
		if oldIfaces[iface] != b {
			ch.Interfaces[iface] = b
		}
	}
	for iface := range oldIfaces {
		if _, ok := c.ifaces[iface]; !ok {
			ch.Interfaces[iface] = Binding{}
		}
	}
	if c.stats.GlobalComputed && c.global != nil && !c.created[GlobalID] {
		ch.Updated = append(ch.Updated, c.global)
	} else if c.globalOwners && c.global != nil && !c.created[GlobalID] {
		ch.Owners = append(ch.Owners, c.global)
	}
	if resync {
		ch.Owners = nil // a resync renders every table
	}
	for i := 0; i < len(ch.Owners); i++ {
		if t := ch.Owners[i]; c.created[t.ID] && slices.Contains(ch.Created, t) {
			ch.Owners = slices.Delete(ch.Owners, i, i+1) // rendered as new
			i--
		}
	}
	sortTables(ch.Created)
	sortTables(ch.Deleted)
	sortTables(ch.Owners)
	return ch
}

// updateOwners recomputes the Owners of the tables whose owner sets changed
// (cost: their rules times their distinct owner lists) and returns those in
// use.
func (c *Cache) updateOwners() []*Table {
	var out []*Table
	for id := range c.ownersDirty {
		t := c.tables[id]
		sets := c.ownerSets[id]
		if t == nil || t.Kind == Reflection {
			continue
		}
		var union []string
		for _, set := range sets {
			switch {
			case union == nil:
				union = set.owners
			case !slices.Equal(union, set.owners):
				joined := make([]string, len(union))
				for i := range union {
					joined[i] = renderer.JoinOwners(union[i], set.owners[i])
				}
				union = joined
			}
		}
		t.Owners = union
		out = append(out, t)
	}
	return out
}

func sortTables(ts []*Table) {
	slices.SortFunc(ts, func(a, b *Table) int { return cmp.Compare(a.ID, b.ID) })
}

// bindingOf computes the tables of a pod and takes references to them and
// to the pod's owner lists of them.
func (c *Cache) bindingOf(d *pod) (Binding, [2]uint64) {
	var b Binding
	var owned [2]uint64
	if !d.cfg.IP.IsValid() || d.cfg.Interface == "" {
		return b, owned
	}
	if len(d.parts) > 0 || d.cfg.PodIngress != nil || d.cfg.PodEgress != nil {
		ids := c.sortedIDs(d.parts)
		own, ownOwners := d.cfg.PodIngress, d.cfg.IngressOwners
		if own == nil {
			own, ownOwners = []renderer.ContivRule{permitAny}, nil
		}
		ownerOf := func(i int) string { return renderer.OwnerAt(ownOwners, own, i) }
		// rules of a source with a part are shadowed by it: dropped (in a
		// sorted list they are ranges, found by binary search)
		decided := c.decided
		clear(decided)
		skip := c.skip[:0]
		for _, sid := range ids {
			// a part ends each of its sources (one per IP family) with a DENY
			for _, pr := range d.parts[sid] {
				if pr.Action != renderer.ActionDeny {
					continue
				}
				src := pr.SrcNetwork.Addr()
				if d.inSorted && d.cfg.PodIngress != nil {
					host, _ := window(own, src, srcSide)
					if len(host) > 0 {
						lo := cap(own) - cap(host) // host is own[lo:hi]
						skip = append(skip, [2]int{lo, lo + len(host)})
					}
				} else {
					decided[src] = true
				}
			}
		}
		slices.SortFunc(skip, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
		c.skip = skip
		partOwners := c.partOwners[:0]
		for _, sid := range ids {
			partOwners = append(partOwners, c.partOwner(c.pods[sid], d))
		}
		c.partOwners = partOwners
		// each calls fn with the rules of the table in order and their owners
		each := func(fn func(renderer.ContivRule, string)) {
			for k, sid := range ids {
				owner := partOwners[k]
				for _, r := range d.parts[sid] {
					fn(r, owner)
				}
			}
			next := 0
			for _, sk := range skip {
				for i := next; i < sk[0]; i++ {
					fn(own[i], ownerOf(i))
				}
				next = sk[1]
			}
			for i := next; i < len(own); i++ {
				if r := own[i]; len(decided) == 0 || !r.SrcNetwork.IsSingleIP() || !decided[r.SrcNetwork.Addr()] {
					fn(r, ownerOf(i))
				}
			}
		}
		b.Output, owned[1] = c.takeStream(Local, each)
	}
	if d.cfg.PodEgress != nil {
		b.Input, owned[0] = c.takeStream(Egress, func(fn func(renderer.ContivRule, string)) {
			c.eachEgressRule(d.cfg.PodEgress, d.cfg.EgressOwners, fn)
		})
	} else if b.Output != "" {
		b.Input = c.take(Reflection, nil)
	}
	return b, owned
}

// partOwner names the policies behind S's part of D's LOCAL table: those
// isolating S's egress and, when D is isolated, those isolating D's ingress
// (the part's PERMITs are what both allow, its DENY what either denies).
func (c *Cache) partOwner(s, d *pod) string {
	owner := ""
	if s != nil {
		owner = isolators(s.cfg.PodEgress, s.cfg.EgressOwners)
	}
	return renderer.JoinOwners(owner, isolators(d.cfg.PodIngress, d.cfg.IngressOwners))
}

// isolators returns the policies isolating a pod in the direction of the
// rules: the owners of their final DENY ("" for none).
func isolators(rules []renderer.ContivRule, owners []string) string {
	if len(rules) == 0 {
		return ""
	}
	return renderer.OwnerAt(owners, rules, len(rules)-1)
}

// takeStream is take for rules given by a generator: the table is hashed
// first and built only when no pod uses it yet. It also takes a reference to
// the pod's owner list of the table, returned as its hash.
func (c *Cache) takeStream(kind Kind, each func(fn func(renderer.ContivRule, string))) (string, uint64) {
	// one allocation for what the generator's callback updates
	acc := &struct {
		h, oh ruleHash
		n     int
	}{h: *newRuleHash(kind), oh: fnvOffset64}
	each(func(r renderer.ContivRule, owner string) {
		acc.h.add(r)
		acc.oh = ruleHash(ownerHash(uint64(acc.oh), owner))
		acc.n++
	})
	id, n := acc.h.id(), acc.n
	oh := uint64(acc.oh) | 1 // 0 is "no owner list"
	c.takeOwners(id, oh, n, each)
	if c.refs[id] > 0 {
		c.refs[id]++
		return id, oh
	}
	rules := make([]renderer.ContivRule, 0, n)
	each(func(r renderer.ContivRule, _ string) { rules = append(rules, r) })
	t := &Table{ID: id, Kind: kind, Rules: rules}
	c.tables[id] = t
	c.created[id] = true
	c.refs[id] = 1
	return id, oh
}

// ownerHash feeds an owner and a separator into an FNV-64a hash.
func ownerHash(h uint64, owner string) uint64 {
	for i := 0; i < len(owner); i++ {
		h = (h ^ uint64(owner[i])) * fnvPrime64
	}
	return (h ^ 0xff) * fnvPrime64
}

// takeOwners adds a reference to the owner list oh of table id, building it
// from the generator when it is new.
func (c *Cache) takeOwners(id string, oh uint64, n int, each func(fn func(renderer.ContivRule, string))) {
	sets := c.ownerSets[id]
	if sets == nil {
		sets = map[uint64]*ownerSet{}
		c.ownerSets[id] = sets
	}
	if set := sets[oh]; set != nil {
		set.refs++
		return
	}
	owners := make([]string, 0, n)
	each(func(_ renderer.ContivRule, owner string) { owners = append(owners, owner) })
	sets[oh] = &ownerSet{owners: owners, refs: 1}
	c.ownersDirty[id] = true
}

// releaseOwners drops a reference to the owner list oh of table id.
func (c *Cache) releaseOwners(id string, oh uint64) {
	sets := c.ownerSets[id]
	set := sets[oh]
	if oh == 0 || set == nil {
		return
	}
	if set.refs--; set.refs > 0 {
		return
	}
	delete(sets, oh)
	if len(sets) == 0 {
		delete(c.ownerSets, id)
	}
	c.ownersDirty[id] = true
}

var permitAny = renderer.ContivRule{Action: renderer.ActionPermit, Protocol: renderer.ANY}

// sortedIDs returns the keys of m sorted, in a buffer reused by the next
// call.
func (c *Cache) sortedIDs(m map[podmodel.ID][]renderer.ContivRule) []podmodel.ID {
	ids := c.ids[:0]
	defer func() { c.ids = ids[:0] }()
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b podmodel.ID) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return ids
}

// eachEgressRule gives the rules of the EGRESS table of egress rules: the
// cluster networks first, the rules towards other destinations after.
func (c *Cache) eachEgressRule(eg []renderer.ContivRule, owners []string, fn func(renderer.ContivRule, string)) {
	for _, n := range c.conf.ClusterNetworks {
		fn(renderer.ContivRule{Action: renderer.ActionPermit, DestNetwork: n, Protocol: renderer.ANY}, "")
	}
	for i, r := range eg {
		if r.Action == renderer.ActionPermit && r.DestNetwork.IsValid() && c.inCluster(r.DestNetwork) {
			continue // shadowed by the cluster networks
		}
		fn(r, renderer.OwnerAt(owners, eg, i))
	}
}

func (c *Cache) inCluster(p netip.Prefix) bool {
	for _, n := range c.conf.ClusterNetworks {
		if n.Bits() <= p.Bits() && n.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// updateGlobal recomputes GLOBAL and the node interfaces' bindings.
func (c *Cache) updateGlobal(deleted map[string]*Table) {
	c.stats.GlobalComputed = true
	ids := make([]*pod, 0, len(c.egress))
	for _, p := range c.egress {
		ids = append(ids, p)
	}
	slices.SortFunc(ids, func(a, b *pod) int { return a.cfg.IP.Compare(b.cfg.IP) })
	var rules []renderer.ContivRule
	var owners []string
	var segments []Segment
	for _, s := range ids {
		// one segment per address of the pod (each family of a dual-stack
		// pod), with the rules towards destinations of that family
		for _, ip := range s.cfg.Addrs() {
			src := netip.PrefixFrom(ip, ip.BitLen())
			n := 0
			for i, r := range s.cfg.PodEgress {
				if r.DestNetwork.IsValid() && r.DestNetwork.Addr().Is4() != ip.Is4() {
					continue // towards the other family: never from this address
				}
				r.SrcNetwork = src
				rules = append(rules, r)
				owners = append(owners, renderer.OwnerAt(s.cfg.EgressOwners, s.cfg.PodEgress, i))
				n++
			}
			segments = append(segments, Segment{Pod: s.cfg.ID, IP: ip, Egress: s.cfg.PodEgress, N: n})
		}
	}
	old := c.global
	if len(rules) == 0 {
		c.global = nil
	} else {
		rules, owners = append(rules, permitAny), append(owners, "")
		if old != nil && sameRules(old.Rules, rules) {
			c.stats.GlobalComputed = false
			if !slices.Equal(old.Owners, owners) {
				old.Owners, c.globalOwners = owners, true
			}
			return
		}
		c.global = &Table{ID: GlobalID, Kind: Global, Rules: rules, Segments: segments, Owners: owners}
	}
	b := Binding{}
	if c.global != nil {
		if old == nil {
			c.created[GlobalID] = true
		}
		c.tables[GlobalID] = c.global
		b = Binding{Input: ReflectionID, Output: GlobalID}
	} else if old != nil {
		delete(c.tables, GlobalID)
		deleted[GlobalID] = old
	}
	for _, iface := range c.conf.NodeInterfaces {
		if iface == "" {
			continue
		}
		old := c.ifaces[iface]
		if old.Input == ReflectionID && b.Input != ReflectionID {
			c.release(ReflectionID, deleted)
		}
		if b.Input == ReflectionID && old.Input != ReflectionID {
			c.take(Reflection, nil)
		}
		if b == (Binding{}) {
			delete(c.ifaces, iface)
		} else {
			c.ifaces[iface] = b
		}
	}
}

// ruleDiff returns the rules in exactly one of a and b.
func ruleDiff(a, b []renderer.ContivRule) []renderer.ContivRule {
	in := make(map[renderer.ContivRule]int, len(a)+len(b))
	for _, r := range a {
		in[r] |= 1
	}
	for _, r := range b {
		in[r] |= 2
	}
	out := []renderer.ContivRule{}
	for r, m := range in {
		if m != 3 {
			out = append(out, r)
		}
	}
	return out
}

// maxIngressDiff bounds the differing rules for which keepParts looks at
// each source: beyond it, every part is computed again.
const maxIngressDiff = 64

// ingressDiff returns the rules in exactly one of the ingress lists of old
// (its configuration before the update; sorted tells whether its ingress
// was sorted) and p, and true when nothing else of p the parts of its LOCAL
// table depend on changed: p's addresses and interface, whether it is
// isolated on ingress, and both lists sorted (the rules that can match a
// source are then in the same relative order in both). The parts do not
// depend on p's own egress rules (they are the other pods' egress). False
// also when more than maxIngressDiff rules differ.
func ingressDiff(sorted bool, old renderer.PodConfig, p *pod) ([]renderer.ContivRule, bool) {
	cfg := p.cfg
	if !sorted || !p.inSorted || old.ID != cfg.ID || old.Interface != cfg.Interface ||
		(old.PodIngress == nil) != (cfg.PodIngress == nil) || !slices.Equal(old.Addrs(), cfg.Addrs()) {
		return nil, false
	}
	var diff []renderer.ContivRule
	a, b := old.PodIngress, cfg.PodIngress
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(a) > 0 && len(b) > 0 && a[0] == b[0]:
			a, b = a[1:], b[1:]
			continue
		case len(b) == 0 || len(a) > 0 && renderer.Compare(a[0], b[0]) < 0:
			diff, a = append(diff, a[0]), a[1:]
		default:
			diff, b = append(diff, b[0]), b[1:]
		}
		if len(diff) > maxIngressDiff {
			return nil, false
		}
	}
	return diff, true
}

// keepParts updates the parts of d, a pod whose ingress rules changed by
// diff and nothing else its parts depend on (ingressDiff). S's part depends
// on d's ingress only through the rules that can match traffic from S's
// addresses, and on S's egress only through the rules that concern d's
// addresses; so it is computed again only for the sources a rule of diff can
// match and the pods whose egress changed (egressChanged: by rules that reach
// d, or in any way when nil); the others stay.
func (c *Cache) keepParts(id podmodel.ID, d *pod, diff []renderer.ContivRule, egressChanged map[podmodel.ID][]renderer.ContivRule) {
	update := func(sid podmodel.ID) {
		c.stats.PartsComputed++
		if part := c.part(c.egress[sid], d); part != nil {
			d.parts[sid] = part
		} else {
			delete(d.parts, sid)
		}
	}
	for sid, egDiff := range egressChanged {
		if sid != id && (egDiff == nil || reachesAny(egDiff, d.cfg.Addrs()) ||
			c.egress[sid] != nil && matchesSource(diff, c.egress[sid].cfg.Addrs())) {
			update(sid)
		}
	}
	if len(diff) == 0 {
		return
	}
	for sid, s := range c.egress {
		if _, done := egressChanged[sid]; done || sid == id {
			continue
		}
		if matchesSource(diff, s.cfg.Addrs()) {
			update(sid)
		}
	}
}

// matchesSource tells whether one of the rules can match traffic from one of
// ips.
func matchesSource(rules []renderer.ContivRule, ips []netip.Addr) bool {
	return sideMatches(rules, ips, srcSide)
}

// reachesAny tells whether one of the rules concerns traffic to one of ips.
func reachesAny(rules []renderer.ContivRule, ips []netip.Addr) bool {
	return sideMatches(rules, ips, destSide)
}

// sideMatches tells whether the prefix of one of the rules on the side is
// any or contains one of ips.
func sideMatches(rules []renderer.ContivRule, ips []netip.Addr, dest bool) bool {
	for i := range rules {
		n := side(&rules[i], dest)
		for _, ip := range ips {
			if !n.IsValid() || n.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// part returns S's part of D's LOCAL table, for each IP family both pods have
// an address of (a dual-stack pair is judged per family): nothing for a
// family where S's egress allows everything towards D, else PERMITs for the
// ports both S's egress and D's ingress allow from S to D, then DENY from S.
func (c *Cache) part(s, d *pod) []renderer.ContivRule {
	if s == nil || d == nil {
		return nil
	}
	var out []renderer.ContivRule
	for _, sa := range s.cfg.Addrs() {
		for _, da := range d.cfg.Addrs() {
			if sa.Is4() == da.Is4() {
				out = c.familyPart(out, s, sa, d, da)
				break
			}
		}
	}
	return out
}

// familyPart appends S's part of D's LOCAL table for S's address sa and D's
// address da (of one family).
func (c *Cache) familyPart(out []renderer.ContivRule, s *pod, sa netip.Addr, d *pod, da netip.Addr) []renderer.ContivRule {
	eg := c.egressTowards(s, sa, d, da)
	if eg.all {
		return out
	}
	if eg.empty() && !d.admits(sa) {
		return out // the pod's own rules deny s already: no part needed
	}
	allowed := eg
	if !eg.empty() {
		host, wide := d.ingressFrom(sa)
		allowed = eg.intersect(portsAllowedIn([2][]renderer.ContivRule{host, wide}, d.cfg.PodIngress == nil, sa, da))
	}
	src := netip.PrefixFrom(sa, sa.BitLen())
	for proto, ranges := range allowed.ranges {
		for _, r := range ranges {
			rule := renderer.ContivRule{Action: renderer.ActionPermit, SrcNetwork: src, Protocol: renderer.Protocol(proto)}
			if r.first != 0 || r.last != 65535 {
				rule.DestPortFirst, rule.DestPortLast = r.first, r.last
			}
			out = append(out, rule)
		}
	}
	return append(out, renderer.ContivRule{Action: renderer.ActionDeny, SrcNetwork: src, Protocol: renderer.ANY})
}

// take returns the ID of the table with the rules, creating it or adding a
// reference.
func (c *Cache) take(kind Kind, rules []renderer.ContivRule) string {
	var t *Table
	if kind == Reflection {
		t = ReflectionTable
	} else {
		t = &Table{ID: tableID(kind, rules), Kind: kind, Rules: rules}
	}
	if c.refs[t.ID] == 0 {
		c.tables[t.ID] = t
		c.created[t.ID] = true
	}
	c.refs[t.ID]++
	return t.ID
}

// release drops a reference to a table.
func (c *Cache) release(id string, deleted map[string]*Table) {
	if id == "" {
		return
	}
	c.refs[id]--
	if c.refs[id] <= 0 {
		delete(c.refs, id)
		if t := c.tables[id]; t != nil {
			deleted[id] = t
		}
		delete(c.tables, id)
	}
}

// setBinding replaces the tables of a pod's interface and the pod's owner
// lists of them (the references of b and owned are taken by the caller;
// those of the old binding are released here).
func (c *Cache) setBinding(p *pod, b Binding, owned [2]uint64, deleted map[string]*Table) {
	old := p.binding
	c.noteReplaced(old.Input, b.Input)
	c.noteReplaced(old.Output, b.Output)
	c.releaseOwners(old.Input, p.owned[0])
	c.releaseOwners(old.Output, p.owned[1])
	c.release(old.Input, deleted)
	c.release(old.Output, deleted)
	p.binding, p.owned = b, owned
	if p.cfg.Interface == "" {
		return
	}
	if b == (Binding{}) {
		delete(c.ifaces, p.cfg.Interface)
	} else {
		c.ifaces[p.cfg.Interface] = b
	}
}

// noteReplaced records that the table old is replaced by the table id, when
// id was created in this update and old is of the same kind (the first
// replaced table of id is kept).
func (c *Cache) noteReplaced(old, id string) {
	if old == "" || id == "" || old == id || !c.created[id] || c.replaced[id] != nil {
		return
	}
	if t, n := c.tables[old], c.tables[id]; t != nil && n != nil && t.Kind == n.Kind {
		c.replaced[id] = t
	}
}

// tableID hashes the kind and the rules (their fields, in binary).
func tableID(kind Kind, rules []renderer.ContivRule) string {
	h := newRuleHash(kind)
	for _, r := range rules {
		h.add(r)
	}
	return h.id()
}

// ruleHash is FNV-64a over a kind and rules, fed one rule at a time (the
// bytes of a rule: action, protocol, ports big-endian, then each prefix as
// its length and 16 address bytes, or 0xff for any).
type ruleHash uint64

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func newRuleHash(kind Kind) *ruleHash {
	h := ruleHash(fnvOffset64)
	h.byte(byte(kind))
	return &h
}

func (h *ruleHash) byte(b byte) { *h = (*h ^ ruleHash(b)) * fnvPrime64 }

func (h *ruleHash) add(r renderer.ContivRule) {
	for _, b := range [...]byte{byte(r.Action), byte(r.Protocol), byte(r.DestPortFirst >> 8), byte(r.DestPortFirst),
		byte(r.DestPortLast >> 8), byte(r.DestPortLast)} {
		h.byte(b)
	}
	h.prefix(r.SrcNetwork)
	h.prefix(r.DestNetwork)
}

func (h *ruleHash) prefix(p netip.Prefix) {
	if !p.IsValid() {
		h.byte(0xff)
		return
	}
	h.byte(byte(p.Bits()))
	a := p.Addr().As16()
	for _, b := range a {
		h.byte(b)
	}
}

func (h *ruleHash) id() string {
	const digits = "0123456789abcdef"
	var out [16]byte
	for i, v := 15, uint64(*h); i >= 0; i, v = i-1, v>>4 {
		out[i] = digits[v&0xf]
	}
	return string(out[:])
}

func sameRules(a, b []renderer.ContivRule) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return slices.Equal(a, b)
}

// portRange is an inclusive port range.
type portRange struct{ first, last uint16 }

// portSet is what a rule list allows between two addresses: everything, or
// port ranges per protocol (TCP, UDP, SCTP).
type portSet struct {
	all    bool
	ranges [3][]portRange
}

// portsAllowed evaluates a list of PERMITs followed by DENY any (nil:
// everything allowed) for traffic from src to dst.
func portsAllowed(rules []renderer.ContivRule, src, dst netip.Addr) portSet {
	return portsAllowedIn([2][]renderer.ContivRule{rules}, rules == nil, src, dst)
}

// portsAllowedIn is portsAllowed for a list given in two pieces, in order
// (the rules of a list that can match, see window); none: the list is nil.
func portsAllowedIn(pieces [2][]renderer.ContivRule, none bool, src, dst netip.Addr) portSet {
	if none {
		return portSet{all: true}
	}
	var s portSet
	for _, r := range eachOf(pieces) {
		if r.SrcNetwork.IsValid() && !r.SrcNetwork.Contains(src) || r.DestNetwork.IsValid() && !r.DestNetwork.Contains(dst) {
			continue
		}
		if r.Action == renderer.ActionDeny {
			break
		}
		if r.Protocol == renderer.ANY {
			return portSet{all: true}
		}
		first, last := r.DestPortFirst, r.DestPortLast
		if r.AnyPort() {
			first, last = 0, 65535
		}
		s.ranges[r.Protocol] = append(s.ranges[r.Protocol], portRange{first, last})
	}
	return normalized(s)
}

// eachOf iterates over the rules of the pieces in order.
func eachOf(pieces [2][]renderer.ContivRule) func(yield func(int, renderer.ContivRule) bool) {
	return func(yield func(int, renderer.ContivRule) bool) {
		i := 0
		for _, list := range pieces {
			for _, r := range list {
				if !yield(i, r) {
					return
				}
				i++
			}
		}
	}
}

func normalized(s portSet) portSet {
	for i := range s.ranges {
		s.ranges[i] = normalize(s.ranges[i])
	}
	return s
}

// normalize sorts and merges ranges.
func normalize(rs []portRange) []portRange {
	if len(rs) < 2 {
		return rs
	}
	slices.SortFunc(rs, func(a, b portRange) int { return cmp.Compare(a.first, b.first) })
	out := rs[:1]
	for _, r := range rs[1:] {
		lastR := &out[len(out)-1]
		if uint32(r.first) <= uint32(lastR.last)+1 {
			lastR.last = max(lastR.last, r.last)
		} else {
			out = append(out, r)
		}
	}
	return out
}

// empty tells whether the set allows nothing.
func (s portSet) empty() bool {
	return !s.all && len(s.ranges[0]) == 0 && len(s.ranges[1]) == 0 && len(s.ranges[2]) == 0
}

// intersect returns what both sets allow.
func (s portSet) intersect(o portSet) portSet {
	if s.all {
		return o
	}
	if o.all {
		return s
	}
	var out portSet
	for p := range s.ranges {
		for _, a := range s.ranges[p] {
			for _, b := range o.ranges[p] {
				lo, hi := max(a.first, b.first), min(a.last, b.last)
				if lo <= hi {
					out.ranges[p] = append(out.ranges[p], portRange{lo, hi})
				}
			}
		}
	}
	return out
}

// Dump formats the tables and bindings, for tests and debugging.
func (c *Cache) Dump() string {
	var b strings.Builder
	for _, t := range c.Tables() {
		fmt.Fprintf(&b, "table %s %s\n", t.Kind, t.ID)
		for _, r := range t.Rules {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	ifs := make([]string, 0, len(c.ifaces))
	for k := range c.ifaces {
		ifs = append(ifs, k)
	}
	slices.Sort(ifs)
	for _, k := range ifs {
		fmt.Fprintf(&b, "iface %s in=%s out=%s\n", k, c.ifaces[k].Input, c.ifaces[k].Output)
	}
	return b.String()
}
