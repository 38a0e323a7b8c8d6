// Package stnplugin is the VPP STN plugin of the agent: the descriptor vpp-stn-rule
// for the rules of single-NIC nodes (api/models/vpp/stn, stn_add_del_rule of VPP's STN
// plugin) that send what VPP punts for an address to an interface toward the host, and
// vpp-stn-host-link (hostlink.go) for the stolen NIC's Linux link, which VPP drives as
// an af_packet interface when it has no DPDK.
//
//	config/vpp/stn/v2/rule/<interface>/ip/<ip>  ──Create──> stn_add_del_rule{is_add}
//	                                            ──Delete──> stn_add_del_rule{!is_add}
//	Retrieve <── stn_rules_dump (rules on interfaces the agent knows)
//
// A rule depends on its interface (interface-exists). Moving a rule to another
// interface changes its key, so there is no Update. VPP keys rules by address alone:
// two rules of one address on two interfaces would overwrite each other in VPP, and
// Validate cannot see that (it checks one value); ipnet never makes them.
//
// A HostLink (config/vpp/stn/v2/host-link/<name>) touches nothing: Create checks with
// netlink that the link exists in the agent's namespace (retriable while it does
// not), Delete does nothing, and it derives linux/interface/host-name/<name>, which an
// af_packet interface depends on. That key is otherwise derived only from the Linux
// interfaces the agent creates, so without it an af_packet on a host's own link would
// wait for ever. This descriptor does the only Linux I/O of the package.
//
// What it does not do: VPP's stn rules IP-enable their interface and register the
// punting of unknown UDP and TCP ports, for ever; deleting the rule undoes neither
// (stn.c), and neither does this plugin.
package stnplugin
