package aclplugin

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"go.fd.io/govpp/binapi/acl"
	"go.fd.io/govpp/binapi/acl_types"
	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// ACLDescriptorName names the descriptor of ACLs.
const ACLDescriptorName = "vpp-acl"

// MaxTagLen is the longest ACL name: VPP's tag is string[64] with its NUL.
const MaxTagLen = 63

// noIndex is VPP's ~0 ("new ACL", "all").
const noIndex = ^uint32(0)

// ACLMetadata is what the ACL descriptor keeps of an ACL.
type ACLMetadata struct {
	// Index is VPP's acl_index.
	Index uint32
}

type aclDescriptor struct {
	base
	counters countersSwitch
}

// countersSwitch enables VPP's ACL match counters once per VPP connection:
// VPP counts the matches of ACL rules (/acl/<index>/matches in the stats
// segment) only after acl_stats_intf_counters_enable {enable: 1}
// (plugins/acl/acl.c, interface_acl_counters_enabled), a setting of the ACL
// plugin that a VPP restart loses and that no message reads back. The
// descriptor sends it before the first ACL it adds or replaces, and again
// after every Retrieve (a resync: the first of the agent, or the healing
// resync after a reconnect, when VPP may have restarted with its ACLs gone).
type countersSwitch struct {
	mu   sync.Mutex
	sent bool
}

// ensure sends the enable unless it was sent since the last reset. A failure
// is logged, not returned: the counters are observability, and an ACL must
// not fail (leaving a pod's policy unenforced, or its CNI ADD failing)
// because VPP could not count its matches.
func (c *countersSwitch) ensure(d *base) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent {
		return
	}
	c.sent = true
	// VPP 25.10 answers this request with acl_del_reply's message ID, not with
	// acl_stats_intf_counters_enable_reply (src/plugins/acl/acl.c, the
	// handler's REPLY_MACRO (VL_API_ACL_DEL_REPLY)): expect what VPP sends.
	if err := vppbase.Call(d.Ch, &acl.ACLStatsIntfCountersEnable{Enable: true}, &acl.ACLDelReply{}); err != nil {
		d.Log.WithError(err).Warn("VPP did not enable the ACL match counters: the policy rule metrics stay at zero until the next resync")
	}
}

// reset makes the next ensure send again.
func (c *countersSwitch) reset() {
	c.mu.Lock()
	c.sent = false
	c.mu.Unlock()
}

// NewACLDescriptor returns the descriptor of ACLs.
func NewACLDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &aclDescriptor{base: newBase(deps, ACLDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*vpp_acl.ACL, *ACLMetadata]{
		Name:        ACLDescriptorName,
		NBKeyPrefix: vpp_acl.ACLPrefix,
		KeySelector: func(key string) bool { _, ok := vpp_acl.ParseACLKey(key); return ok },
		KeyLabel: func(key string) string {
			name, _ := vpp_acl.ParseACLKey(key)
			return name
		},
		ValueComparator: func(_ string, a, b *vpp_acl.ACL) bool { return EquivalentACL(a, b) },
		Validate:        ValidateACL,
		Create: func(_ string, v *vpp_acl.ACL) (*ACLMetadata, error) {
			d.counters.ensure(&d.base)
			return d.addReplace(noIndex, v)
		},
		Update: func(_ string, _, v *vpp_acl.ACL, md *ACLMetadata) (*ACLMetadata, error) {
			if md == nil {
				return nil, fmt.Errorf("ACL %s: no VPP index known for an update", v.GetName())
			}
			d.counters.ensure(&d.base)
			return d.addReplace(md.Index, v)
		},
		Delete: func(_ string, v *vpp_acl.ACL, md *ACLMetadata) error {
			if md == nil {
				return fmt.Errorf("ACL %s: no VPP index known for the delete", v.GetName())
			}
			if err := vppbase.Call(d.Ch, &acl.ACLDel{ACLIndex: md.Index}, &acl.ACLDelReply{}); err != nil {
				return fmt.Errorf("delete ACL %s (index %d): %w", v.GetName(), md.Index, err)
			}
			return nil
		},
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
		WithMetadata:       true,
	})
}

// ValidateACL checks the name and every rule, and that key is the ACL's key
// (key "" skips that check).
func ValidateACL(key string, v *vpp_acl.ACL) error {
	var problems, fields []string
	bad := func(field, format string, args ...any) {
		fields = append(fields, field)
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	switch {
	case v.GetName() == "" || strings.Contains(v.GetName(), "/"):
		bad("name", "ACL name %q is empty or has a slash", v.GetName())
	case len(v.GetName()) > MaxTagLen:
		bad("name", "ACL name %q is longer than %d bytes (VPP tag)", v.GetName(), MaxTagLen)
	case key != "" && key != vpp_acl.ACLKey(v.GetName()):
		bad("name", "key %q does not match the ACL name %q", key, v.GetName())
	}
	if len(v.GetRules()) == 0 {
		bad("rules", "ACL %s has no rules", v.GetName())
	}
	for i, r := range v.GetRules() {
		if _, err := ruleToAPI(r); err != nil {
			bad(fmt.Sprintf("rules[%d]", i), "%v", err)
		}
	}
	if len(problems) > 0 {
		return kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return nil
}

// EquivalentACL compares two ACLs in the canonical form of their rules.
func EquivalentACL(a, b *vpp_acl.ACL) bool {
	if a.GetName() != b.GetName() || len(a.GetRules()) != len(b.GetRules()) {
		return false
	}
	for i := range a.GetRules() {
		ra, err1 := ruleToAPI(a.GetRules()[i])
		rb, err2 := ruleToAPI(b.GetRules()[i])
		if err1 != nil || err2 != nil {
			return proto.Equal(a, b)
		}
		if canonical(ra) != canonical(rb) {
			return false
		}
	}
	return true
}

// canonical clears what VPP ignores: ports and flags of protocol 0.
func canonical(r acl_types.ACLRule) acl_types.ACLRule {
	if r.Proto == 0 {
		r.SrcportOrIcmptypeFirst, r.SrcportOrIcmptypeLast = 0, 0
		r.DstportOrIcmpcodeFirst, r.DstportOrIcmpcodeLast = 0, 0
		r.TCPFlagsMask, r.TCPFlagsValue = 0, 0
	}
	return r
}

// ruleToAPI converts a rule (see the package documentation).
func ruleToAPI(r *vpp_acl.ACL_Rule) (acl_types.ACLRule, error) {
	var out acl_types.ACLRule
	switch r.GetAction() {
	case vpp_acl.ACL_Rule_DENY:
		out.IsPermit = acl_types.ACL_ACTION_API_DENY
	case vpp_acl.ACL_Rule_PERMIT:
		out.IsPermit = acl_types.ACL_ACTION_API_PERMIT
	case vpp_acl.ACL_Rule_REFLECT:
		out.IsPermit = acl_types.ACL_ACTION_API_PERMIT_REFLECT
	default:
		return out, fmt.Errorf("unknown action %v", r.GetAction())
	}
	src, srcSet, err := network("source_network", r.GetSourceNetwork())
	if err != nil {
		return out, err
	}
	dst, dstSet, err := network("destination_network", r.GetDestinationNetwork())
	if err != nil {
		return out, err
	}
	switch {
	case !srcSet && !dstSet:
		src, dst = netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("0.0.0.0/0")
	case !srcSet:
		src = anyOf(dst)
	case !dstSet:
		dst = anyOf(src)
	case src.Addr().Is4() != dst.Addr().Is4():
		return out, fmt.Errorf("source %s and destination %s are of different address families", src, dst)
	}
	out.SrcPrefix, out.DstPrefix = vppbase.PrefixToAPI(src), vppbase.PrefixToAPI(dst)
	if r.GetProtocol() > 255 {
		return out, fmt.Errorf("protocol %d is not an IP protocol number", r.GetProtocol())
	}
	out.Proto = ip_types.IPProto(r.GetProtocol())
	var err2 error
	out.SrcportOrIcmptypeFirst, out.SrcportOrIcmptypeLast, err2 = portRange("source_port_range", r.GetSourcePortRange())
	if err2 != nil {
		return out, err2
	}
	out.DstportOrIcmpcodeFirst, out.DstportOrIcmpcodeLast, err2 = portRange("destination_port_range", r.GetDestinationPortRange())
	if err2 != nil {
		return out, err2
	}
	if r.GetTcpFlagsMask() > 255 || r.GetTcpFlagsValue() > 255 {
		return out, fmt.Errorf("TCP flags mask %d / value %d do not fit a byte", r.GetTcpFlagsMask(), r.GetTcpFlagsValue())
	}
	out.TCPFlagsMask, out.TCPFlagsValue = uint8(r.GetTcpFlagsMask()), uint8(r.GetTcpFlagsValue())
	return out, nil
}

func network(field, s string) (netip.Prefix, bool, error) {
	if s == "" {
		return netip.Prefix{}, false, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, false, fmt.Errorf("%s %q is not a CIDR network", field, s)
	}
	p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits())
	if p.Masked() != p {
		return netip.Prefix{}, false, fmt.Errorf("%s %q has host bits set", field, s)
	}
	return p, true, nil
}

func anyOf(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4() {
		return netip.MustParsePrefix("0.0.0.0/0")
	}
	return netip.MustParsePrefix("::/0")
}

func portRange(field string, r *vpp_acl.ACL_Rule_PortRange) (uint16, uint16, error) {
	if r == nil {
		return 0, 65535, nil
	}
	if r.GetLowerPort() > 65535 || r.GetUpperPort() > 65535 || r.GetLowerPort() > r.GetUpperPort() {
		return 0, 0, fmt.Errorf("%s %d-%d is not a range within 0-65535", field, r.GetLowerPort(), r.GetUpperPort())
	}
	return uint16(r.GetLowerPort()), uint16(r.GetUpperPort()), nil
}

// ruleFromAPI converts a dumped rule back into the model, in canonical form
// (networks and port ranges always set).
func ruleFromAPI(r acl_types.ACLRule) *vpp_acl.ACL_Rule {
	r = canonical(r)
	src, _ := vppbase.PrefixFromAPI(r.SrcPrefix)
	dst, _ := vppbase.PrefixFromAPI(r.DstPrefix)
	out := &vpp_acl.ACL_Rule{
		SourceNetwork:      src.String(),
		DestinationNetwork: dst.String(),
		Protocol:           uint32(r.Proto),
		TcpFlagsMask:       uint32(r.TCPFlagsMask),
		TcpFlagsValue:      uint32(r.TCPFlagsValue),
	}
	switch r.IsPermit {
	case acl_types.ACL_ACTION_API_PERMIT:
		out.Action = vpp_acl.ACL_Rule_PERMIT
	case acl_types.ACL_ACTION_API_PERMIT_REFLECT:
		out.Action = vpp_acl.ACL_Rule_REFLECT
	}
	if r.Proto != 0 {
		out.SourcePortRange = &vpp_acl.ACL_Rule_PortRange{LowerPort: uint32(r.SrcportOrIcmptypeFirst), UpperPort: uint32(r.SrcportOrIcmptypeLast)}
		out.DestinationPortRange = &vpp_acl.ACL_Rule_PortRange{LowerPort: uint32(r.DstportOrIcmpcodeFirst), UpperPort: uint32(r.DstportOrIcmpcodeLast)}
	}
	return out
}

func (d *aclDescriptor) addReplace(index uint32, v *vpp_acl.ACL) (*ACLMetadata, error) {
	rules := make([]acl_types.ACLRule, 0, len(v.GetRules()))
	for i, r := range v.GetRules() {
		ar, err := ruleToAPI(r)
		if err != nil {
			return nil, kvapi.NewInvalidValueError(fmt.Errorf("ACL %s rule %d: %w", v.GetName(), i, err), fmt.Sprintf("rules[%d]", i))
		}
		rules = append(rules, ar)
	}
	rep := &acl.ACLAddReplaceReply{}
	req := &acl.ACLAddReplace{ACLIndex: index, Tag: v.GetName(), Count: uint32(len(rules)), R: rules}
	if err := vppbase.Call(d.Ch, req, rep); err != nil {
		if index == noIndex {
			return nil, fmt.Errorf("create ACL %s: %w", v.GetName(), err)
		}
		return &ACLMetadata{Index: index}, fmt.Errorf("update ACL %s (index %d): %w", v.GetName(), index, err)
	}
	return &ACLMetadata{Index: rep.ACLIndex}, nil
}

// retrieve dumps every ACL and keys the tagged ones by their tag.
func (d *aclDescriptor) retrieve(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	d.counters.reset() // a resync: VPP may be a new one
	var out []kvapi.KVWithMetadata
	mr := d.Ch.SendMultiRequest(&acl.ACLDump{ACLIndex: noIndex})
	for {
		det := &acl.ACLDetails{}
		last, err := mr.ReceiveReply(det)
		if err != nil {
			return nil, fmt.Errorf("dump ACLs: %w", err)
		}
		if last {
			return out, nil
		}
		name := strings.TrimRight(det.Tag, "\x00")
		if name == "" || strings.Contains(name, "/") {
			continue
		}
		v := &vpp_acl.ACL{Name: name}
		for _, r := range det.R {
			v.Rules = append(v.Rules, ruleFromAPI(r))
		}
		out = append(out, kvapi.KVWithMetadata{Key: vpp_acl.ACLKey(name), Value: v,
			Metadata: &ACLMetadata{Index: det.ACLIndex}, Origin: kvapi.FromNB})
	}
}
