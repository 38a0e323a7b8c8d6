package cnat

import (
	"slices"
	"strings"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Ownership of translations. VPP keeps one translation per identity (VIP, port,
// protocol): of two services wanting the same one, the first rendered keeps it and
// the other's set leaves it out (logged). Most of a cluster's translations are those
// of its node ports, one per node IP (a hundred-node cluster with two IPs per node
// puts 200 translations behind every node port), and a node port belongs to one
// service: they are owned as one, per node port (port, protocol, family), with the
// number of them staged. The others (cluster, external and load-balancer IPs) are
// owned one by one, by identity.
//
// The two meet where an external or load-balancer IP is a node's: its translation
// has the identity of the node port of that port on that node IP. Such a translation
// is refused while another service owns the node port, and a node port's translation
// on a node IP is refused while another service owns that identity; the second is
// looked up only for a node port whose (port, protocol, family) a translation owned
// by identity has (byPort), nearly never (node ports are 30000-32767).

// portKey is a node port: its number, protocol and family.
type portKey struct {
	port  uint32
	proto vpp_cnat.Protocol
	ipv6  bool
}

// portKeyOf returns the node port a translation's identity is on.
func portKeyOf(id tid) portKey {
	return portKey{port: id.port, proto: id.proto, ipv6: strings.IndexByte(id.vip, ':') >= 0}
}

// portOwner is the service owning a node port and the number of its translations
// staged on node IPs.
type portOwner struct {
	id renderer.ServiceID
	n  int
}

// ownership holds who owns what is staged.
type ownership struct {
	// owners holds the service owning each translation owned by identity, byPort
	// their number per portKey, vips their number per address (an address with one
	// gets no reject or drop route).
	owners map[tid]renderer.ServiceID
	byPort map[portKey]int
	vips   map[string]int
	// nodePorts holds the owner of each node port with translations staged.
	nodePorts map[portKey]portOwner
}

// reset forgets every owner; owned is the number of translations owned by identity
// expected (the size of the map of owners).
func (o *ownership) reset(owned int) {
	o.owners = make(map[tid]renderer.ServiceID, owned)
	o.byPort = make(map[portKey]int)
	o.vips = make(map[string]int, owned) // (an address has one port most often)
	o.nodePorts = make(map[portKey]portOwner)
}

// staged returns the number of translations owned.
func (o *ownership) staged() int {
	n := len(o.owners)
	for _, p := range o.nodePorts {
		n += p.n
	}
	return n
}

// portTally is what one claim or release learns about the node ports it meets (a
// service has a few): decided once per node port, counted per translation, written
// to the ownership at the end. The first few are kept in the tally itself.
type portTally struct {
	room  [4]portCount
	n     int
	extra []portCount
}

// each calls f with every entry.
func (pt *portTally) each(f func(c *portCount)) {
	for i := range min(pt.n, len(pt.room)) {
		f(&pt.room[i])
	}
	for i := range pt.extra {
		f(&pt.extra[i])
	}
}

// portCount is a portTally's entry.
type portCount struct {
	key portKey
	// other is the service owning the node port when it is not the claiming one,
	// shared whether translations owned by identity use its port key (then each of
	// its translations is looked up in owners).
	other        renderer.ServiceID
	otherOwns    bool
	shared       bool
	n            int
	warnedOthers bool
}

// at returns the entry of key, deciding it on first use for a claim or release by
// service id.
func (pt *portTally) at(o *ownership, id renderer.ServiceID, key portKey) *portCount {
	for i := range min(pt.n, len(pt.room)) {
		if pt.room[i].key == key {
			return &pt.room[i]
		}
	}
	for i := range pt.extra {
		if pt.extra[i].key == key {
			return &pt.extra[i]
		}
	}
	c := portCount{key: key, shared: o.byPort[key] > 0}
	if p, held := o.nodePorts[key]; held && p.id != id {
		c.other, c.otherOwns = p.id, true
	}
	pt.n++
	if pt.n <= len(pt.room) {
		pt.room[pt.n-1] = c
		return &pt.room[pt.n-1]
	}
	pt.extra = append(pt.extra, c)
	return &pt.extra[len(pt.extra)-1]
}

// isNodePortTranslation tells whether t, a translation svc wants, is one of its node
// ports' (owned per node port): a translation of a node's IP (interposed) on the
// port and protocol of one of its node ports. An external IP that is a node's, on
// such a port, has the node port's identity: rendering kept one of the two.
func isNodePortTranslation(svc *renderer.FlatService, t *vpp_cnat.Translation) bool {
	return t.GetIsRealIp() && isNodePortOf(svc, t)
}

// heldBy returns the service other than svc holding the identity of t (one of the
// translations svc wants), if any; nodePort tells whether t is owned per node port
// (counted in tally).
func (rndr *Renderer) heldBy(svc *renderer.FlatService, t *vpp_cnat.Translation, id tid, tally *portTally) (owner renderer.ServiceID, taken, nodePort bool) {
	o := &rndr.ownership
	if isNodePortTranslation(svc, t) {
		c := tally.at(o, svc.ID, portKeyOf(id))
		if c.otherOwns {
			return c.other, true, true
		}
		if c.shared {
			if owner, held := o.owners[id]; held && owner != svc.ID {
				return owner, true, true
			}
		}
		return renderer.ServiceID{}, false, true
	}
	if owner, held := o.owners[id]; held {
		return owner, owner != svc.ID, false
	}
	if rndr.nodeAddrSet[id.vip] {
		if p, held := o.nodePorts[portKeyOf(id)]; held && p.id != svc.ID {
			return p.id, true, false
		}
	}
	return renderer.ServiceID{}, false, false
}

// claim makes service id the owner of an identity (owned by identity); it tells
// whether the address got its first translation.
func (o *ownership) claim(id renderer.ServiceID, t tid) (first bool) {
	if _, held := o.owners[t]; held {
		return false
	}
	o.owners[t] = id
	o.byPort[portKeyOf(t)]++
	o.vips[t.vip]++
	return o.vips[t.vip] == 1
}

// commit adds the node-port translations counted to service id's node ports.
func (o *ownership) commit(id renderer.ServiceID, tally *portTally) {
	tally.each(func(c *portCount) { o.addNodePort(id, c) })
}

// addNodePort makes service id the owner of c's node port, with c's translations.
func (o *ownership) addNodePort(id renderer.ServiceID, c *portCount) {
	if c.n > 0 {
		p := o.nodePorts[c.key]
		p.id, p.n = id, p.n+c.n
		o.nodePorts[c.key] = p
	}
}

// own reduces wanted (sorted by identity, the service's own slice) to the
// translations service svc may stage, claiming them: a translation whose identity
// another service owns is left out and logged. A translation equal to the one of the
// same identity in prev (the service's set staged before, sorted; released already)
// is replaced by prev's message, so that an unchanged translation is the same
// message in both sets. It appends the addresses that got their first translation
// owned by identity to firsts.
func (rndr *Renderer) own(svc *renderer.FlatService, wanted, prev []*vpp_cnat.Translation, firsts []string) (owned []*vpp_cnat.Translation, _ []string) {
	owned = wanted[:0]
	j := 0
	var same vpp_cnat.Comparer
	var tally portTally
	for _, t := range wanted {
		id := idOf(t)
		owner, taken, nodePort := rndr.heldBy(svc, t, id, &tally)
		switch {
		case taken:
			rndr.refused(svc.ID, owner, t, &tally)
			continue
		case nodePort:
			tally.at(&rndr.ownership, svc.ID, portKeyOf(id)).n++
		case rndr.ownership.claim(svc.ID, id):
			firsts = append(firsts, id.vip)
		}
		for j < len(prev) && byID(prev[j], t) < 0 {
			j++
		}
		if j < len(prev) && idOf(prev[j]) == id && same.Same(prev[j], t) {
			t = prev[j]
		}
		owned = append(owned, t)
	}
	rndr.ownership.commit(svc.ID, &tally)
	return owned, firsts
}

// refused logs a translation of service id left out for owner's: once per node port
// another service owns, else each.
func (rndr *Renderer) refused(id, owner renderer.ServiceID, t *vpp_cnat.Translation, tally *portTally) {
	if c := tally.at(&rndr.ownership, id, portKeyOf(idOf(t))); c.otherOwns && c.other == owner {
		if c.warnedOthers {
			return
		}
		c.warnedOthers = true
	}
	rndr.Log.WithField("translation", vpp_cnat.TranslationIDOf(t)).
		Warnf("service %s exposes the address and port of service %s: not rendered", id, owner)
}

// claimAll makes service svc the owner of every translation of ts (its set staged
// before) unless one is owned by another service (then nothing is claimed: false).
func (rndr *Renderer) claimAll(svc *renderer.FlatService, ts []*vpp_cnat.Translation) bool {
	var tally portTally
	for _, t := range ts {
		if _, taken, _ := rndr.heldBy(svc, t, idOf(t), &tally); taken {
			return false
		}
	}
	for _, t := range ts {
		id := idOf(t)
		if isNodePortTranslation(svc, t) {
			tally.at(&rndr.ownership, svc.ID, portKeyOf(id)).n++
		} else {
			rndr.ownership.claim(svc.ID, id)
		}
	}
	rndr.ownership.commit(svc.ID, &tally)
	return true
}

// release forgets that service id owns the translations ts (of its staged set) and
// appends the addresses left without translation owned by identity to lasts. A
// translation is released where it is held: by identity when owners says so, else
// with its node port.
func (rndr *Renderer) release(id renderer.ServiceID, ts []*vpp_cnat.Translation, lasts []string) []string {
	o := &rndr.ownership
	var tally portTally
	for _, t := range ts {
		tid := idOf(t)
		c := tally.at(o, id, portKeyOf(tid))
		if c.shared {
			if owner, held := o.owners[tid]; held && owner == id {
				if last := o.releaseOne(tid); last != "" {
					lasts = append(lasts, last)
				}
				continue
			}
		}
		c.n++
	}
	tally.each(func(c *portCount) {
		if p, held := o.nodePorts[c.key]; c.n > 0 && held && p.id == id {
			if p.n -= c.n; p.n > 0 {
				o.nodePorts[c.key] = p
			} else {
				delete(o.nodePorts, c.key)
			}
		}
	})
	return lasts
}

// releaseOne forgets the owner of an identity owned by identity; it returns the
// address when it has no such translation left.
func (o *ownership) releaseOne(t tid) (lastOf string) {
	delete(o.owners, t)
	key := portKeyOf(t)
	if o.byPort[key]--; o.byPort[key] <= 0 {
		delete(o.byPort, key)
	}
	if o.vips[t.vip]--; o.vips[t.vip] > 0 {
		return ""
	}
	delete(o.vips, t.vip)
	return t.vip
}

// claims is what the translations a service wants would claim: their number per node
// port (owned per node port) and the identities of the others. It is made without
// reading the ownership (claimsOf), so that a resync makes the claims of its services
// in parallel, and decided in their order (ownAll).
type claims struct {
	ports []portCount // key and n only
	ids   []tid
}

// claimsOf returns the claims of the translations svc wants (rendered: sorted, each
// identity once). It reads neither the renderer nor the ownership.
func claimsOf(svc *renderer.FlatService, wanted []*vpp_cnat.Translation) claims {
	var c claims
	for _, t := range wanted {
		id := idOf(t)
		if !isNodePortTranslation(svc, t) {
			c.ids = append(c.ids, id)
			continue
		}
		key := portKeyOf(id)
		if k := slices.IndexFunc(c.ports, func(p portCount) bool { return p.key == key }); k >= 0 {
			c.ports[k].n++
		} else {
			c.ports = append(c.ports, portCount{key: key, n: 1})
		}
	}
	return c
}

// ownAll makes service svc the owner of everything c claims and tells true, when no
// other service holds any of it and no node port of c is shared with translations
// owned by identity; else it claims nothing and tells false (own then decides
// translation by translation). It appends the addresses that got their first
// translation owned by identity to firsts. It costs the node ports and the
// translations owned by identity of c, not its translations on node IPs.
func (rndr *Renderer) ownAll(svc *renderer.FlatService, c *claims, firsts []string) ([]string, bool) {
	o := &rndr.ownership
	for _, p := range c.ports {
		if holder, held := o.nodePorts[p.key]; (held && holder.id != svc.ID) || o.byPort[p.key] > 0 {
			return firsts, false
		}
	}
	for _, id := range c.ids {
		if owner, held := o.owners[id]; held && owner != svc.ID {
			return firsts, false
		}
		if rndr.nodeAddrSet[id.vip] {
			if holder, held := o.nodePorts[portKeyOf(id)]; held && holder.id != svc.ID {
				return firsts, false
			}
		}
	}
	for _, id := range c.ids {
		if o.claim(svc.ID, id) {
			firsts = append(firsts, id.vip)
		}
	}
	for k := range c.ports {
		o.addNodePort(svc.ID, &c.ports[k])
	}
	return firsts, true
}
