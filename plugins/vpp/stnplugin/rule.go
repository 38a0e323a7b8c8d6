package stnplugin

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/stn"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	stnmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// RuleDescriptorName names the descriptor of STN rules.
const RuleDescriptorName = "vpp-stn-rule"

// DepInterfaceExists waits for the rule's interface.
const DepInterfaceExists = "interface-exists"

type ruleDescriptor struct {
	vppbase.Descriptor
}

// NewRuleDescriptor returns the descriptor of STN rules.
func NewRuleDescriptor(deps vppbase.DescriptorDeps) *kvapi.KVDescriptor {
	d := &ruleDescriptor{Descriptor: vppbase.NewDescriptor(deps, RuleDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*stnmodel.Rule, kvapi.Metadata]{
		Name:        RuleDescriptorName,
		NBKeyPrefix: stnmodel.RulePrefix,
		KeySelector: func(key string) bool {
			_, _, ok := stnmodel.ParseRuleKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *stnmodel.Rule) bool { return equivalent(a, b) },
		Validate:        func(key string, v *stnmodel.Rule) error { return validate(key, v) },
		Create: func(_ string, v *stnmodel.Rule) (kvapi.Metadata, error) {
			return nil, d.addDel(v, true)
		},
		Delete:             func(_ string, v *stnmodel.Rule, _ kvapi.Metadata) error { return d.addDel(v, false) },
		Retrieve:           d.retrieve,
		IsRetriableFailure: vppbase.IsRetriable,
		Dependencies: func(_ string, v *stnmodel.Rule) []kvapi.Dependency {
			return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(v.GetInterface())}}
		},
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// parse checks a rule; the error names every wrong field with its value.
func parse(v *stnmodel.Rule) (netip.Addr, error) {
	var problems, fields []string
	if v.GetInterface() == "" {
		fields, problems = append(fields, "interface"), append(problems, "empty interface")
	}
	ip, err := netip.ParseAddr(v.GetIpAddress())
	if err != nil || ip.Zone() != "" {
		fields = append(fields, "ip_address")
		problems = append(problems, fmt.Sprintf("ip_address %q is not an IP address", v.GetIpAddress()))
	}
	if len(problems) > 0 {
		return netip.Addr{}, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return ip.Unmap(), nil
}

func validate(key string, v *stnmodel.Rule) error {
	if _, err := parse(v); err != nil {
		return err
	}
	if want := stnmodel.RuleKey(v.GetInterface(), v.GetIpAddress()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("STN rule key %q does not match its value (want %q)", key, want),
			"interface", "ip_address")
	}
	return nil
}

// equivalent compares two rules with their addresses in canonical form.
func equivalent(a, b *stnmodel.Rule) bool {
	ipA, errA := parse(a)
	ipB, errB := parse(b)
	if errA != nil || errB != nil {
		return a.GetInterface() == b.GetInterface() && a.GetIpAddress() == b.GetIpAddress()
	}
	return a.GetInterface() == b.GetInterface() && ipA == ipB
}

func (d *ruleDescriptor) addDel(v *stnmodel.Rule, isAdd bool) error {
	op := "delete"
	if isAdd {
		op = "add"
	}
	what := fmt.Sprintf("%s STN rule %s -> %s", op, v.GetIpAddress(), v.GetInterface())
	ip, err := parse(v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	sw, err := d.SwIfIndex(v.GetInterface(), what)
	if err != nil {
		return err
	}
	req := &stn.StnAddDelRule{IPAddress: vppbase.AddrToAPI(ip), SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: isAdd}
	if err := vppbase.Call(d.Ch, req, &stn.StnAddDelRuleReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithFields(map[string]any{"ip": ip, "interface": v.GetInterface()}).Debugf("STN rule %s done", op)
	return nil
}

// retrieve dumps the rules whose interface the agent knows; they are the agent's (no
// one else configures STN on its interfaces), so a resync deletes those NB no longer
// wants.
func (d *ruleDescriptor) retrieve(_ []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	list, err := govppmux.Dump[stn.StnRulesDetails](d.Ch, &stn.StnRulesDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve STN rules: %w", err)
	}
	names := d.IfaceNames()
	var out []kvapi.KVWithMetadata
	for _, r := range list {
		name, ok := names[uint32(r.SwIfIndex)]
		ip, okIP := vppbase.AddrFromAPI(r.IPAddress)
		if !ok || !okIP {
			continue
		}
		v := &stnmodel.Rule{IpAddress: ip.String(), Interface: name}
		out = append(out, kvapi.KVWithMetadata{Key: stnmodel.RuleKey(name, ip.String()), Value: v, Origin: kvapi.FromNB})
	}
	return out, nil
}
