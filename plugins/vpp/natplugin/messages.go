package natplugin

import (
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/nat44_ed"
)

// messages lists every message the plugin uses (registered with govppmux, which
// checks that VPP knows them).
var messages = []govppapi.Message{
	&nat44_ed.Nat44EdPluginEnableDisable{}, &nat44_ed.Nat44EdPluginEnableDisableReply{},
	&nat44_ed.Nat44ForwardingEnableDisable{}, &nat44_ed.Nat44ForwardingEnableDisableReply{},
	&nat44_ed.Nat44ShowRunningConfig{}, &nat44_ed.Nat44ShowRunningConfigReply{},
	&ip.IPReassemblySet{}, &ip.IPReassemblySetReply{},
	&nat44_ed.Nat44AddDelAddressRange{}, &nat44_ed.Nat44AddDelAddressRangeReply{},
	&nat44_ed.Nat44AddressDump{}, &nat44_ed.Nat44AddressDetails{},
	&nat44_ed.Nat44InterfaceAddDelFeature{}, &nat44_ed.Nat44InterfaceAddDelFeatureReply{},
	&nat44_ed.Nat44InterfaceDump{}, &nat44_ed.Nat44InterfaceDetails{},
	&nat44_ed.Nat44EdAddDelOutputInterface{}, &nat44_ed.Nat44EdAddDelOutputInterfaceReply{},
	&nat44_ed.Nat44EdOutputInterfaceGet{}, &nat44_ed.Nat44EdOutputInterfaceGetReply{}, &nat44_ed.Nat44EdOutputInterfaceDetails{},
	&nat44_ed.Nat44AddDelStaticMappingV2{}, &nat44_ed.Nat44AddDelStaticMappingV2Reply{},
	&nat44_ed.Nat44StaticMappingDump{}, &nat44_ed.Nat44StaticMappingDetails{},
	&nat44_ed.Nat44AddDelLbStaticMapping{}, &nat44_ed.Nat44AddDelLbStaticMappingReply{},
	&nat44_ed.Nat44LbStaticMappingAddDelLocal{}, &nat44_ed.Nat44LbStaticMappingAddDelLocalReply{},
	&nat44_ed.Nat44LbStaticMappingDump{}, &nat44_ed.Nat44LbStaticMappingDetails{},
	&nat44_ed.Nat44AddDelIdentityMapping{}, &nat44_ed.Nat44AddDelIdentityMappingReply{},
	&nat44_ed.Nat44IdentityMappingDump{}, &nat44_ed.Nat44IdentityMappingDetails{},
}
