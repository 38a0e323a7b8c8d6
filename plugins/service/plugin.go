package service

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"k8s.io/utils/clock"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	cidrmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/healthcheck"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/lbfirewall"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/processor"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer/cnat"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer/nat44"
)

// GoVPP opens govpp channels (the govppmux plugin provides it).
type GoVPP interface {
	// NewAPIChannelBuffered returns a new channel with the given request and reply
	// buffer sizes.
	NewAPIChannelBuffered(reqChanBufSize, replyChanBufSize int) (govppapi.Channel, error)
}

// Buffer sizes of the channel used by the NAT session cleanup.
const (
	sessionChanRequestBuffer = 4096
	sessionChanReplyBuffer   = 4096
)

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Config loads service.conf (infra.NewConfigFile(fs, config.ConfigName): flag
	// -service-config, env SERVICE_CONFIG); nil means the code defaults.
	Config infra.ConfigLoader
	// ContivConf, NodeSync, PodManager, IPAM and IPNet are the plugins the processor
	// and the renderer read from.
	ContivConf contivconf.API
	NodeSync   nodesync.API
	PodManager podmanager.API
	IPAM       ipam.API
	IPNet      processor.IPNet
	// GoVPP opens the channel of the idle NAT session cleanup; optional (nil: no
	// cleanup even when service.conf enables it).
	GoVPP GoVPP
	// Registerer receives the metrics of the processor, the session cleanup and the
	// network programming latency; optional.
	Registerer prometheus.Registerer
	// Clock times the network programming latency and paces the NAT session
	// cleanup; nil: the real clock.
	Clock clock.WithTicker
	// Healthy tells the health check node ports whether the agent is healthy (their
	// serviceProxyHealthy: unhealthy answers 503 whatever the endpoints); nil: always.
	Healthy func() bool
	// ACLLists shares the uplinks' ACL lists with the policy plugin (the firewall of
	// loadBalancerSourceRanges adds its ACLs there); nil: a list of the plugin's own.
	ACLLists *ifacls.Lists
}

// Plugin is the service plugin: an event handler of the controller that passes
// Kubernetes services to the processor, which renders them through the NAT44
// renderer into the event's transaction. See the package documentation.
type Plugin struct {
	Deps

	config    *config.Config
	processor *processor.ServiceProcessor
	nat44     *nat44.Renderer // nil with serviceRenderer cnat or on an IPv6 cluster
	cnat      *cnat.Renderer  // nil on an IPv4 cluster with serviceRenderer nat44
	govppCh   govppapi.Channel
	// health serves the health check node ports; healthChecks feeds it.
	health       *healthcheck.Server
	healthChecks *healthcheck.Tracker
	// firewall enforces loadBalancerSourceRanges on the uplinks.
	firewall *lbfirewall.Firewall

	latency *programmingLatency
	// etxn is the transaction wrapper of the event being handled (Update).
	etxn eventTxn
}

var (
	_ controller.EventHandler   = (*Plugin)(nil)
	_ controller.CommitObserver = (*Plugin)(nil)
)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin { return &Plugin{Deps: deps} }

// String names the plugin.
func (p *Plugin) String() string { return "service" }

// Init loads and validates service.conf, builds the processor and, for IPv4, the
// NAT44 renderer.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	cfg := config.DefaultConfig()
	if p.Config != nil {
		found, err := p.Config.LoadConfig(cfg)
		if err != nil {
			return fmt.Errorf("service.conf: %w", err)
		}
		if !found {
			cfg = config.DefaultConfig()
		}
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid service.conf: %w", err)
	}
	p.config = cfg
	p.Log.WithFields(logrus.Fields{
		"cleanupIdleNATSessions": cfg.CleanupIdleNATSessions, "tcpNATSessionTimeout": cfg.TCPSessionTimeout(),
		"otherNATSessionTimeout": cfg.OtherSessionTimeout(), "serviceLocalEndpointWeight": cfg.ServiceLocalEndpointWeight,
		"disableNATVirtualReassembly": cfg.DisableNATVirtualReassembly, "nodePortRange": cfg.NodePortRange,
		"nodePortsOnThisNodeOnly": cfg.NodePortsOnThisNodeOnly, "disableAffinityTimeoutEnforcement": cfg.DisableAffinityTimeoutEnforcement,
	}).Info("service.conf loaded")

	p.latency = newProgrammingLatency(p.Clock)
	if p.Registerer != nil {
		if err := p.Registerer.Register(p.latency.hist); err != nil {
			return fmt.Errorf("service: register the network programming latency metric: %w", err)
		}
	}
	firstNodePort, lastNodePort, _ := cfg.NodePorts() // checked by Validate
	p.processor = &processor.ServiceProcessor{Deps: processor.Deps{
		Log: p.Log.WithField("component", "processor"), ContivConf: p.ContivConf, NodeSync: p.NodeSync,
		PodManager: p.PodManager, IPAM: p.IPAM, IPNet: p.IPNet, Registerer: p.Registerer,
		NodePortFirst: firstNodePort, NodePortLast: lastNodePort, NodePortsOnThisNodeOnly: cfg.NodePortsOnThisNodeOnly,
	}}
	if err := p.processor.Init(); err != nil {
		return err
	}
	// serviceRenderer: nat44 renders IPv4 Services with NAT44 (IPv6 ones with cnat, on
	// a cluster that has IPv6); cnat renders both and NAT44 is not registered at all.
	useCNAT := p.ContivConf.ServiceRenderer() == contivconf.ServiceRendererCNAT
	hasIPv6 := p.ContivConf.IsIPv6() || p.ContivConf.GetIPAMConfig().IsDualStack()
	if !useCNAT && !p.ContivConf.IsIPv6() {
		if err := p.initNAT44(cfg); err != nil {
			return err
		}
	}
	if useCNAT || hasIPv6 {
		p.cnat = &cnat.Renderer{Deps: cnat.Deps{
			Log: p.Log.WithField("component", "cnat"), ContivConf: p.ContivConf, IPAM: p.IPAM, IPNet: p.IPNet, IPv4: useCNAT,
			Maglev: cfg.Maglev(),
		}}
		if err := p.cnat.Init(); err != nil {
			return err
		}
		if err := p.processor.AddRenderer(p.cnat); err != nil {
			return err
		}
	}
	p.Log.WithFields(logrus.Fields{"serviceRenderer": p.ContivConf.ServiceRenderer(), "nat44": p.nat44 != nil,
		"cnat": p.cnat != nil, "cnatIPv4": useCNAT, "serviceLoadBalancing": cfg.ServiceLoadBalancing}).Info("service renderers")
	if p.ContivConf.IsIPv6() {
		return nil // no IPv4 node IP: no health check node ports, no IPv4 firewall
	}
	p.health = healthcheck.NewServer(healthcheck.ServerDeps{Log: p.Log.WithField("component", "healthcheck"), Clock: p.Clock, ProxyHealthy: p.Healthy})
	p.healthChecks = healthcheck.NewTracker(p.health, &healthcheck.Mappings{
		NodeIP: func() net.IP { ip, _ := p.IPNet.GetNodeIP(); return ip }, HostIP: p.IPAM.HostInterconnectIPInLinux,
		VRF: p.ContivConf.GetRoutingConfig().MainVRFID, CNAT: useCNAT, VPPIP: p.IPAM.HostInterconnectIPInVPP,
	})
	lists := p.ACLLists
	if lists == nil {
		lists = ifacls.NewAgentLists()
	}
	uplinks := []string{p.ContivConf.GetMainInterfaceName()}
	for _, o := range p.ContivConf.GetOtherVPPInterfaces() {
		uplinks = append(uplinks, o.InterfaceName)
	}
	uplinks = slices.DeleteFunc(uplinks, func(name string) bool { return name == "" })
	p.firewall = lbfirewall.New(lbfirewall.Deps{Log: p.Log.WithField("component", "lbfirewall"), Lists: lists, Uplinks: uplinks})
	return p.processor.AddRenderer(p.healthChecks)
}

// initNAT44 builds the NAT44 renderer of IPv4 Services and adds it to the processor.
func (p *Plugin) initNAT44(cfg *config.Config) error {
	// The channel serves the purge of stale UDP sessions (always) and the idle
	// session cleanup (when enabled).
	var sessionChan nat44.GoVPPChan
	if p.GoVPP != nil {
		ch, err := p.GoVPP.NewAPIChannelBuffered(sessionChanRequestBuffer, sessionChanReplyBuffer)
		if err != nil {
			return fmt.Errorf("service: open the GoVPP channel of the NAT session cleanup: %w", err)
		}
		p.govppCh, sessionChan = ch, ch
	}
	p.nat44 = &nat44.Renderer{Deps: nat44.Deps{
		Log: p.Log.WithField("component", "nat44"), Config: cfg, ContivConf: p.ContivConf, IPAM: p.IPAM, IPNet: p.IPNet,
		GoVPPChan: sessionChan, Stats: p.Registerer, Clock: p.Clock,
	}}
	if err := p.nat44.Init(false); err != nil {
		return err
	}
	return p.processor.AddRenderer(p.nat44)
}

// AfterInit starts the renderer's session cleanup (when enabled).
func (p *Plugin) AfterInit() error {
	if p.nat44 != nil {
		return p.nat44.AfterInit()
	}
	return nil
}

// Close stops the session cleanup and closes its channel.
func (p *Plugin) Close() error {
	var errs []error
	if p.nat44 != nil {
		errs = append(errs, p.nat44.Close())
	}
	if p.govppCh != nil {
		p.govppCh.Close()
		p.govppCh = nil
	}
	if p.health != nil {
		errs = append(errs, p.health.Close())
	}
	return errors.Join(errs...)
}

// HandlesEvent selects every resync, changes of Services, EndpointSlices, Endpoints,
// ServiceCIDRs and Nodes (this node's zone), AddPod, DeletePod and NodeUpdate (by type, or by name for producers that do not use the
// nodesync type). Shutdown is not handled: NAT configuration goes away with VPP.
func (p *Plugin) HandlesEvent(ev controller.Event) bool {
	if ev.Method() != controller.Update {
		return true
	}
	switch e := ev.(type) {
	case *controller.KubeStateChange:
		switch e.Resource {
		case svcmodel.Keyword, esmodel.Keyword, epmodel.Keyword, nodemodel.Keyword, cidrmodel.Keyword:
			return true
		}
		return false
	case *podmanager.AddPod, *podmanager.DeletePod, *nodesync.NodeUpdate:
		return true
	}
	return ev.GetName() == nodesync.NodeUpdateName
}

// Resync rebuilds the services from the Kubernetes state and stages the complete
// NAT configuration in txn.
func (p *Plugin) Resync(ev controller.Event, kubeStateData controller.KubeStateData, resyncCount int, txn controller.ResyncOperations) error {
	if p.healthChecks != nil {
		p.healthChecks.ResyncServices(txn, kubeStateData[svcmodel.Keyword])
		p.firewall.ResyncServices(txn, kubeStateData[svcmodel.Keyword])
	}
	if err := p.processor.ResyncInto(kubeStateData, txn); err != nil {
		return fmt.Errorf("service resync (%s, #%d): %w", ev.GetName(), resyncCount, err)
	}
	return nil
}

// Update handles one event and returns the description of what the renderers
// changed, e.g. "add service 'default/nginx'".
func (p *Plugin) Update(ev controller.Event, txn controller.UpdateOperations) (string, error) {
	p.latency.started(ev)
	if p.nat44 != nil {
		p.nat44.DiscardStale() // what an event that was never committed left
	}
	// One eventTxn for every event (the event loop calls Update from one goroutine):
	// a new one per event was an allocation per Endpoints change.
	etxn := &p.etxn
	etxn.UpdateOperations, etxn.changes = txn, etxn.changes[:0]
	if ksc, ok := ev.(*controller.KubeStateChange); ok && ksc.Resource == svcmodel.Keyword && p.healthChecks != nil {
		p.updateLoadBalancer(etxn, ksc)
	}
	err := p.processor.UpdateInto(ev, etxn)
	desc := strings.Join(etxn.changes, ", ")
	etxn.UpdateOperations = nil // the event's transaction is not kept past the event
	clear(etxn.changes)
	return desc, err
}

// Committed measures the network programming latency of an Endpoints change once
// the transaction programming it is committed, and has the NAT44 renderer purge the
// UDP sessions the change made stale (controller.CommitObserver).
func (p *Plugin) Committed(ev controller.Event, err error) {
	p.latency.committed(ev, err)
	if p.nat44 != nil {
		p.nat44.Committed(err)
	}
}

// Revert undoes the internal effect of a failed AddPod. What the renderers stage while
// reverting is discarded (the processor hands them a renderer.DiscardTxn): the event's
// transaction is not committed.
func (p *Plugin) Revert(ev controller.Event) error {
	return p.processor.Revert(ev)
}

// updateLoadBalancer hands a Service change to the health check server and the
// firewall of source ranges; an object of a wrong type is logged and skipped.
func (p *Plugin) updateLoadBalancer(etxn *eventTxn, ksc *controller.KubeStateChange) {
	change, err := p.healthChecks.UpdateService(etxn, ksc.PrevValue, ksc.NewValue)
	if err != nil {
		p.Log.WithError(err).Warn("health check node port not updated")
	}
	if change != "" {
		etxn.Describe(change)
	}
	change, err = p.firewall.UpdateService(etxn, ksc.PrevValue, ksc.NewValue)
	if err != nil {
		p.Log.WithError(err).Warn("LB source ranges not updated")
	}
	if change != "" {
		etxn.Describe(change)
	}
}

// eventTxn is the transaction of an update event as the renderers stage into it: the
// controller's transaction, with the change descriptions collected for Update's result.
type eventTxn struct {
	controller.UpdateOperations
	changes []string
}

// Describe records a change description.
func (t *eventTxn) Describe(change string) { t.changes = append(t.changes, change) }

// GetConfig returns the effective service.conf (nil before Init).
func (p *Plugin) GetConfig() *config.Config {
	if p.config == nil {
		return nil
	}
	c := *p.config
	return &c
}
