package cnatplugin

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// messages lists every message the plugin uses (registered with govppmux, which checks
// that VPP knows them). cnat_session_purge is not among them: it also deletes every
// translation (cnat_api.c), which no descriptor may do behind the scheduler's back.
var messages = []govppapi.Message{
	&cnat.CnatTranslationUpdate{}, &cnat.CnatTranslationUpdateReply{},
	&cnat.CnatTranslationDel{}, &cnat.CnatTranslationDelReply{},
	&cnat.CnatTranslationDump{}, &cnat.CnatTranslationDetails{},
	&cnat.CnatSetSnatAddresses{}, &cnat.CnatSetSnatAddressesReply{},
	&cnat.CnatGetSnatAddresses{}, &cnat.CnatGetSnatAddressesReply{},
	&cnat.CnatSetSnatPolicy{}, &cnat.CnatSetSnatPolicyReply{},
	&cnat.CnatSnatPolicyAddDelExcludePfx{}, &cnat.CnatSnatPolicyAddDelExcludePfxReply{},
	&cnat.CnatSnatPolicyAddDelIf{}, &cnat.CnatSnatPolicyAddDelIfReply{},
	&feature.FeatureEnableDisable{}, &feature.FeatureEnableDisableReply{},
	&feature.FeatureIsEnabled{}, &feature.FeatureIsEnabledReply{},
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Scheduler is where the descriptors are registered. Required.
	Scheduler vppbase.Scheduler
	// GoVPP gives the channel the descriptors talk to VPP through. Required.
	GoVPP vppbase.GoVPP
}

// Plugin is the VPP cnat plugin: it registers the cnat descriptors.
type Plugin struct {
	Deps

	ch govppapi.Channel
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-cnatplugin" }

// Descriptors returns the plugin's descriptors over deps, in registration order.
func Descriptors(deps vppbase.DescriptorDeps) []*kvapi.KVDescriptor {
	return []*kvapi.KVDescriptor{
		NewTranslationSetDescriptor(deps),
		NewSnatAddressesDescriptor(deps),
		NewSnatPolicyDescriptor(deps),
		NewSnatExcludePrefixDescriptor(deps),
		NewSnatPolicyInterfaceDescriptor(deps),
		NewSnatFeatureDescriptor(deps),
	}
}

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-cnatplugin: Scheduler and GoVPP are required")
	}
	p.Log = infra.LoggerOr(p.Log, p.String())
	ch, err := vppbase.OpenChannel(p.String(), p.GoVPP, messages)
	if err != nil {
		return err
	}
	p.ch = ch
	deps := vppbase.DescriptorDeps{Log: p.Log, Ch: ch, Ifaces: func() kvapi.MetadataMap {
		return p.Scheduler.GetMetadataMap(ifaceidx.DescriptorName)
	}}
	for _, d := range Descriptors(deps) {
		if err := p.Scheduler.RegisterKVDescriptor(d); err != nil {
			ch.Close()
			p.ch = nil
			return fmt.Errorf("vpp-cnatplugin: %w", err)
		}
	}
	return nil
}

// Close closes the VPP channel.
func (p *Plugin) Close() error {
	if p.ch != nil {
		p.ch.Close()
		p.ch = nil
	}
	return nil
}
