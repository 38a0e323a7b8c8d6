package stnplugin

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/stn"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// messages lists every message the plugin uses (registered with govppmux, which checks
// that VPP knows them).
var messages = []govppapi.Message{
	&stn.StnAddDelRule{}, &stn.StnAddDelRuleReply{}, &stn.StnRulesDump{}, &stn.StnRulesDetails{},
}

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Scheduler is where the descriptor is registered. Required.
	Scheduler vppbase.Scheduler
	// GoVPP gives the channel the descriptor talks to VPP through. Required.
	GoVPP vppbase.GoVPP
	// LinkExists checks a stolen host link (nil: NetlinkLinkExists).
	LinkExists LinkExistsFunc
}

// Plugin is the VPP STN plugin: it registers the descriptors of STN rules and of
// stolen host links.
type Plugin struct {
	Deps

	ch govppapi.Channel
}

// String names the plugin.
func (p *Plugin) String() string { return "vpp-stnplugin" }

// Init opens the VPP channel and registers the descriptors.
func (p *Plugin) Init() error {
	if p.Scheduler == nil || p.GoVPP == nil {
		return errors.New("vpp-stnplugin: Scheduler and GoVPP are required")
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
	for _, d := range []*kvapi.KVDescriptor{NewRuleDescriptor(deps), NewHostLinkDescriptor(p.LinkExists)} {
		if err := p.Scheduler.RegisterKVDescriptor(d); err != nil {
			ch.Close()
			p.ch = nil
			return fmt.Errorf("vpp-stnplugin: %w", err)
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
