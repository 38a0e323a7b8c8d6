package l3plugin

import (
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/arp"
	"go.fd.io/govpp/binapi/dhcp"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip6_nd"
	"go.fd.io/govpp/binapi/ip_neighbor"
)

// messages lists every message the plugin uses (registered with govppmux, which
// checks that VPP knows them).
var messages = []govppapi.Message{
	&ip.IPTableAddDel{}, &ip.IPTableAddDelReply{}, &ip.IPTableDump{}, &ip.IPTableDetails{},
	&ip.IPRouteAddDel{}, &ip.IPRouteAddDelReply{}, &ip.IPRouteDump{}, &ip.IPRouteDetails{},
	&dhcp.DHCPClientDump{}, &dhcp.DHCPClientDetails{},
	&ip_neighbor.IPNeighborAddDel{}, &ip_neighbor.IPNeighborAddDelReply{},
	&ip_neighbor.IPNeighborDump{}, &ip_neighbor.IPNeighborDetails{},
	&ip_neighbor.IPNeighborConfig{}, &ip_neighbor.IPNeighborConfigReply{},
	&ip_neighbor.IPNeighborConfigGet{}, &ip_neighbor.IPNeighborConfigGetReply{},
	&arp.ProxyArpAddDel{}, &arp.ProxyArpAddDelReply{}, &arp.ProxyArpDump{}, &arp.ProxyArpDetails{},
	&arp.ProxyArpIntfcEnableDisable{}, &arp.ProxyArpIntfcEnableDisableReply{},
	&arp.ProxyArpIntfcDump{}, &arp.ProxyArpIntfcDetails{},
	&ip6_nd.IP6ndProxyAddDel{}, &ip6_nd.IP6ndProxyAddDelReply{}, &ip6_nd.IP6ndProxyDump{}, &ip6_nd.IP6ndProxyDetails{},
}
