package vpp_cnat

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

const (
	// maxPort is the largest L4 port.
	maxPort = 65535
	// FlowHashBits are the ip_flow_hash_config_v2 bits VPP 25.10 defines (src and dst
	// IP and port, protocol, reverse, symmetric, flow label, GTPv1 TEID).
	FlowHashBits = 0x1ff
	// unknownFamily stands for the family of an invalid VIP.
	unknownFamily AddressFamily = -1
)

// InvalidError lists what is wrong with a value; every problem names its field and
// the offending value.
type InvalidError struct {
	// Fields are the offending fields, e.g. "paths[1].dst.address".
	Fields []string
	// Problems say what is wrong, in the order of Fields.
	Problems []string
}

// Error joins the problems.
func (e *InvalidError) Error() string { return strings.Join(e.Problems, "; ") }

// problems collects the problems of one value.
type problems struct{ e InvalidError }

func (p *problems) add(field, format string, args ...any) {
	p.e.Fields = append(p.e.Fields, field)
	p.e.Problems = append(p.e.Problems, field+" "+fmt.Sprintf(format, args...))
}

// err returns the collected problems as an *InvalidError, or nil.
func (p *problems) err() error {
	if len(p.e.Problems) == 0 {
		return nil
	}
	e := p.e
	return &e
}

// ParseAddr parses an IPv4 or IPv6 address without a zone; an IPv4-mapped IPv6
// address is taken as the IPv4 address.
func ParseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// FamilyOf returns the family of an address.
func FamilyOf(a netip.Addr) AddressFamily {
	if a.Is4() {
		return AddressFamily_IPV4
	}
	return AddressFamily_IPV6
}

// FormatEndpoint writes an endpoint for messages: "10.96.0.10:80", "[fd00::a]:80",
// "tap0(IPV4):80", or "-" for an empty one.
func FormatEndpoint(e *Endpoint) string {
	if e.GetInterface() != "" {
		return e.GetInterface() + "(" + e.GetInterfaceFamily().String() + "):" + strconv.FormatUint(uint64(e.GetPort()), 10)
	}
	return formatAddress(e.GetAddress(), e.GetPort())
}

// formatAddress writes an address and port for messages (FormatEndpoint).
func formatAddress(address string, port uint32) string {
	p := strconv.FormatUint(uint64(port), 10)
	switch {
	case address != "":
		if a, ok := ParseAddr(address); ok && a.Is6() {
			return "[" + a.String() + "]:" + p
		}
		return address + ":" + p
	case port != 0:
		return ":" + p
	}
	return "-"
}

// FormatTranslation names a translation for messages: "10.96.0.10:80/TCP".
func FormatTranslation(t *Translation) string {
	return formatAddress(t.GetVipAddress(), t.GetVipPort()) + "/" + t.GetProtocol().String()
}

// ValidateTranslation checks a translation. Besides what VPP rejects, it refuses
// what VPP would accept but cannot translate: endpoints of another family than the
// VIP's; and what would crash VPP: a translation without paths.
func ValidateTranslation(t *Translation) error {
	_, err := validateTranslation(t, nil, unknownFamily)
	return err
}

// validateTranslation is ValidateTranslation, the paths taken as valid when they are
// validPaths (the same slice) and the VIP is of validFamily; it returns the VIP's
// family (unknownFamily when it is not valid). The translations of a node port share
// one slice of paths: a set's validation checks it once.
func validateTranslation(t *Translation, validPaths []*Path, validFamily AddressFamily) (AddressFamily, error) {
	var p problems
	family := unknownFamily // the endpoints' family is checked once the VIP's is known
	if a, ok := ParseAddr(t.GetVipAddress()); ok {
		family = FamilyOf(a)
	} else if t.GetVipAddress() == "" {
		p.add("vip_address", "is missing")
	} else {
		p.add("vip_address", "%q is not an IP address", t.GetVipAddress())
	}
	p.port("vip_port", t.GetVipPort())
	p.enum("protocol", int32(t.GetProtocol()), Protocol_name, "TCP, UDP or SCTP")
	p.enum("lb_type", int32(t.GetLbType()), Translation_LbType_name, "DEFAULT or MAGLEV")
	if extra := t.GetFlowHashConfig() &^ FlowHashBits; extra != 0 {
		p.add("flow_hash_config", "0x%x has bits outside 0x%x", t.GetFlowHashConfig(), FlowHashBits)
	}
	if len(t.GetPaths()) == 0 {
		// VPP 25.10 sizes its path vector with vec_validate(paths, n_paths - 1)
		// (cnat_api.c, vl_api_cnat_translation_update_t_handler): with no path it
		// asks for 2^32 entries and aborts. A VIP without backends has no translation.
		p.add("paths", "is empty (VPP aborts on a translation without paths; delete the translation instead)")
	}
	if paths := t.GetPaths(); len(paths) > 0 && len(paths) == len(validPaths) && &paths[0] == &validPaths[0] && family == validFamily {
		return family, p.err()
	}
	for i, path := range t.GetPaths() {
		if dst := path.GetDst(); dst != nil && (dst.GetAddress() != "" || dst.GetInterface() != "") &&
			endpointValid(dst, family) && endpointValid(path.GetSrc(), family) {
			continue // no problem: no field names to make
		}
		at := "paths[" + strconv.Itoa(i) + "]"
		if path.GetDst() == nil || (path.GetDst().GetAddress() == "" && path.GetDst().GetInterface() == "") {
			p.add(at+".dst", "is missing (an address or an interface is required)")
		} else {
			p.endpoint(at+".dst", path.GetDst(), family)
		}
		p.endpoint(at+".src", path.GetSrc(), family)
	}
	if len(p.e.Problems) > 0 {
		return unknownFamily, p.err()
	}
	return family, nil
}

// ValidateLabel checks the label of a translation set: not empty, no whitespace or
// control characters (it is the end of a key and of log lines).
func ValidateLabel(label string) error {
	if label == "" {
		return &InvalidError{Fields: []string{"label"}, Problems: []string{"label is empty"}}
	}
	for _, r := range label {
		if r <= ' ' || r == 0x7f || unicode.IsSpace(r) {
			return &InvalidError{Fields: []string{"label"}, Problems: []string{fmt.Sprintf("label %q contains whitespace or a control character", label)}}
		}
	}
	return nil
}

// ValidateTranslationSet checks a translation set: its label, every translation
// (ValidateTranslation, the fields prefixed "translations[i].") and that no two
// translations have the same VIP address, port and protocol.
func ValidateTranslationSet(s *TranslationSet) error {
	return ValidateTranslationSetKnowing(s, nil)
}

// ValidateTranslationSetKnowing is ValidateTranslationSet but for the translations
// known (nil: none) says are valid: those are only checked for duplicates. A
// descriptor validating a change of a set it validated before knows the messages the
// two share.
func ValidateTranslationSetKnowing(s *TranslationSet, known func(*Translation) bool) error {
	return validateSet(s, known, false)
}

// ValidateTranslationSetKnowingDistinct is ValidateTranslationSetKnowing for a set
// its caller knows holds no two translations of one identity (a descriptor that has
// seen it strictly ordered by identity): duplicates are not looked for, so that the
// translations known cost a call of known each and are not read.
func ValidateTranslationSetKnowingDistinct(s *TranslationSet, known func(*Translation) bool) error {
	return validateSet(s, known, true)
}

// ValidateTranslationSetEdited is ValidateTranslationSetKnowingDistinct for a set all
// of whose translations are known but those at the indexes fresh (ascending, in
// range): only those are read, each with the translation before it, whose paths it
// may share. A descriptor validating a change of a few translations of a set in the
// order of sets (InSetOrder: the new ones checked in order with their neighbours)
// pays for the change, not for the set.
func ValidateTranslationSetEdited(s *TranslationSet, fresh []int) error {
	var p problems
	if err := ValidateLabel(s.GetLabel()); err != nil {
		p.merge("", err)
	}
	ts := s.GetTranslations()
	lastValid := -1 // the index of the last fresh translation found valid
	for k, i := range fresh {
		at := func() string { return "translations[" + strconv.Itoa(i) + "]" } // made for a problem only
		t := ts[i]
		if t == nil {
			p.add(at(), "is missing")
			continue
		}
		// The translation before, if valid (known, or fresh and found valid), vouches
		// for the paths it shares with t.
		validPaths, validFamily := []*Path(nil), unknownFamily
		if i > 0 && ts[i-1] != nil && (k == 0 || fresh[k-1] != i-1 || lastValid == i-1) {
			validPaths, validFamily = vouchedPaths(t, ts[i-1])
		}
		if _, err := validateTranslation(t, validPaths, validFamily); err != nil {
			p.merge(at()+".", err)
			continue
		}
		lastValid = i
	}
	return p.err()
}

// vouchedPaths returns t's paths and the family of valid's VIP when t shares its
// paths (the same slice) with valid, a valid translation: they are valid for that
// family (the translations of a node port share theirs). Else nil, unknownFamily.
func vouchedPaths(t, valid *Translation) ([]*Path, AddressFamily) {
	paths, theirs := t.GetPaths(), valid.GetPaths()
	if len(paths) == 0 || len(paths) != len(theirs) || &paths[0] != &theirs[0] {
		return nil, unknownFamily
	}
	a, ok := ParseAddr(valid.GetVipAddress())
	if !ok {
		return nil, unknownFamily
	}
	return paths, FamilyOf(a)
}

// validateSet is ValidateTranslationSetKnowing, looking for duplicates unless distinct.
func validateSet(s *TranslationSet, known func(*Translation) bool, distinct bool) error {
	var p problems
	if err := ValidateLabel(s.GetLabel()); err != nil {
		p.merge("", err)
	}
	// Duplicates. The identities of the translations not known are compared with
	// every other's (known ones were validated together: no two of them share one);
	// when more than a few are not known, a map of all is made instead.
	ts := s.GetTranslations()
	var small [8]int // indexes of the translations not known, while few
	unknown := small[:0]
	var bad []int // indexes of the missing and invalid translations, left out below
	// The paths of the last valid translation, and its VIP's family.
	var validPaths []*Path
	validFamily := unknownFamily
	var lastKnown *Translation // the known translation just before, if any
	for i, t := range ts {
		at := func() string { return "translations[" + strconv.Itoa(i) + "]" } // made for a problem only
		if t == nil {
			p.add(at(), "is missing")
			bad = append(bad, i)
			continue
		}
		if known != nil && known(t) {
			lastKnown = t
			continue
		}
		if lastKnown != nil {
			// Paths shared with the known translation before: valid for its family.
			if paths, family := vouchedPaths(t, lastKnown); paths != nil {
				validPaths, validFamily = paths, family
			}
			lastKnown = nil
		}
		family, err := validateTranslation(t, validPaths, validFamily)
		if err != nil {
			p.merge(at()+".", err)
			bad = append(bad, i)
			continue
		}
		validPaths, validFamily = t.GetPaths(), family
		if len(unknown) < cap(small) || known == nil && len(ts) <= cap(small) {
			unknown = append(unknown, i)
		} else {
			unknown = nil // too many: the map below
		}
	}
	switch {
	case distinct:
	case unknown == nil && len(ts) > 0:
		p.duplicatesByMap(ts, bad)
	default:
		p.duplicatesOf(ts, unknown, bad)
	}
	return p.err()
}

// duplicatesOf adds a problem for each translation of ts whose identity an earlier
// one has, of the pairs with at least one index in some (sorted), none in bad.
func (p *problems) duplicatesOf(ts []*Translation, some, bad []int) {
	// One pass over ts (each translation read once, as a set of a hundred node IPs is
	// far larger than its few unknown translations), noting the first translation
	// with the identity of each of some. The fields of some are read once; a
	// translation's address is searched for a colon once, and only when it has the
	// port and protocol of one of some and another spelling: a valid IPv4 address
	// has one spelling (ParseAddr takes a dotted quad only without leading zeros), the
	// other forms (IPv6, IPv4-mapped) have a colon and are parsed.
	type probe struct {
		vip      string
		port     uint32
		protocol Protocol
		colon    bool
		first    int
	}
	var room [8]probe // (some holds at most 8: more are checked by duplicatesByMap)
	probes := room[:0]
	if len(some) > len(room) {
		probes = make([]probe, 0, len(some))
	}
	for _, i := range some {
		vip := ts[i].GetVipAddress()
		probes = append(probes, probe{vip: vip, port: ts[i].GetVipPort(), protocol: ts[i].GetProtocol(),
			colon: strings.IndexByte(vip, ':') >= 0, first: -1})
	}
	for j, t := range ts {
		if t == nil || slicesContains(bad, j) {
			continue
		}
		addr, port, protocol := t.GetVipAddress(), t.GetVipPort(), t.GetProtocol()
		colon := -1 // whether addr has one: 1, 0, or -1 not searched yet
		for k := range probes {
			pr := &probes[k]
			if pr.first >= 0 || j == some[k] || pr.port != port || pr.protocol != protocol {
				continue
			}
			if pr.vip != addr {
				if colon < 0 {
					colon = 0
					if strings.IndexByte(addr, ':') >= 0 {
						colon = 1
					}
				}
				if (!pr.colon && colon == 0) || IdentityOf(ts[some[k]]) != IdentityOf(t) {
					continue
				}
			}
			pr.first = j
		}
	}
	for k, i := range some {
		j := probes[k].first
		switch {
		case j < 0:
		case j < i:
			p.add("translations["+strconv.Itoa(i)+"]", "%s is also translations[%d]: a set holds a VIP, port and protocol once", FormatTranslation(ts[i]), j)
		case !slicesContains(some, j): // (a later unknown one reports the pair itself)
			p.add("translations["+strconv.Itoa(j)+"]", "%s is also translations[%d]: a set holds a VIP, port and protocol once", FormatTranslation(ts[j]), i)
		}
	}
}

// duplicatesByMap adds a problem for each translation of ts but those in bad whose
// identity an earlier one has.
func (p *problems) duplicatesByMap(ts []*Translation, bad []int) {
	first := make(map[Identity]int, len(ts))
	for i, t := range ts {
		if slicesContains(bad, i) {
			continue
		}
		id := IdentityOf(t)
		if j, dup := first[id]; dup {
			p.add("translations["+strconv.Itoa(i)+"]", "%s is also translations[%d]: a set holds a VIP, port and protocol once", FormatTranslation(t), j)
			continue
		}
		first[id] = i
	}
}

// slicesContains tells whether the sorted s holds v.
func slicesContains(s []int, v int) bool {
	_, found := slices.BinarySearch(s, v)
	return found
}

// merge adds the problems of err (an *InvalidError; any other error as a problem of
// no field), their fields and messages prefixed.
func (p *problems) merge(prefix string, err error) {
	ie, ok := err.(*InvalidError)
	if !ok {
		p.e.Fields = append(p.e.Fields, strings.TrimSuffix(prefix, "."))
		p.e.Problems = append(p.e.Problems, prefix+err.Error())
		return
	}
	for i := range ie.Fields {
		p.e.Fields = append(p.e.Fields, prefix+ie.Fields[i])
		p.e.Problems = append(p.e.Problems, prefix+ie.Problems[i])
	}
}

// enum checks that value is one of names (want lists them for the message).
func (p *problems) enum(field string, value int32, names map[int32]string, want string) bool {
	if _, ok := names[value]; !ok {
		p.add(field, "%d is not %s", value, want)
		return false
	}
	return true
}

// interfaceName checks that an interface is named.
func (p *problems) interfaceName(name string) {
	if name == "" {
		p.add("interface", "is empty")
	}
}

// port checks an L4 port.
func (p *problems) port(field string, port uint32) {
	if port > maxPort {
		p.add(field, "%d is above 65535", port)
	}
}

// endpointValid tells, without allocating, whether endpoint would find no problem
// with e. The scheduler validates every translation it is given, 10 paths each and
// tens of thousands of translations in a first resync: the field names of the
// messages are made only for a path with a problem.
func endpointValid(e *Endpoint, family AddressFamily) bool {
	if e.GetPort() > maxPort {
		return false
	}
	switch {
	case e.GetAddress() != "" && e.GetInterface() != "":
		return false
	case e.GetInterface() != "":
		if _, ok := AddressFamily_name[int32(e.GetInterfaceFamily())]; !ok {
			return false
		}
		return family == unknownFamily || e.GetInterfaceFamily() == family
	case e.GetAddress() != "":
		a, ok := ParseAddr(e.GetAddress())
		return ok && (family == unknownFamily || FamilyOf(a) == family)
	}
	return true
}

// endpoint checks an endpoint of a translation whose VIP is of family.
func (p *problems) endpoint(field string, e *Endpoint, family AddressFamily) {
	p.port(field+".port", e.GetPort())
	switch {
	case e.GetAddress() != "" && e.GetInterface() != "":
		p.add(field, "sets both address %q and interface %q", e.GetAddress(), e.GetInterface())
	case e.GetInterface() != "":
		if !p.enum(field+".interface_family", int32(e.GetInterfaceFamily()), AddressFamily_name, "IPV4 or IPV6") {
			break
		}
		if family != unknownFamily && e.GetInterfaceFamily() != family {
			p.add(field+".interface_family", "%s is not the VIP's family %s", e.GetInterfaceFamily(), family)
		}
	case e.GetAddress() != "":
		a, ok := ParseAddr(e.GetAddress())
		if !ok {
			p.add(field+".address", "%q is not an IP address", e.GetAddress())
		} else if family != unknownFamily && FamilyOf(a) != family {
			p.add(field+".address", "%s is not of the VIP's family %s", a, family)
		}
	}
}

// ValidateSnatAddresses checks the SNAT addresses: ip4 an IPv4 address, ip6 an IPv6
// address, or an interface alone; at least one of them.
func ValidateSnatAddresses(v *SnatAddresses) error {
	var p problems
	if v.GetIp4() != "" {
		if a, ok := ParseAddr(v.GetIp4()); !ok || !a.Is4() {
			p.add("ip4", "%q is not an IPv4 address", v.GetIp4())
		}
	}
	if v.GetIp6() != "" {
		if a, ok := ParseAddr(v.GetIp6()); !ok || !a.Is6() {
			p.add("ip6", "%q is not an IPv6 address", v.GetIp6())
		}
	}
	if v.GetInterface() != "" && (v.GetIp4() != "" || v.GetIp6() != "") {
		p.add("interface", "%q is set with ip4 %q or ip6 %q (VPP would ignore the addresses)", v.GetInterface(), v.GetIp4(), v.GetIp6())
	}
	if v.GetInterface() == "" && v.GetIp4() == "" && v.GetIp6() == "" {
		p.add("ip4", "and ip6 and interface are all empty")
	}
	return p.err()
}

// ValidateSnatPolicy checks the SNAT policy.
func ValidateSnatPolicy(v *SnatPolicy) error {
	var p problems
	p.enum("policy", int32(v.GetPolicy()), SnatPolicy_Policy_name, "NONE, IF_PFX or K8S")
	return p.err()
}

// ValidateSnatExcludePrefix checks an excluded prefix (CIDR; a bare address is a
// host prefix).
func ValidateSnatExcludePrefix(v *SnatExcludePrefix) error {
	var p problems
	if _, ok := ParsePrefix(v.GetPrefix()); !ok {
		p.add("prefix", "%q is not a prefix", v.GetPrefix())
	}
	return p.err()
}

// ParsePrefix parses a prefix in CIDR notation, or a bare address as a host
// prefix, and masks it.
func ParsePrefix(s string) (netip.Prefix, bool) {
	if pfx, err := netip.ParsePrefix(s); err == nil {
		return pfx.Masked(), true
	}
	if a, ok := ParseAddr(s); ok {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// ValidateSnatPolicyInterface checks a SNAT policy interface.
func ValidateSnatPolicyInterface(v *SnatPolicyInterface) error {
	var p problems
	p.interfaceName(v.GetInterface())
	p.enum("table", int32(v.GetTable()), SnatPolicyInterface_Table_name, "INCLUDE_V4, INCLUDE_V6, POD or HOST")
	return p.err()
}

// ValidateSnatFeature checks a cnat feature enablement.
func ValidateSnatFeature(v *SnatFeature) error {
	var p problems
	p.interfaceName(v.GetInterface())
	p.enum("node", int32(v.GetNode()), SnatFeature_Node_name, "SNAT, INPUT or OUTPUT")
	p.enum("family", int32(v.GetFamily()), AddressFamily_name, "IPV4 or IPV6")
	return p.err()
}
