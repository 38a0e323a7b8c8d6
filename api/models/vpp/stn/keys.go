// Package vpp_stn is the northbound model of VPP's STN plugin (stn.proto): the rules
// of single-NIC nodes that send what VPP punts for the node's address to the host, and
// the keys the KV scheduler stores them under.
//
// Configuration keys (as upstream Contiv-VPP's vpp-agent named them):
//
//	config/vpp/stn/v2/rule/<interface>/ip/<ip>      Rule
//	config/vpp/stn/v2/host-link/<name>             HostLink (this port's, not upstream's)
package vpp_stn

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/models/internal/keyutil"
)

const (
	// RulePrefix is the key prefix of STN rules.
	RulePrefix = "config/vpp/stn/v2/rule/"

	// HostLinkPrefix is the key prefix of the stolen host links.
	HostLinkPrefix = "config/vpp/stn/v2/host-link/"

	pkgName   = "vpp_stn"
	ruleIPSep = "/ip/"
)

// RuleKey returns the key of the rule of ip toward iface:
// config/vpp/stn/v2/rule/<iface>/ip/<ip>, ip in canonical form when it parses.
func RuleKey(iface, ip string) string {
	ip, _ = keyutil.IP(ip)
	return RulePrefix + iface + ruleIPSep + ip
}

// ParseRuleKey returns the interface and address of a rule key; ok is false for any
// other key.
func ParseRuleKey(key string) (iface, ip string, ok bool) {
	rest, ok := keyutil.Rest(key, RulePrefix)
	if !ok {
		return "", "", false
	}
	iface, ip, ok = keyutil.SplitLast(rest, ruleIPSep)
	if !ok {
		return "", "", false
	}
	if _, valid := keyutil.IP(ip); !valid {
		return "", "", false
	}
	return iface, ip, true
}

// HostLinkKey returns the key of the host link with the name:
// config/vpp/stn/v2/host-link/<name>.
func HostLinkKey(name string) string { return HostLinkPrefix + name }

// ParseHostLinkKey returns the link name of a host link key; ok is false for any other
// key (or an empty name, or one with a slash).
func ParseHostLinkKey(key string) (name string, ok bool) {
	name, ok = keyutil.Rest(key, HostLinkPrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// ModelKey returns the key of a Rule or a HostLink. The error wraps
// models.ErrUnknownModel for other types and models.ErrInvalidValue for a rule without
// an interface or a valid address, or a host link without a name.
func ModelKey(msg proto.Message) (string, error) {
	if l, ok := msg.(*HostLink); ok {
		if l.GetName() == "" || strings.Contains(l.GetName(), "/") {
			return "", keyutil.InvalidValue(pkgName, msg, "name "+strconv.Quote(l.GetName())+" is not a link name")
		}
		return HostLinkKey(l.GetName()), nil
	}
	v, ok := msg.(*Rule)
	if !ok {
		return "", keyutil.UnknownModel(pkgName, msg)
	}
	if v.GetInterface() == "" {
		return "", keyutil.InvalidValue(pkgName, msg, "empty interface")
	}
	if _, ok := keyutil.IP(v.GetIpAddress()); !ok {
		return "", keyutil.InvalidValue(pkgName, msg, "ip_address "+strconv.Quote(v.GetIpAddress())+" is not an IP address")
	}
	return RuleKey(v.GetInterface(), v.GetIpAddress()), nil
}
