package natplugin

import (
	"fmt"
	"strings"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// validate is ValidateDNat44 keeping the parsed mappings of a valid value for its
// creation (see parsedCache).
func (d *dnatDescriptor) validate(key string, v *nat.DNat44) error {
	old := d.lastValid[key]
	err := d.validateValue(key, v)
	if err == nil {
		d.conflicts.validated(v.GetLabel(), old, v, d.eachValid)
	}
	return err
}

// eachValid calls fn with the last valid value of every key.
func (d *dnatDescriptor) eachValid(fn func(*nat.DNat44)) {
	for _, v := range d.lastValid {
		fn(v)
	}
}

// validateValue is ValidateDNat44, checking a change against the last value accepted
// for the key when it can (validChange).
func (d *dnatDescriptor) validateValue(key string, v *nat.DNat44) error {
	if d.seen == nil {
		d.seen = map[mappingID]bool{}
		d.lastValid = map[string]*nat.DNat44{}
	}
	if ref := d.lastValid[key]; ref != nil {
		if err, decided := validChange(key, ref, v); decided {
			if err == nil {
				d.lastValid[key] = v
			}
			return err
		}
	}
	seen := d.seen
	if len(v.GetStMappings())+len(v.GetIdMappings()) > maxScratchMappings {
		seen = nil // a map of its own: clearing a map grown that large would cost every later call
	}
	ms, err := validDNat44(key, v, seen)
	if err == nil {
		d.parsed.put(v, ms)
		d.lastValid[key] = v
	}
	return err
}

// maxChangedEntries bounds the entries validChange parses: a larger change is checked
// whole (it costs about as much, and the duplicate check stays linear).
const maxChangedEntries = 16

// validChange checks v, a value of key, against ref, a value of the same key that
// validated: the static mappings v has in common with ref (equal field by field) at
// its start and at its end are valid and have distinct external keys, so only the
// entries in between are parsed, checked, and compared with the others for
// duplicates. decided is false when that does not apply (identity mappings, more than
// maxChangedEntries changed, a changed entry that is address-only or names an
// interface, whose duplicates cannot be told by the text of the others): the caller
// checks v whole. The errors name the same fields as a whole check.
//
// Cost: O(entries) comparisons, no parsing of unchanged entries and no allocation for
// them: a node joining changes two entries of each of the 1,000 NodePort values of a
// large cluster, where a whole check parsed ~100 mappings of each.
func validChange(key string, ref, v *nat.DNat44) (err error, decided bool) {
	if len(ref.GetIdMappings()) > 0 || len(v.GetIdMappings()) > 0 || ref.GetLabel() != v.GetLabel() {
		return nil, false
	}
	if v.GetLabel() == "" {
		return nil, false // the whole check names the problem
	}
	if key != "" && (!strings.HasPrefix(key, nat.DNAT44Prefix) || key[len(nat.DNAT44Prefix):] != v.GetLabel()) {
		return nil, false
	}
	a, b := ref.GetStMappings(), v.GetStMappings()
	var c staticComparer
	n := 0
	for n < len(a) && n < len(b) && c.same(a[n], b[n]) {
		n++
	}
	m := 0
	for m < len(a)-n && m < len(b)-n && c.same(a[len(a)-1-m], b[len(b)-1-m]) {
		m++
	}
	changed := b[n : len(b)-m]
	if len(changed) > maxChangedEntries {
		return nil, false
	}
	for _, e := range changed {
		if e.GetExternalPort() == 0 || e.GetExternalInterface() != "" {
			return nil, false
		}
	}
	var p problems
	var memo localsMemo
	parsed := make([]mapping, 0, len(changed))
	entry := make([]*nat.DNat44_StaticMapping, 0, len(changed)) // the entry of each parsed mapping
	for i, e := range changed {
		if pm, ok := parseStatic(&p, fieldPath{"st_mappings", n + i}, e, &memo); ok {
			parsed, entry = append(parsed, pm), append(entry, e)
		}
	}
	// Every entry whose mapping an entry before it has is a duplicate, reported once
	// (as the whole check does): the later ones among the changed entries, and a
	// changed entry that an unchanged one lists too. Valid port mappings of an
	// external IPv4 address have the same ident exactly when their address texts (an
	// IPv4 address has one text that parses), ports and protocols are equal.
	dups := duplicates(parsed, nil)
	unchanged := [2][]*nat.DNat44_StaticMapping{b[:n], b[len(b)-m:]}
	for i, e := range entry {
		dup := len(dups) > 0 && dups[0] == i
		if dup {
			dups = dups[1:]
		}
		for _, us := range unchanged {
			for _, u := range us {
				dup = dup || sameExternal(e, u)
			}
		}
		if dup {
			p.add("st_mappings", "mapping %s is listed twice", parsed[i].id())
		}
	}
	return p.err(), true
}

// sameExternal tells whether static mapping u has the external address, port and
// protocol of e, a port mapping of an external address.
func sameExternal(e, u *nat.DNat44_StaticMapping) bool {
	return u.GetExternalInterface() == "" && u.GetExternalPort() == e.GetExternalPort() &&
		u.GetProtocol() == e.GetProtocol() && u.GetExternalIp() == e.GetExternalIp()
}

// maxScratchMappings bounds the values whose duplicate check reuses the descriptor's
// map (clearing a map costs its largest size).
const maxScratchMappings = 1024

// ValidateDNat44 checks a DNat44 and that key is its key.
func ValidateDNat44(key string, d *nat.DNat44) error {
	_, err := validDNat44(key, d, nil)
	return err
}

// validDNat44 is ValidateDNat44 returning the parsed mappings of a valid value (seen:
// see parseEntries).
func validDNat44(key string, d *nat.DNat44, seen map[mappingID]bool) ([]mapping, error) {
	if d.GetLabel() == "" {
		return nil, kvapi.NewInvalidValueError(ErrDNAT44WithEmptyLabel, "label")
	}
	if key != "" && (!strings.HasPrefix(key, nat.DNAT44Prefix) || key[len(nat.DNAT44Prefix):] != d.GetLabel()) {
		// (compared without building the key: every change of every service is validated)
		return nil, kvapi.NewInvalidValueError(fmt.Errorf("DNAT44 key %q does not match its label (want %q)",
			key, nat.DNAT44Key(d.GetLabel())), "label")
	}
	return parseEntries(d.GetStMappings(), d.GetIdMappings(), seen)
}
