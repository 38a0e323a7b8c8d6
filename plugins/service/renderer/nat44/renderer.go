package nat44

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/rejects"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/shares"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/uplink"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// IdentityDNATLabel labels the DNat44 holding the identity mappings that keep
// node-bound traffic (VXLAN and the default interface's own address) out of SNAT.
const IdentityDNATLabel = vpp_nat.IdentityDNAT44Label

// vxlanPort is the UDP port of VXLAN, exempted from translation on the default
// interface's IP.
const vxlanPort = 4789

// anyVRF is VPP's "any VRF" (~0) for addresses of the NAT pool.
const anyVRF = ^uint32(0)

// IPNet is the part of the ipnet plugin's API that the renderer uses.
type IPNet interface {
	// GetNodeIP returns this node's IP and network.
	GetNodeIP() (ip net.IP, network *net.IPNet)
}

// Deps lists what the renderer needs.
type Deps struct {
	// Log receives the renderer's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Config is service.conf (nil: the code defaults).
	Config *config.Config
	// ContivConf gives the interfaces, VRFs, overlay mode and SNAT settings.
	ContivConf contivconf.API
	// IPAM gives the NAT loopback IP.
	IPAM ipam.API
	// IPNet gives this node's IP.
	IPNet IPNet
	// UpdateTxnFactory returns the transaction of the event being processed and
	// records the change description for the event history. It serves the seed API
	// methods only (AddService, ..., Resync), which have no transaction parameter;
	// optional when the renderer is used as a renderer.Renderer, whose methods are
	// given the transaction.
	UpdateTxnFactory func(change string) (txn controller.UpdateOperations)
	// ResyncTxnFactory returns the transaction of the resync being processed, for
	// the seed API method Resync; optional like UpdateTxnFactory.
	ResyncTxnFactory func() (txn controller.ResyncOperations)
	// GoVPPChan is used to dump and delete NAT sessions (idle ones, stale UDP ones,
	// and the ended ones of ClientIP affinity services); optional (nil: none of that,
	// and VPP's affinity is the ClientIP timeout as it is).
	GoVPPChan GoVPPChan
	// Stats receives the session cleanup metrics; optional.
	Stats prometheus.Registerer
	// Clock paces the session cleanup (a pass every otherNATSessionTimeout) and the
	// ClientIP affinity pass (every second); nil: the real clock.
	Clock clock.WithTicker
}

// Renderer renders services into VPP NAT44 configuration; see the package
// documentation. It is a renderer.Renderer (the processor's interface: FlatServices,
// the transaction passed with each call) and keeps the seed API
// (renderer.ServiceRendererAPI: ContivServices, the transaction from the Deps
// factories). Its methods are called from the event loop only.
type Renderer struct {
	Deps

	snatOnly bool

	// natGlobalCfg is the global NAT configuration last staged.
	natGlobalCfg *vpp_nat.Nat44Global
	// What the last resync learned about this node.
	mainVRF, podVRF uint32
	noOverlay       bool
	natLoopbackIP   net.IP
	defaultIfName   string
	defaultIfIP     net.IP
	// nodeIP and nodeNet are this node's IP and the node network it is on (IPNet).
	nodeIP  net.IP
	nodeNet *net.IPNet
	// nodeIPs are the node IPs (node ports); nodeAddrs their text, nodePeers whether
	// each is a peer's address on this node's network; nodeGen counts their changes.
	nodeIPs   *renderer.IPAddresses
	nodeAddrs []renderer.Address
	nodePeers []bool
	nodeGen   uint64
	// localWeight is serviceLocalEndpointWeight.
	localWeight uint32
	// slabs is always off: outside a resync every message is allocated on its own (a
	// resync renders into slabs of its own, one per goroutine: shares.Run).
	slabs dnatSlabs
	// rendered holds the DNAT last staged for each service by the FlatService it was
	// rendered from (the processor passes the same pointer while the service does not
	// change), with the inputs renderedWith (and, for node-port services, the node IPs
	// of generation nodeGen): a resync given the same FlatService again stages the same
	// DNAT, and a change of the node IPs builds a node-port service's DNAT from the
	// previous one. Keyed by pointer: a lookup hashes no strings.
	rendered     map[*renderer.FlatService]*renderedService
	renderedWith renderInputs
	// plain holds the flat form of the ContivServices received through the seed API
	// (not used by the service processor, which passes FlatServices).
	plain       map[renderer.ServiceID]plainService
	frontendIfs renderer.Interfaces
	backendIfs  renderer.Interfaces

	// Session cleanup.
	sessionMetrics *sessionMetrics
	stopCleanup    context.CancelFunc
	cleanupDone    sync.WaitGroup
	// stale are the UDP service ports whose sessions the update being staged makes
	// stale; purge queues them, once committed, to the session goroutine.
	stale []staleTarget
	purge chan []staleTarget
	// stalePurged, when set (tests), is called after each purge of stale UDP
	// sessions with the number it deleted.
	stalePurged func(deleted int)
	// affinity holds the Services with ClientIP affinity for the pass that makes their
	// timeout hold (affinity.go); affinityWake tells the session goroutine that it may
	// have to start or stop the pass; affinityPassed, when set (tests), is called
	// after each pass with the number of sessions it deleted.
	// affinityRunning tells whether the pass's ticker runs (set by the goroutine).
	affinity        *affinityIndex
	affinityWake    chan struct{}
	affinityPassed  func(deleted int)
	affinityRunning atomic.Bool
	// routeUsers holds, by address, the services that want a reject or drop route
	// on it (reject.go).
	routeUsers rejects.Users
	// extUsers holds, by external or load balancer ingress IP, the services exposed on
	// it, and extAddrs those IPs sorted (external.go).
	extUsers map[string]map[renderer.ServiceID]struct{}
	extAddrs []string
	// extIPServices holds, by IPv4 external or load balancer ingress IP, every service
	// exposed on it, node IPs included (which get no values), so that a change of the
	// node IPs re-evaluates only the services of the IPs that changed (external.go).
	extIPServices map[string]map[renderer.ServiceID]*renderer.FlatService
}

var (
	_ renderer.Renderer           = (*Renderer)(nil)
	_ renderer.ServiceRendererAPI = (*Renderer)(nil)
)

// Init prepares the renderer. With snatOnly the renderer configures only the SNAT of
// traffic leaving the cluster and leaves services to another renderer.
func (rndr *Renderer) Init(snatOnly bool) error {
	rndr.Log = infra.LoggerOr(rndr.Log, "nat44-renderer")
	if rndr.Config == nil {
		rndr.Config = config.DefaultConfig()
	}
	switch {
	case rndr.ContivConf == nil:
		return errors.New("nat44 renderer: Deps.ContivConf is required")
	case rndr.IPAM == nil:
		return errors.New("nat44 renderer: Deps.IPAM is required")
	case rndr.IPNet == nil:
		return errors.New("nat44 renderer: Deps.IPNet is required")
	}
	rndr.snatOnly = snatOnly
	rndr.natGlobalCfg = &vpp_nat.Nat44Global{Forwarding: true}
	rndr.affinity = newAffinityIndex()
	rndr.affinityWake = make(chan struct{}, 1)
	rndr.setNodeIPs(renderer.NewIPAddresses())
	rndr.localWeight = rndr.Config.LocalEndpointWeight()
	rndr.rendered = make(map[*renderer.FlatService]*renderedService)
	rndr.plain = make(map[renderer.ServiceID]plainService)
	rndr.frontendIfs = renderer.NewInterfaces()
	rndr.backendIfs = renderer.NewInterfaces()
	rndr.sessionMetrics = newSessionMetrics()
	return nil
}

// AfterInit starts the session goroutine when the renderer has a GoVPP channel: it
// purges the UDP sessions that changes of services made stale (see Committed), runs
// the pass that makes ClientIP affinity timeouts hold while a Service has one
// (affinity.go) and, when service.conf enables it, cleans up idle NAT sessions.
func (rndr *Renderer) AfterInit() error {
	if rndr.GoVPPChan == nil {
		if rndr.Config.CleanupIdleNATSessions {
			rndr.Log.Warn("cleanupIdleNATSessions is on, but there is no GoVPP channel: idle NAT sessions are not cleaned up")
		}
		return nil
	}
	var ticker clock.Ticker
	if rndr.Config.CleanupIdleNATSessions {
		if rndr.Stats != nil {
			if err := rndr.sessionMetrics.register(rndr.Stats); err != nil {
				return fmt.Errorf("nat44 renderer: register metrics: %w", err)
			}
		}
		interval := rndr.Config.OtherSessionTimeout()
		ticker = rndr.clock().NewTicker(interval)
		rndr.Log.WithFields(logrus.Fields{
			"interval": interval, "tcpTimeout": rndr.Config.TCPSessionTimeout(), "otherTimeout": rndr.Config.OtherSessionTimeout(),
		}).Info("idle NAT session cleanup started")
	}
	rndr.purge = make(chan []staleTarget, purgeQueue)
	ctx, cancel := context.WithCancel(context.Background())
	rndr.stopCleanup = cancel
	rndr.cleanupDone.Add(1)
	go rndr.runSessionCleanup(ctx, ticker)
	return nil
}

// Close stops the session cleanup and waits for it to finish.
func (rndr *Renderer) Close() error {
	if rndr.stopCleanup != nil {
		rndr.stopCleanup()
		rndr.cleanupDone.Wait()
		rndr.stopCleanup = nil
	}
	return nil
}

// plainService is a ContivService received through the seed API with its flat form.
type plainService struct {
	cs *renderer.ContivService
	fs *renderer.FlatService
}

// flatOf returns the flat form of a ContivService received through the seed API: the
// same FlatService as before for the same ContivService.
func (rndr *Renderer) flatOf(cs *renderer.ContivService) *renderer.FlatService {
	if p, ok := rndr.plain[cs.ID]; ok && p.cs == cs {
		return p.fs
	}
	fs := renderer.NewFlatService(cs)
	rndr.plain[cs.ID] = plainService{cs: cs, fs: fs}
	return fs
}

// forgetPlain returns the flat form last given for the service through the seed API
// (a stub with its ID if none) and forgets it.
func (rndr *Renderer) forgetPlain(id renderer.ServiceID) *renderer.FlatService {
	p, ok := rndr.plain[id]
	if !ok {
		return &renderer.FlatService{ID: id}
	}
	delete(rndr.plain, id)
	return p.fs
}

// factoryTxn is the transaction of a call through the seed API: the one that
// Deps.UpdateTxnFactory returns when the change is described (the factory records the
// description). The renderer describes every change before it stages it.
type factoryTxn struct {
	factory func(change string) controller.UpdateOperations
	txn     controller.UpdateOperations
}

// Describe asks the factory for the transaction, recording change.
func (t *factoryTxn) Describe(change string) { t.txn = t.factory(change) }

// ops returns the transaction (asking the factory, with no description, if the change
// was not described).
func (t *factoryTxn) ops() controller.UpdateOperations {
	if t.txn == nil {
		t.txn = t.factory("")
	}
	return t.txn
}

// Put stages value under key.
func (t *factoryTxn) Put(key string, value proto.Message) { t.ops().Put(key, value) }

// Get returns the value staged under key.
func (t *factoryTxn) Get(key string) proto.Message { return t.ops().Get(key) }

// Delete stages the removal of key.
func (t *factoryTxn) Delete(key string) { t.ops().Delete(key) }

// seedTxn returns the update transaction of a seed API call.
func (rndr *Renderer) seedTxn() (renderer.UpdateTxn, error) {
	if rndr.UpdateTxnFactory == nil {
		return nil, errors.New("nat44 renderer: called through the seed API without Deps.UpdateTxnFactory")
	}
	return &factoryTxn{factory: rndr.UpdateTxnFactory}, nil
}

// AddService stages the DNAT of a new service (seed API: AddFlatService staging into
// the transaction of Deps.UpdateTxnFactory).
func (rndr *Renderer) AddService(service *renderer.ContivService) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	return rndr.AddFlatService(txn, rndr.flatOf(service))
}

// UpdateService stages the new DNAT of a changed service (seed API, see AddService).
func (rndr *Renderer) UpdateService(oldService, newService *renderer.ContivService) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	var old *renderer.FlatService
	if oldService != nil {
		old = rndr.forgetPlain(oldService.ID)
	}
	return rndr.UpdateFlatService(txn, old, rndr.flatOf(newService))
}

// DeleteService stages the removal of the service's DNAT (seed API, see AddService).
func (rndr *Renderer) DeleteService(service *renderer.ContivService) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	return rndr.DeleteFlatService(txn, rndr.forgetPlain(service.ID))
}

// UpdateNodePortServices stages the DNAT of every node-port service for the new node
// IPs (seed API, see AddService).
func (rndr *Renderer) UpdateNodePortServices(nodeIPs *renderer.IPAddresses, npServices []*renderer.ContivService) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	flat := make([]*renderer.FlatService, len(npServices))
	for i, svc := range npServices {
		flat[i] = rndr.flatOf(svc)
	}
	return rndr.UpdateFlatNodePortServices(txn, nodeIPs, flat)
}

// UpdateLocalFrontendIfs stages the global NAT configuration with the new frontends as
// outside interfaces (seed API, see AddService).
func (rndr *Renderer) UpdateLocalFrontendIfs(oldIfNames, newIfNames renderer.Interfaces) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	return rndr.UpdateFrontendIfs(txn, oldIfNames, newIfNames)
}

// UpdateLocalBackendIfs stages the global NAT configuration with the new backends as
// inside interfaces (seed API, see AddService).
func (rndr *Renderer) UpdateLocalBackendIfs(oldIfNames, newIfNames renderer.Interfaces) error {
	txn, err := rndr.seedTxn()
	if err != nil {
		return err
	}
	return rndr.UpdateBackendIfs(txn, oldIfNames, newIfNames)
}

// Resync recomputes everything from the snapshot into the transaction of
// Deps.ResyncTxnFactory (seed API); see ResyncFlat.
func (rndr *Renderer) Resync(resyncEv *renderer.ResyncEventData) error {
	if rndr.ResyncTxnFactory == nil {
		return errors.New("nat44 renderer: called through the seed API without Deps.ResyncTxnFactory")
	}
	txn := rndr.ResyncTxnFactory()
	if resyncEv == nil {
		clear(rndr.plain)
		return rndr.ResyncFlat(txn, nil)
	}
	ev := &renderer.FlatResyncEventData{NodeIPs: resyncEv.NodeIPs, FrontendIfs: resyncEv.FrontendIfs, BackendIfs: resyncEv.BackendIfs,
		Services: make([]*renderer.FlatService, len(resyncEv.Services))}
	plain := make(map[renderer.ServiceID]plainService, len(resyncEv.Services))
	for i, svc := range resyncEv.Services {
		ev.Services[i] = rndr.flatOf(svc)
		plain[svc.ID] = rndr.plain[svc.ID]
	}
	rndr.plain = plain
	return rndr.ResyncFlat(txn, ev)
}

// AddFlatService stages the DNAT of a new service.
func (rndr *Renderer) AddFlatService(txn renderer.UpdateTxn, service *renderer.FlatService) error {
	if rndr.snatOnly {
		return nil
	}
	r := rndr.renderIncremental(service, nil)
	rndr.noteStaleUDP(nil, service)
	txn.Describe(fmt.Sprintf("add service '%s'", service.ID))
	txn.Put(r.key, r.dnat)
	rndr.updateAffinity(txn, nil, service)
	rndr.updateRoutes(txn, service.ID, nil, r.routes)
	rndr.updateExternalIPs(txn, service.ID, nil, r.externals)
	rndr.indexExternalIPs(nil, service)
	return nil
}

// UpdateFlatService stages the new DNAT of a changed service (the whole value replaces
// the old one).
func (rndr *Renderer) UpdateFlatService(txn renderer.UpdateTxn, oldService, newService *renderer.FlatService) error {
	if rndr.snatOnly {
		return nil
	}
	txn.Describe(fmt.Sprintf("update service '%s'", newService.ID))
	var old *renderedService
	var oldRoutes []serviceRoute
	var oldExternals []string
	if oldService != nil {
		old = rndr.rendered[oldService]
		delete(rndr.rendered, oldService)
		if old != nil {
			oldRoutes, oldExternals = old.routes, old.externals
		} else {
			oldRoutes, oldExternals = rndr.wantedRoutes(oldService), rndr.wantedExternalIPs(oldService)
		}
		if oldService.ID != newService.ID {
			old = nil
			txn.Delete(vpp_nat.DNAT44Key(oldService.ID.String()))
			rndr.updateRoutes(txn, oldService.ID, oldRoutes, nil)
			rndr.updateExternalIPs(txn, oldService.ID, oldExternals, nil)
			oldRoutes, oldExternals = nil, nil
		}
	}
	r := rndr.renderIncremental(newService, old)
	rndr.noteStaleUDP(oldService, newService)
	txn.Put(r.key, r.dnat)
	rndr.updateAffinity(txn, oldService, newService)
	rndr.updateRoutes(txn, newService.ID, oldRoutes, r.routes)
	rndr.updateExternalIPs(txn, newService.ID, oldExternals, r.externals)
	rndr.indexExternalIPs(oldService, newService)
	return nil
}

// DeleteFlatService stages the removal of the service's DNAT.
func (rndr *Renderer) DeleteFlatService(txn renderer.UpdateTxn, service *renderer.FlatService) error {
	if rndr.snatOnly {
		return nil
	}
	oldRoutes, oldExternals := rndr.wantedRoutes(service), rndr.wantedExternalIPs(service)
	if r := rndr.rendered[service]; r != nil {
		oldRoutes, oldExternals = r.routes, r.externals
	}
	delete(rndr.rendered, service)
	rndr.noteStaleUDP(service, nil)
	txn.Describe(fmt.Sprintf("delete service '%s'", service.ID))
	txn.Delete(vpp_nat.DNAT44Key(service.ID.String()))
	rndr.updateAffinity(txn, service, nil)
	rndr.updateRoutes(txn, service.ID, oldRoutes, nil)
	rndr.updateExternalIPs(txn, service.ID, oldExternals, nil)
	rndr.indexExternalIPs(service, nil)
	return nil
}

// renderIncremental renders one service into a new record; old is the record of its
// previous rendering (nil if none), whose key is reused.
func (rndr *Renderer) renderIncremental(svc *renderer.FlatService, old *renderedService) *renderedService {
	r := &renderedService{}
	if old != nil {
		r.key = old.key
	}
	rndr.render(svc, r, &rndr.slabs)
	rndr.rendered[svc] = r
	return r
}

// UpdateFlatNodePortServices keeps the new node IPs and stages the DNAT of every
// node-port service for them. A service rendered before (the same FlatService) keeps
// its mappings: only those on the node IPs that appeared are built, those of the node
// IPs that disappeared are left out, so the cost follows the changed mappings (plus
// one pointer per mapping for the new list).
func (rndr *Renderer) UpdateFlatNodePortServices(txn renderer.UpdateTxn, nodeIPs *renderer.IPAddresses, npServices []*renderer.FlatService) error {
	previous := make(map[string]int, len(rndr.nodeAddrs))
	for i, a := range rndr.nodeAddrs {
		previous[a.Text] = i
	}
	prevGen := rndr.nodeGen
	rndr.setNodeIPs(nodeIPs)
	rndr.affinity.setNode(rndr.nodeAddrs, rndr.podVRF, rndr.mainVRF)
	if rndr.snatOnly {
		return nil
	}
	oldIndex := make([]int, len(rndr.nodeAddrs))
	for j, a := range rndr.nodeAddrs {
		i, ok := previous[a.Text]
		if !ok {
			i = -1
		}
		oldIndex[j] = i
	}
	txn.Describe("update node-port services")
	for _, svc := range npServices {
		old := rndr.rendered[svc]
		r := &renderedService{}
		switch {
		case old != nil && old.svc == svc && old.nodeGen == prevGen && old.ports != nil:
			*r = *old
			rndr.withNodeIPs(r, oldIndex)
		default:
			if old != nil {
				r.key = old.key
			}
			rndr.render(svc, r, &rndr.slabs)
		}
		rndr.rendered[svc] = r
		txn.Put(r.key, r.dnat)
	}
	rndr.nodeAddrsChanged(txn, previous)
	return nil
}

// UpdateFrontendIfs stages the global NAT configuration with the new frontends as
// outside interfaces.
func (rndr *Renderer) UpdateFrontendIfs(txn renderer.UpdateTxn, oldIfNames, newIfNames renderer.Interfaces) error {
	if rndr.snatOnly {
		return nil
	}
	rndr.frontendIfs = newIfNames.Copy()
	rndr.stageGlobal(txn, "update NAT frontend interfaces")
	return nil
}

// UpdateBackendIfs stages the global NAT configuration with the new backends as inside
// interfaces.
func (rndr *Renderer) UpdateBackendIfs(txn renderer.UpdateTxn, oldIfNames, newIfNames renderer.Interfaces) error {
	if rndr.snatOnly {
		return nil
	}
	rndr.backendIfs = newIfNames.Copy()
	rndr.stageGlobal(txn, "update NAT backend interfaces")
	return nil
}

// stageGlobal rebuilds the global NAT configuration and stages it into txn.
func (rndr *Renderer) stageGlobal(txn renderer.UpdateTxn, change string) {
	rndr.natGlobalCfg = rndr.globalConfig()
	txn.Describe(change)
	txn.Put(vpp_nat.GlobalNAT44Key, rndr.natGlobalCfg)
}

// ResyncFlat recomputes everything from the snapshot and this node's configuration:
// the default interface, the global NAT configuration, one DNAT per service and the
// identity mappings, all staged into txn, the resync transaction (stale DNATs are
// removed by the resync itself). In snatOnly mode the snapshot is taken as empty. A service given
// as the same FlatService as before, rendered with the same inputs, is staged with
// the same DNAT.
func (rndr *Renderer) ResyncFlat(txn controller.ResyncOperations, resyncEv *renderer.FlatResyncEventData) error {
	if rndr.snatOnly || resyncEv == nil {
		resyncEv = &renderer.FlatResyncEventData{NodeIPs: renderer.NewIPAddresses(), FrontendIfs: renderer.NewInterfaces(),
			BackendIfs: renderer.NewInterfaces()}
	}
	rndr.learnNode()
	rndr.localWeight = rndr.Config.LocalEndpointWeight()
	if !resyncEv.NodeIPs.Equal(rndr.nodeIPs) {
		rndr.setNodeIPs(resyncEv.NodeIPs)
	}
	rndr.frontendIfs = resyncEv.FrontendIfs.Copy()
	rndr.backendIfs = resyncEv.BackendIfs.Copy()

	previous := rndr.rendered
	if inputs := rndr.renderInputs(); inputs != rndr.renderedWith {
		previous, rndr.renderedWith = nil, inputs
	}
	// The services to render anew (the others keep their DNAT) are rendered in shares,
	// a large resync by several goroutines, each into blocks of its own; the DNATs are
	// staged in the order of the services whatever the shares.
	records := make([]*renderedService, len(resyncEv.Services))
	var todo []int // indexes of the services to render
	for i, svc := range resyncEv.Services {
		r := previous[svc]
		if r == nil || (r.ports != nil && r.nodeGen != rndr.nodeGen) {
			todo = append(todo, i)
			continue
		}
		if r.nodeGen != rndr.nodeGen && len(svc.ExternalIPs) > 0 {
			// Kept DNAT, but an external IP may have become or stopped being a
			// node IP: its route is wanted anew (the external IPs' values are,
			// by resyncExternalIPs).
			r.routes, r.nodeGen = rndr.wantedRoutes(svc), rndr.nodeGen
		}
		records[i] = r
	}
	shares.Run(len(todo), parallelRenderMin, func(_, lo, hi int) {
		if lo == hi {
			return
		}
		sl := dnatSlabs{on: true, locals: make(map[localKey]*vpp_nat.DNat44_StaticMapping_LocalIP, 1024)}
		for _, i := range todo[lo:hi] {
			r := &carve(true, &sl.services, 1)[0]
			rndr.render(resyncEv.Services[i], r, &sl)
			records[i] = r
		}
	})
	rndr.rendered = make(map[*renderer.FlatService]*renderedService, len(resyncEv.Services))
	for i, svc := range resyncEv.Services {
		r := records[i]
		rndr.rendered[svc] = r
		txn.Put(r.key, r.dnat)
	}
	txn.Put(vpp_nat.DNAT44Key(IdentityDNATLabel), rndr.identityDNAT())
	rndr.resyncRoutes(txn, records)
	rndr.resyncExternalIPs(txn, records)
	rndr.extIPServices = nil
	for _, svc := range resyncEv.Services {
		rndr.indexExternalIPs(nil, svc)
	}
	rndr.resyncAffinity(resyncEv.Services)
	rndr.natGlobalCfg = rndr.globalConfig()
	txn.Put(vpp_nat.GlobalNAT44Key, rndr.natGlobalCfg)

	rndr.Log.WithFields(logrus.Fields{
		"services": len(resyncEv.Services), "defaultInterface": rndr.defaultIfName, "snatIP": ipString(rndr.defaultIfIP),
		"natLoopback": ipString(rndr.natLoopbackIP), "snatOnly": rndr.snatOnly, "externalIPs": len(rndr.extAddrs),
	}).Info("NAT44 configuration resynced")
	return nil
}

// parallelRenderMin is the smallest share of a resync's services that a goroutine of
// its own renders (shares.Run): smaller resyncs render on the calling goroutine.
const parallelRenderMin = 1000

// learnNode reads what the rendering needs to know about this node: VRFs, the NAT
// loopback and the default interface used for SNAT.
func (rndr *Renderer) learnNode() {
	routing := rndr.ContivConf.GetRoutingConfig()
	rndr.mainVRF, rndr.podVRF, rndr.noOverlay = routing.MainVRFID, routing.PodVRFID, routing.UseNoOverlay
	rndr.natLoopbackIP = ipv4(rndr.IPAM.NatLoopbackIP())
	rndr.nodeIP, rndr.nodeNet = rndr.IPNet.GetNodeIP()
	rndr.defaultIfName, rndr.defaultIfIP = "", nil
	if !rndr.ContivConf.NatExternalTraffic() {
		return
	}
	name, ip := uplink.Default(rndr.ContivConf, rndr.nodeIP, rndr.nodeNet)
	switch {
	case name == "" || ip == nil:
		rndr.Log.Info("no default interface with an IPv4 address: no SNAT of traffic leaving the cluster")
	case routing.UseNoOverlay && name == rndr.ContivConf.GetMainInterfaceName():
		rndr.Log.WithField("interface", name).Info("no-overlay mode: no SNAT on the main interface, it carries the traffic between nodes")
	default:
		rndr.defaultIfName, rndr.defaultIfIP = name, ip
	}
}

// globalConfig builds the global NAT configuration from the current state.
func (rndr *Renderer) globalConfig() *vpp_nat.Nat44Global {
	cfg := &vpp_nat.Nat44Global{Forwarding: true}
	if rndr.Config.DisableNATVirtualReassembly {
		cfg.VirtualReassembly = &vpp_nat.VirtualReassembly{DropFragments: true}
	}
	if rndr.defaultIfIP != nil {
		cfg.AddressPool = append(cfg.AddressPool, &vpp_nat.Nat44Global_Address{Address: rndr.defaultIfIP.String(), VrfId: anyVRF})
	}
	if !rndr.snatOnly && rndr.natLoopbackIP != nil {
		cfg.AddressPool = append(cfg.AddressPool, &vpp_nat.Nat44Global_Address{Address: rndr.natLoopbackIP.String(), VrfId: anyVRF, TwiceNat: true})
	}
	cfg.AddressPool = append(cfg.AddressPool, rndr.externalPool()...)
	cfg.NatInterfaces = rndr.natInterfaces()
	cfg.Timeouts = rndr.affinityTimeouts()
	return cfg
}

// natInterfaces lists the NAT interfaces sorted by name: a backend is "in", a frontend
// "out" (both when in both sets), and the default interface gets the output feature
// (post-routing SNAT) instead of "out".
func (rndr *Renderer) natInterfaces() []*vpp_nat.Nat44Global_Interface {
	all := rndr.frontendIfs.Copy()
	for name := range rndr.backendIfs {
		all.Add(name)
	}
	if rndr.defaultIfName != "" {
		all.Add(rndr.defaultIfName)
	}
	list := make([]*vpp_nat.Nat44Global_Interface, 0, len(all)+len(rndr.backendIfs))
	for _, name := range all.Sorted() {
		if rndr.backendIfs.Has(name) {
			list = append(list, &vpp_nat.Nat44Global_Interface{Name: name, IsInside: true})
		}
		if name == rndr.defaultIfName {
			list = append(list, &vpp_nat.Nat44Global_Interface{Name: name, OutputFeature: true})
		} else if rndr.frontendIfs.Has(name) {
			list = append(list, &vpp_nat.Nat44Global_Interface{Name: name})
		}
	}
	return list
}

// identityDNAT builds the identity mappings of the default interface's IP: VXLAN
// (UDP 4789) in the main VRF and the address itself in the pod and main VRFs, so that
// traffic between nodes and traffic to the node keeps its addresses. Without a
// default interface the DNAT is empty.
func (rndr *Renderer) identityDNAT() *vpp_nat.DNat44 {
	dnat := &vpp_nat.DNat44{Label: IdentityDNATLabel}
	if rndr.defaultIfIP == nil {
		return dnat
	}
	ip := rndr.defaultIfIP.String()
	dnat.IdMappings = []*vpp_nat.DNat44_IdentityMapping{
		{IpAddress: ip, Protocol: vpp_nat.DNat44_UDP, Port: vxlanPort, VrfId: rndr.mainVRF},
		// Address-only mappings carry UDP: VPP dumps them so.
		{IpAddress: ip, Protocol: vpp_nat.DNat44_UDP, VrfId: rndr.podVRF},
		{IpAddress: ip, Protocol: vpp_nat.DNat44_UDP, VrfId: rndr.mainVRF},
	}
	return dnat
}

// ipv4 returns the 4-byte form of an IPv4 address, nil for anything else.
func ipv4(ip net.IP) net.IP {
	return ip.To4()
}

func ipString(ip net.IP) string {
	if ip == nil {
		return ""
	}
	return ip.String()
}
