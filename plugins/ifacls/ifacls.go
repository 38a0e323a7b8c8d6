// Package ifacls shares the ACL lists of VPP interfaces between the plugins that
// filter on the same interface. VPP has one input and one output list per interface,
// set whole (acl_interface_set_acl_list, one InterfaceACLs value per interface), so
// two plugins that each staged their own InterfaceACLs for the node's uplink would
// overwrite each other. Instead each plugin (an owner) sets its part of an
// interface's lists here, and Lists stages the merged value into the event's
// transaction:
//
//	service plugin (lbfirewall) ──Set(txn, "service", iface, part)──┐
//	policy plugin (ACL renderer) ──Set(txn, "policy", iface, part)──┴─> Lists ──> config/vpp/acls/v2/interface/<iface>
//
// Merging: the parts in the order of the owners given to New, each part's ACLs in its
// order. A part's Tail (e.g. a permit-any ACL after ACLs that only filter some
// traffic) closes the list only when no later owner has ACLs in that direction: an
// ACL list ends with its last ACL's decision, and a later owner's ACLs must still be
// reached. An interface whose merged lists are empty has no value (deleted).
//
// A Lists is used from the controller's event loop only (no locking). Costs: Set is
// O(the parts of one interface); Resync of an owner is O(its interfaces).
package ifacls

import (
	"fmt"
	"slices"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// Key is the Lists of the agent (provided by the service plugin's cell, read by the
// policy plugin's).
var Key = infra.NewKey[*Lists]("interface-acl-lists")

// The owners of the agent, in merge order: the firewall of LoadBalancer source
// ranges first (it filters some traffic and lets the rest reach the next ACLs), then
// the network policies.
const (
	ServiceOwner = "service"
	PolicyOwner  = "policy"
)

// NewAgentLists returns the lists of the agent's owners (ServiceOwner, PolicyOwner).
func NewAgentLists() *Lists { return New(ServiceOwner, PolicyOwner) }

// Part is one owner's ACLs of one interface, by name, in evaluation order.
type Part struct {
	// Input and Output are the owner's ACLs of received and sent packets.
	Input, Output []string
	// InputTail and OutputTail, when set, end the list when no later owner has ACLs
	// in that direction.
	InputTail, OutputTail string
}

// IsEmpty tells whether the part has no ACL.
func (p Part) IsEmpty() bool {
	return len(p.Input) == 0 && len(p.Output) == 0 && p.InputTail == "" && p.OutputTail == ""
}

func (p Part) equal(o Part) bool {
	return slices.Equal(p.Input, o.Input) && slices.Equal(p.Output, o.Output) &&
		p.InputTail == o.InputTail && p.OutputTail == o.OutputTail
}

// Lists holds the parts of every interface.
type Lists struct {
	owners []string
	parts  map[string][]Part // interface -> part of each owner (index of owners)
}

// New returns lists merged in the order of owners.
func New(owners ...string) *Lists {
	return &Lists{owners: owners, parts: make(map[string][]Part)}
}

func (l *Lists) index(owner string) int {
	i := slices.Index(l.owners, owner)
	if i < 0 {
		panic(fmt.Sprintf("ifacls: unknown owner %q (owners: %v)", owner, l.owners))
	}
	return i
}

// set records a part and tells whether it changed.
func (l *Lists) set(i int, iface string, p Part) bool {
	parts := l.parts[iface]
	if parts == nil {
		if p.IsEmpty() {
			return false
		}
		parts = make([]Part, len(l.owners))
		l.parts[iface] = parts
	}
	if parts[i].equal(p) {
		return false
	}
	parts[i] = p
	if !slices.ContainsFunc(parts, func(p Part) bool { return !p.IsEmpty() }) {
		delete(l.parts, iface)
	}
	return true
}

// Set sets the owner's part of the interface's lists (an empty Part removes it) and
// stages the merged lists into txn when they changed.
func (l *Lists) Set(txn controller.UpdateOperations, owner, iface string, p Part) {
	if !l.set(l.index(owner), iface, p) {
		return
	}
	if v := l.Value(iface); v != nil {
		txn.Put(vpp_acl.InterfaceKey(iface), v)
	} else {
		txn.Delete(vpp_acl.InterfaceKey(iface))
	}
}

// Resync replaces every part of the owner by parts (interface -> part) and stages
// the merged lists of the interfaces the owner has or had a part of. An interface
// left without ACLs whose lists an earlier owner staged in this resync gets empty
// lists (a resync cannot delete a value staged before); one nobody staged is simply
// not staged, so the resync removes it.
func (l *Lists) Resync(txn controller.ResyncOperations, owner string, parts map[string]Part) {
	i := l.index(owner)
	touched := make(map[string]struct{}, len(parts))
	for iface, ps := range l.parts {
		if !ps[i].IsEmpty() {
			touched[iface] = struct{}{}
		}
	}
	for iface := range parts {
		touched[iface] = struct{}{}
	}
	for iface := range touched {
		l.set(i, iface, parts[iface])
		key := vpp_acl.InterfaceKey(iface)
		switch v := l.Value(iface); {
		case v != nil:
			txn.Put(key, v)
		case txn.Get(key) != nil:
			txn.Put(key, &vpp_acl.InterfaceACLs{Interface: iface})
		}
	}
}

// Value returns the merged lists of the interface (nil: no ACL).
func (l *Lists) Value(iface string) *vpp_acl.InterfaceACLs {
	parts := l.parts[iface]
	if parts == nil {
		return nil
	}
	v := &vpp_acl.InterfaceACLs{Interface: iface}
	v.InputAcls = merge(parts, func(p Part) ([]string, string) { return p.Input, p.InputTail })
	v.OutputAcls = merge(parts, func(p Part) ([]string, string) { return p.Output, p.OutputTail })
	if len(v.InputAcls) == 0 && len(v.OutputAcls) == 0 {
		return nil
	}
	return v
}

// merge concatenates one direction of the parts, with the tail of a part only when
// no later part has ACLs in that direction.
func merge(parts []Part, dir func(Part) ([]string, string)) []string {
	var out []string
	for i, p := range parts {
		acls, tail := dir(p)
		out = append(out, acls...)
		if tail == "" {
			continue
		}
		later := false
		for _, q := range parts[i+1:] {
			if a, t := dir(q); len(a) > 0 || t != "" {
				later = true
				break
			}
		}
		if !later {
			out = append(out, tail)
		}
	}
	return out
}
