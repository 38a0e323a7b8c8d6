package l3plugin

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_types"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// ProxyNDDescriptorName names the descriptor of IPv6 proxy ND entries.
const ProxyNDDescriptorName = "vpp-proxy-nd"

// proxyNDDescriptor implements the callbacks of the IPv6 proxy ND
// descriptor: ip6nd_proxy_add_del per entry, ip6nd_proxy_dump to read them
// back. Every field is in the key, so there is no Update.
type proxyNDDescriptor struct {
	base
}

// NewProxyNDDescriptor returns the descriptor of VPP's IPv6 proxy ND
// entries.
func NewProxyNDDescriptor(deps DescriptorDeps) *kvapi.KVDescriptor {
	d := &proxyNDDescriptor{base: vppbase.NewDescriptor(deps, ProxyNDDescriptorName)}
	return kvapi.Typed(kvapi.TypedDescriptor[*l3.ProxyNDEntry, kvapi.Metadata]{
		Name:        ProxyNDDescriptorName,
		NBKeyPrefix: l3.ProxyNDPrefix,
		KeySelector: func(key string) bool {
			_, _, ok := l3.ParseProxyNDEntryKey(key)
			return ok
		},
		ValueComparator: func(_ string, a, b *l3.ProxyNDEntry) bool { return EquivalentProxyND(a, b) },
		Validate:        func(key string, v *l3.ProxyNDEntry) error { return ValidateProxyND(key, v) },
		Create: func(_ string, v *l3.ProxyNDEntry) (kvapi.Metadata, error) {
			return nil, d.addDel(v, true)
		},
		Delete:               func(_ string, v *l3.ProxyNDEntry, _ kvapi.Metadata) error { return d.addDel(v, false) },
		Retrieve:             d.retrieve,
		IsRetriableFailure:   vppbase.IsRetriable,
		Dependencies:         func(_ string, v *l3.ProxyNDEntry) []kvapi.Dependency { return ProxyNDDependencies(v) },
		RetrieveDependencies: []string{ifaceidx.DescriptorName},
	})
}

// parseProxyND parses and checks an entry; the error names every wrong
// field. The address must be an IPv6 unicast address that VPP can answer
// for: not IPv4 (the message carries an ip6_address), not link-local (VPP
// checks link-local NS targets in the receiving interface's link-local
// table, where proxy entries never go: ip6_nd.c), not multicast or ::.
func parseProxyND(v *l3.ProxyNDEntry) (netip.Addr, error) {
	var problems, fields []string
	if v.GetInterface() == "" {
		fields, problems = append(fields, "interface"), append(problems, "empty interface")
	}
	ip, err := parseAddr(v.GetIpAddress())
	switch {
	case err != nil:
		err = fmt.Errorf("ip_address %q is not an IP address", v.GetIpAddress())
	case !ip.Is6():
		err = fmt.Errorf("ip_address %q is not an IPv6 address", v.GetIpAddress())
	case ip.IsLinkLocalUnicast():
		err = fmt.Errorf("ip_address %q is link-local (VPP never answers a proxied link-local address)", v.GetIpAddress())
	case ip.IsMulticast() || ip.IsUnspecified():
		err = fmt.Errorf("ip_address %q is not a unicast address", v.GetIpAddress())
	}
	if err != nil {
		fields, problems = append(fields, "ip_address"), append(problems, err.Error())
	}
	if len(problems) > 0 {
		return netip.Addr{}, kvapi.NewInvalidValueError(errors.New(strings.Join(problems, "; ")), fields...)
	}
	return ip, nil
}

// ValidateProxyND checks an entry and that key is its key.
func ValidateProxyND(key string, v *l3.ProxyNDEntry) error {
	if _, err := parseProxyND(v); err != nil {
		return err
	}
	if want := l3.ProxyNDEntryKey(v.GetInterface(), v.GetIpAddress()); key != "" && key != want {
		return kvapi.NewInvalidValueError(fmt.Errorf("proxy ND key %q does not match its value (want %q)", key, want),
			"interface", "ip_address")
	}
	return nil
}

// EquivalentProxyND reports whether a and b are the same entry (addresses
// compared in canonical form).
func EquivalentProxyND(a, b *l3.ProxyNDEntry) bool {
	ipA, errA := parseProxyND(a)
	ipB, errB := parseProxyND(b)
	if errA != nil || errB != nil {
		return a.GetInterface() == b.GetInterface() && a.GetIpAddress() == b.GetIpAddress()
	}
	return a.GetInterface() == b.GetInterface() && ipA == ipB
}

// ProxyNDDependencies lists what an entry needs: its interface.
func ProxyNDDependencies(v *l3.ProxyNDEntry) []kvapi.Dependency {
	if v.GetInterface() == "" {
		return nil
	}
	return []kvapi.Dependency{{Label: DepInterfaceExists, Key: ifmodel.InterfaceKey(v.GetInterface())}}
}

func (d *proxyNDDescriptor) addDel(v *l3.ProxyNDEntry, isAdd bool) error {
	op := "delete"
	if isAdd {
		op = "add"
	}
	what := fmt.Sprintf("%s proxy ND entry %s on %s", op, v.GetIpAddress(), v.GetInterface())
	ip, err := parseProxyND(v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	sw, err := d.SwIfIndex(v.GetInterface(), what)
	if err != nil {
		return err
	}
	req := &ip6_nd.IP6ndProxyAddDel{SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: isAdd, IP: ip_types.IP6Address(ip.As16())}
	if err := vppbase.Call(d.Ch, req, &ip6_nd.IP6ndProxyAddDelReply{}); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.Log.WithFields(map[string]any{"ip": ip, "interface": v.GetInterface()}).Debugf("proxy ND entry %s done", op)
	return nil
}

// retrieve dumps the proxy ND entries of every IPv6 table (VPP reports
// each with the interface its /128 resolves through) and keeps those on
// the interfaces the agent knows: nobody else configures those
// interfaces, so a resync removes the entries NB no longer wants.
func (d *proxyNDDescriptor) retrieve(correlate []kvapi.KVWithMetadata) ([]kvapi.KVWithMetadata, error) {
	nb := nbValues[*l3.ProxyNDEntry](correlate)
	list, err := govppmux.Dump[ip6_nd.IP6ndProxyDetails](d.Ch, &ip6_nd.IP6ndProxyDump{})
	if err != nil {
		return nil, fmt.Errorf("retrieve proxy ND entries: %w", err)
	}
	names := d.IfaceNames()
	var out []kvapi.KVWithMetadata
	for _, e := range list {
		name, ok := names[uint32(e.SwIfIndex)]
		if !ok {
			continue
		}
		ip := netip.AddrFrom16(e.IP).String()
		v := &l3.ProxyNDEntry{Interface: name, IpAddress: ip}
		key := l3.ProxyNDEntryKey(name, ip)
		if want, wanted := nb[key]; wanted && EquivalentProxyND(want, v) {
			v = want
		}
		out = append(out, kvapi.KVWithMetadata{Key: key, Value: v, Origin: kvapi.FromNB})
	}
	return out, nil
}
