package processor

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	nodemodel "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	cidrmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/internal/shares"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// IPNet is the part of the ipnet plugin's API that the processor uses (the method
// set of ipnet.API that concerns it); the ipnet plugin implements it.
type IPNet interface {
	// GetPodIfNames returns the logical names of the pod's interfaces; exists is
	// false for pods that ipnet did not wire (host-network pods, unknown pods).
	GetPodIfNames(podNamespace string, podName string) (vppIfName, linuxIfName, loopIfName string, exists bool)
	// GetNodeIP returns this node's IP and network.
	GetNodeIP() (ip net.IP, network *net.IPNet)
	// GetHostIPs returns the IPs of this node in the host network namespace.
	GetHostIPs() []net.IP
	// GetHostInterconnectIfName returns the VPP interface connecting VPP with the host.
	GetHostInterconnectIfName() string
	// GetVxlanBVIIfName returns the BVI of the VXLAN bridge domain, "" without overlay.
	GetVxlanBVIIfName() string
}

// Deps lists what the processor needs.
type Deps struct {
	// Log receives the processor's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// ContivConf gives the main and other VPP interfaces and the overlay mode.
	ContivConf contivconf.API
	// NodeSync gives the IPs of every node (for node ports).
	NodeSync nodesync.API
	// PodManager gives the pods of this node at resync.
	PodManager podmanager.API
	// IPAM gives this node's and the cluster's pod subnets.
	IPAM ipam.API
	// IPNet gives the interface names and this node's addresses.
	IPNet IPNet
	// Registerer receives the processor's metrics; optional.
	Registerer prometheus.Registerer
	// NodePortFirst and NodePortLast bound the node ports the processor accepts
	// (service.conf nodePortRange); both 0: the Kubernetes default 30000-32767.
	NodePortFirst, NodePortLast uint16
	// NodePortsOnThisNodeOnly exposes node ports on this node's IPs only
	// (service.conf nodePortsOnThisNodeOnly); otherwise on every node's IPs.
	NodePortsOnThisNodeOnly bool
}

// Kubernetes' default node port range (kube-apiserver --service-node-port-range).
const (
	defaultNodePortFirst = 30000
	defaultNodePortLast  = 32767
)

// ServiceProcessor turns Kubernetes Services and Endpoints into FlatServices, keeps the
// frontend and backend interface sets and hands both to its renderers; see the package
// documentation. All methods are called from the controller's event loop.
type ServiceProcessor struct {
	Deps

	renderers []renderer.Renderer

	services         map[string]*Service             // by serviceKey
	sliceOwner       map[string]string               // EndpointSlice key (sliceKey) -> serviceKey of its service
	nodePortServices map[renderer.ServiceID]*Service // rendered services with a node port
	localEps         map[podmodel.ID]*LocalEndpoint
	frontendIfs      renderer.Interfaces // never modified in place: replaced on change
	backendIfs       renderer.Interfaces // idem
	nodeIPs          *renderer.IPAddresses
	node             nodeContext

	stats *stats

	// nodeGen counts the changes of node; parsed endpoint addresses are classified
	// again when it moved.
	nodeGen uint64
	// slabs is always off: outside a resync everything is allocated on its own (a
	// resync cuts from blocks of its own, one set per goroutine: shares.Run).
	slabs renderSlabs
	// resyncGen counts resyncs; services not seen in the current one are dropped.
	resyncGen uint64

	// nodeName and zone are this node's name and topology.kubernetes.io/zone label,
	// against which the topology hints of endpoints are read; topoGen counts their
	// changes.
	nodeName, zone string
	topoGen        uint64

	// cidrs are the ranges of the ServiceCIDR objects; outsideCIDR indexes the
	// services with a cluster IP outside the configured service CIDR (those a change
	// of the ranges concerns).
	cidrs       serviceCIDRs
	outsideCIDR map[*Service]struct{}

	// The address indexes of the endpoint checks (endpointcheck.go): the cluster IPs
	// of every Service, the addresses of every node, and the services by the
	// addresses of their endpoints outside the pod network.
	clusterIPs map[netip.Addr]int
	nodeAddrs  nodeAddrs
	hostEps    map[netip.Addr]map[*Service]struct{}
}

// Init checks the dependencies, prepares empty state and registers the metrics.
func (sp *ServiceProcessor) Init() error {
	sp.Log = infra.LoggerOr(sp.Log, "service-processor")
	switch {
	case sp.ContivConf == nil:
		return errors.New("service processor: Deps.ContivConf is required")
	case sp.NodeSync == nil:
		return errors.New("service processor: Deps.NodeSync is required")
	case sp.PodManager == nil:
		return errors.New("service processor: Deps.PodManager is required")
	case sp.IPAM == nil:
		return errors.New("service processor: Deps.IPAM is required")
	case sp.IPNet == nil:
		return errors.New("service processor: Deps.IPNet is required")
	}
	sp.stats = newStats()
	if sp.Registerer != nil {
		if err := sp.stats.register(sp.Registerer); err != nil {
			return fmt.Errorf("service processor: register metrics: %w", err)
		}
	}
	sp.reset(0)
	return nil
}

// AfterInit does nothing.
func (sp *ServiceProcessor) AfterInit() error { return nil }

// Close does nothing: the processor holds no resources.
func (sp *ServiceProcessor) Close() error { return nil }

// AddRenderer adds a renderer; it receives every later call, after the renderers added
// before it (add renderers before the first resync).
func (sp *ServiceProcessor) AddRenderer(r renderer.Renderer) error {
	if r == nil {
		return errors.New("service processor: nil renderer")
	}
	sp.renderers = append(sp.renderers, r)
	return nil
}

// RegisterRenderer adds a renderer of the seed API through a renderer.SeedAdapter of its
// own. The renderer stages into the transaction that its own dependencies give it; to
// have it stage into the transaction passed to ResyncInto and UpdateInto, wire its
// transaction factories to a SeedAdapter and add that with AddRenderer instead.
func (sp *ServiceProcessor) RegisterRenderer(r renderer.ServiceRendererAPI) error {
	if r == nil {
		return errors.New("service processor: nil renderer")
	}
	return sp.AddRenderer(&renderer.SeedAdapter{Renderer: r})
}

// reset forgets all state.
func (sp *ServiceProcessor) reset(services int) {
	sp.services = make(map[string]*Service, services)
	sp.sliceOwner = make(map[string]string)
	sp.outsideCIDR = make(map[*Service]struct{})
	sp.clusterIPs = make(map[netip.Addr]int)
	sp.nodeAddrs = newNodeAddrs()
	sp.hostEps = make(map[netip.Addr]map[*Service]struct{})
	sp.resetDerived()
}

// resetDerived empties what Resync derives from the services.
func (sp *ServiceProcessor) resetDerived() {
	sp.nodePortServices = make(map[renderer.ServiceID]*Service)
	sp.localEps = make(map[podmodel.ID]*LocalEndpoint)
	sp.frontendIfs = renderer.NewInterfaces()
	sp.backendIfs = renderer.NewInterfaces()
	sp.nodeIPs = renderer.NewIPAddresses()
	if sp.stats == nil {
		sp.stats = newStats()
	}
}

// refreshNodeContext reads this node's subnets and addresses.
func (sp *ServiceProcessor) refreshNodeContext() {
	n := readNodeContext(sp.IPAM, sp.IPNet)
	if !n.equal(&sp.node) {
		n.prepare()
		sp.node = n
		sp.nodeGen++
	}
}

// Resync is ResyncInto without a transaction (the seed API's form): the renderers are
// given a renderer.DiscardTxn. It serves renderers that get their transaction from
// their own dependencies, those registered with RegisterRenderer.
func (sp *ServiceProcessor) Resync(kubeStateData controller.KubeStateData) error {
	return sp.ResyncInto(kubeStateData, renderer.DiscardTxn{})
}

// ResyncInto replaces the whole state by the one built from the Kubernetes state and
// gives every renderer the complete snapshot, to be staged into txn.
func (sp *ServiceProcessor) ResyncInto(kubeStateData controller.KubeStateData, txn controller.ResyncOperations) error {
	sp.refreshNodeContext()
	sp.resetDerived()
	sp.setTopology(sp.thisNodeName(), kubeStateData)
	sp.resyncServiceCIDRs(kubeStateData)

	// A service whose Kubernetes objects are the very ones the processor holds (the
	// controller hands the same objects to every resync until they change), parsed for
	// the current node context, keeps its parsed halves and its rendering; anything
	// else is parsed again. The gauges follow by difference (parseMetadata and
	// parseEndpoints account for what a service's objects add and remove). Values of an
	// unexpected type, without a name or under a malformed key are logged and skipped.
	//
	// The objects are read in the order of their addresses (inMemoryOrder): the objects
	// of a resync are new and scattered over the heap, and reading them in map order
	// makes nearly every first touch a cache miss, which was most of the cost of a
	// resync of new objects; in address order the memory is read mostly forward. The
	// services are then parsed, refreshed and rendered in the order they were first
	// seen (the Endpoints first), a large resync by several goroutines (shares.Run).
	sp.resyncGen++
	gen := sp.resyncGen
	order := make([]*Service, 0, len(sp.services)) // the services of this resync, each once
	seen := func(s *Service) {
		if s.metaSeen != gen && s.endpointsSeen != gen && s.slicesSeen != gen {
			order = append(order, s)
		}
	}
	for _, it := range inMemoryOrder[epmodel.Endpoints](sp, kubeStateData[epmodel.Keyword], epmodel.KeyPrefix(), "endpoints") {
		eps := it.obj
		s := sp.serviceAt(it.key, renderer.ServiceID{Name: eps.GetName(), Namespace: eps.GetNamespace()})
		seen(s)
		s.endpointsSeen = gen
		if s.endpoints != eps || s.classGen != sp.nodeGen {
			s.pendingEndpoints, s.pending = eps, s.pending|pendingEndpoints
		}
	}
	clear(sp.sliceOwner)
	for _, it := range inMemoryOrder[esmodel.EndpointSlice](sp, kubeStateData[esmodel.Keyword], esmodel.KeyPrefix(), "endpointslice") {
		es := it.obj
		if es.GetServiceName() == "" {
			continue // a slice of no service
		}
		svcKey := serviceKeyOf(es.GetServiceName(), es.GetNamespace())
		sp.sliceOwner[it.key] = svcKey
		s := sp.serviceAt(svcKey, renderer.ServiceID{Name: es.GetServiceName(), Namespace: es.GetNamespace()})
		seen(s)
		s.slicesSeen = gen
		s.resyncSlice(it.key, es, gen)
	}
	for _, it := range inMemoryOrder[svcmodel.Service](sp, kubeStateData[svcmodel.Keyword], svcmodel.KeyPrefix(), "service") {
		meta := it.obj
		s := sp.serviceAt(it.key, renderer.ServiceID{Name: meta.GetName(), Namespace: meta.GetNamespace()})
		seen(s)
		s.metaSeen = gen
		if s.meta != meta || s.metaGen != sp.nodeGen {
			s.pendingMeta, s.pending = meta, s.pending|pendingMeta
		}
	}
	var changedAddrs []netip.Addr       // cluster IPs and node addresses that came or went
	if len(order) != len(sp.services) { // some services are gone from Kubernetes
		for key, s := range sp.services {
			if s.metaSeen != gen && s.endpointsSeen != gen && s.slicesSeen != gen {
				s.setMetadata(nil)
				s.setEndpoints(nil)
				for len(s.slices) > 0 {
					s.setSlice(s.slices[0].key, nil, &sp.slabs)
				}
				delete(sp.services, key)
				delete(sp.outsideCIDR, s)
				changedAddrs = sp.indexVIPs(s, nil, changedAddrs)
				sp.indexHost(s)
			}
		}
	}
	// The endpoint checks read the cluster IPs of every Service and the node addresses:
	// both are complete before any endpoint is parsed, and the services with an
	// endpoint at an address that changed are parsed again.
	var vipBuf [2]netip.Addr
	for _, s := range order {
		switch {
		case s.pending&pendingMeta != 0:
			changedAddrs = sp.indexVIPs(s, sp.vipsOf(s.pendingMeta, vipBuf[:0]), changedAddrs)
		case s.metaSeen != gen:
			changedAddrs = sp.indexVIPs(s, nil, changedAddrs)
		}
	}
	changedAddrs = append(changedAddrs, sp.resyncNodeAddrs()...)
	for _, s := range sp.servicesAt(changedAddrs) {
		s.recheck()
	}
	shares.Run(len(order), parallelResyncMin, func(_, lo, hi int) {
		sl := renderSlabs{on: true} // each share cuts from blocks of its own
		share := order[lo:hi]
		for i, s := range share {
			if i+1 < len(share) {
				sl.touch(share[i+1])
			}
			s.resyncHalves(gen, &sl)
		}
	})

	sp.nodeIPs = sp.clusterNodeIPs()
	ev := &renderer.FlatResyncEventData{NodeIPs: sp.nodeIPs, Services: make([]*renderer.FlatService, 0, len(order))}
	for _, s := range order {
		sp.indexOutsideCIDR(s)
		sp.indexHost(s)
		fs := s.flat
		if fs == nil {
			continue
		}
		ev.Services = append(ev.Services, fs)
		if fs.HasNodePort() {
			sp.nodePortServices[s.id] = s
		}
		for _, pod := range s.localBackends {
			sp.localEndpoint(pod).svcCount++
		}
	}

	frontends, backends := renderer.NewInterfaces(), renderer.NewInterfaces()
	if bvi := sp.IPNet.GetVxlanBVIIfName(); bvi != "" {
		frontends.Add(bvi)
		backends.Add(bvi)
	}
	if mainIf := sp.ContivConf.GetMainInterfaceName(); mainIf != "" {
		frontends.Add(mainIf)
		if sp.ContivConf.GetRoutingConfig().UseNoOverlay {
			backends.Add(mainIf)
		}
	}
	for _, other := range sp.ContivConf.GetOtherVPPInterfaces() {
		if other.InterfaceName != "" {
			frontends.Add(other.InterfaceName)
		}
	}
	if hostIf := sp.IPNet.GetHostInterconnectIfName(); hostIf != "" {
		frontends.Add(hostIf)
		backends.Add(hostIf)
	}
	for pod := range sp.PodManager.GetLocalPods() {
		sp.localEndpoint(pod)
	}
	for _, ep := range sp.localEps {
		if ep.ifName == "" {
			continue
		}
		frontends.Add(ep.ifName)
		if ep.svcCount > 0 {
			backends.Add(ep.ifName)
		}
	}
	sp.frontendIfs, sp.backendIfs = frontends, backends
	ev.FrontendIfs, ev.BackendIfs = frontends, backends

	sp.Log.WithFields(logrus.Fields{
		"services": len(sp.services), "rendered": len(ev.Services), "nodePortServices": len(sp.nodePortServices),
		"nodeIPs": ev.NodeIPs.String(), "frontends": frontends.String(), "backends": backends.String(),
	}).Info("services resynced")

	var errs []error
	for _, r := range sp.renderers {
		if err := r.ResyncFlat(txn, ev); err != nil {
			errs = append(errs, fmt.Errorf("service renderer resync: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Bits of Service.pending: the halves a resync parses anew.
const (
	pendingMeta = 1 << iota
	pendingEndpoints
)

// resyncHalves parses the halves of a service that the resync of generation gen
// changed (those it did not see are removed) and refreshes the service if any did,
// cutting what it builds from the blocks sl. It touches the service and its objects
// only (and the gauges, whose updates are atomic), so that services can be resynced in
// parallel.
func (s *Service) resyncHalves(gen uint64, sl *renderSlabs) {
	if s.pending&pendingMeta != 0 {
		s.parseMetadata(s.pendingMeta, sl)
		s.dirty = true
	} else if s.metaSeen != gen && s.meta != nil { // the definition is gone
		s.parseMetadata(nil, sl)
		s.dirty = true
	}
	if s.pending&pendingEndpoints != 0 {
		s.parseEndpoints(s.pendingEndpoints, sl)
		s.dirty = true
	} else if s.endpointsSeen != gen && s.endpoints != nil {
		s.parseEndpoints(nil, sl)
		s.dirty = true
	}
	if s.resyncSlices(gen, sl) {
		s.dirty = true
	}
	if s.topoGen != s.sp.topoGen && s.usesHints() {
		s.dirty = true
	}
	s.pending, s.pendingMeta, s.pendingEndpoints = 0, nil, nil
	if s.dirty {
		s.refresh(sl)
		s.dirty = false
	}
}

// parallelResyncMin is the smallest share of a resync's services that a goroutine of
// its own parses (shares.Run): smaller resyncs run on the calling goroutine alone.
const parallelResyncMin = 1000

// keyedObject is a Kubernetes object of a resync with its key.
type keyedObject[T any] struct {
	obj *T
	key string // the object's serviceKey once inMemoryOrder returns it
	at  uintptr
}

// inMemoryOrder returns the objects of one resource of the Kubernetes state that are
// of type T, have a name and lie under a well-formed key, with their serviceKeys,
// sorted by the objects' addresses; it logs and skips the others. The map is iterated
// without touching the objects or the keys' text (both are read in address order).
// The order is only the one in which memory is read best: the result of a resync does
// not depend on it (Go's heap objects do not move, so the addresses are stable keys).
func inMemoryOrder[T any, PT interface {
	*T
	GetName() string
}](sp *ServiceProcessor, objs map[string]proto.Message, prefix, what string) []keyedObject[T] {
	list := make([]keyedObject[T], 0, len(objs))
	invalid := func(key string, v any) {
		sp.Log.WithFields(logrus.Fields{"key": key, "type": fmt.Sprintf("%T", v)}).Warnf("invalid %s value skipped", what)
	}
	for key, v := range objs {
		obj, ok := v.(PT)
		if !ok || obj == nil {
			invalid(key, v)
			continue
		}
		list = append(list, keyedObject[T]{obj: obj, key: key, at: uintptr(unsafe.Pointer(obj))})
	}
	slices.SortFunc(list, func(a, b keyedObject[T]) int { return cmp.Compare(a.at, b.at) })
	valid := list[:0]
	for _, it := range list {
		k, ok := serviceKey(it.key, prefix)
		if !ok || PT(it.obj).GetName() == "" {
			invalid(it.key, PT(it.obj))
			continue
		}
		it.key = k
		valid = append(valid, it)
	}
	return valid
}

// serviceKey returns the part of a Service or Endpoints key that identifies the
// service: "<name>/namespace/<namespace>", the same for both objects (their keys
// differ in the prefix only). ok is false for a key of another form. For an
// EndpointSlice key it is the slice's sliceKey.
func serviceKey(key, prefix string) (k string, ok bool) {
	k, ok = strings.CutPrefix(key, prefix)
	if !ok || strings.Count(k, "/") != 2 {
		return "", false
	}
	return k, true
}

// serviceKeyOf returns the serviceKey of a service.
func serviceKeyOf(name, namespace string) string { return name + "/namespace/" + namespace }

// Update is UpdateInto without a transaction (the seed API's form): the renderers are
// given a renderer.DiscardTxn. It serves renderers that get their transaction from
// their own dependencies, those registered with RegisterRenderer.
func (sp *ServiceProcessor) Update(event controller.Event) error {
	return sp.UpdateInto(event, renderer.DiscardTxn{})
}

// UpdateInto handles one event: a change of a Service or Endpoints, AddPod, DeletePod
// or NodeUpdate (recognised by its name), the renderers staging what changes into txn.
// Other events are ignored.
func (sp *ServiceProcessor) UpdateInto(event controller.Event, txn renderer.UpdateTxn) error {
	switch ev := event.(type) {
	case *controller.KubeStateChange:
		return sp.processKubeStateChange(txn, ev)
	case *podmanager.AddPod:
		return sp.processNewPod(txn, ev.Pod.Namespace, ev.Pod.Name)
	case *podmanager.DeletePod:
		return sp.processDeletingPod(txn, ev.Pod.Namespace, ev.Pod.Name)
	}
	if event.GetName() == nodesync.NodeUpdateName {
		return sp.processNodeUpdate(txn, event)
	}
	return nil
}

// Revert undoes the processing of a failed AddPod. What the renderers stage meanwhile
// is discarded (renderer.DiscardTxn): the event's transaction is not committed.
func (sp *ServiceProcessor) Revert(event controller.Event) error {
	if ev, ok := event.(*podmanager.AddPod); ok {
		return sp.processDeletingPod(renderer.DiscardTxn{}, ev.Pod.Namespace, ev.Pod.Name)
	}
	return nil
}

// processKubeStateChange applies a change of one Service or Endpoints object. Its cost
// is that of re-rendering the one service concerned.
func (sp *ServiceProcessor) processKubeStateChange(txn renderer.UpdateTxn, ev *controller.KubeStateChange) error {
	switch ev.Resource {
	case svcmodel.Keyword:
		name, ns, err := svcmodel.ParseServiceFromKey(ev.Key)
		if err != nil {
			return fmt.Errorf("service change: %w", err)
		}
		var meta *svcmodel.Service
		if ev.NewValue != nil {
			var ok bool
			if meta, ok = ev.NewValue.(*svcmodel.Service); !ok {
				return fmt.Errorf("service %s/%s: unexpected value type %T", ns, name, ev.NewValue)
			}
		}
		sp.refreshNodeContext()
		return sp.updateService(txn, renderer.ServiceID{Name: name, Namespace: ns}, func(s *Service) { s.setMetadata(meta) })
	case epmodel.Keyword:
		name, ns, err := epmodel.ParseEndpointsFromKey(ev.Key)
		if err != nil {
			return fmt.Errorf("endpoints change: %w", err)
		}
		var eps *epmodel.Endpoints
		if ev.NewValue != nil {
			var ok bool
			if eps, ok = ev.NewValue.(*epmodel.Endpoints); !ok {
				return fmt.Errorf("service %s/%s: unexpected endpoints value type %T", ns, name, ev.NewValue)
			}
		}
		sp.refreshNodeContext()
		return sp.updateService(txn, renderer.ServiceID{Name: name, Namespace: ns}, func(s *Service) { s.setEndpoints(eps) })
	case esmodel.Keyword:
		name, ns, err := esmodel.ParseEndpointSliceFromKey(ev.Key)
		if err != nil {
			return fmt.Errorf("endpointslice change: %w", err)
		}
		var es *esmodel.EndpointSlice
		if ev.NewValue != nil {
			var ok bool
			if es, ok = ev.NewValue.(*esmodel.EndpointSlice); !ok {
				return fmt.Errorf("endpointslice %s/%s: unexpected value type %T", ns, name, ev.NewValue)
			}
		}
		sp.refreshNodeContext()
		return sp.updateSlice(txn, sliceKey(name, ns), es)
	case cidrmodel.Keyword:
		name, err := cidrmodel.ParseServiceCIDRFromKey(ev.Key)
		if err != nil {
			return fmt.Errorf("servicecidr change: %w", err)
		}
		var obj *cidrmodel.ServiceCIDR
		if ev.NewValue != nil {
			var ok bool
			if obj, ok = ev.NewValue.(*cidrmodel.ServiceCIDR); !ok {
				return fmt.Errorf("servicecidr %s: unexpected value type %T", name, ev.NewValue)
			}
		}
		return sp.updateServiceCIDR(txn, name, obj)
	case nodemodel.Keyword:
		name, err := nodemodel.ParseNodeFromKey(ev.Key)
		if err != nil || name != sp.nodeName || sp.nodeName == "" {
			return nil // another node's labels do not matter here
		}
		var zone string
		if n, ok := ev.NewValue.(*nodemodel.Node); ok {
			zone = n.GetZone()
		}
		return sp.updateZone(txn, zone)
	}
	return nil
}

// updateSlice applies a change of one EndpointSlice: the slice is parsed (its cost is
// that of the one slice) and its service re-rendered; a slice that moved to another
// service (its kubernetes.io/service-name label changed) leaves the old one first.
func (sp *ServiceProcessor) updateSlice(txn renderer.UpdateTxn, key string, es *esmodel.EndpointSlice) error {
	var errs []error
	oldOwner, had := sp.sliceOwner[key]
	newOwner := ""
	if es != nil && es.GetServiceName() != "" {
		newOwner = serviceKeyOf(es.GetServiceName(), es.GetNamespace())
	}
	if had && oldOwner != newOwner {
		delete(sp.sliceOwner, key)
		if s := sp.services[oldOwner]; s != nil {
			errs = append(errs, sp.updateService(txn, s.id, func(s *Service) { s.setSlice(key, nil, &sp.slabs) }))
		}
	}
	if newOwner != "" {
		sp.sliceOwner[key] = newOwner
		id := renderer.ServiceID{Name: es.GetServiceName(), Namespace: es.GetNamespace()}
		errs = append(errs, sp.updateService(txn, id, func(s *Service) { s.setSlice(key, es, &sp.slabs) }))
	}
	return errors.Join(errs...)
}

// thisNodeName returns this node's name as nodesync knows it ("" before it has an ID).
func (sp *ServiceProcessor) thisNodeName() string {
	id := sp.NodeSync.GetNodeID()
	if id == 0 {
		return ""
	}
	for _, n := range sp.NodeSync.GetAllNodes() {
		if n.ID == id {
			return n.Name
		}
	}
	return ""
}

// setTopology sets this node's name and reads its zone from the Kubernetes state,
// counting a change of either.
func (sp *ServiceProcessor) setTopology(nodeName string, kube controller.KubeStateData) {
	zone := ""
	if nodeName != "" {
		if n, ok := kube[nodemodel.Keyword][nodemodel.Key(nodeName)].(*nodemodel.Node); ok {
			zone = n.GetZone()
		}
	}
	if nodeName != sp.nodeName || zone != sp.zone {
		sp.nodeName, sp.zone = nodeName, zone
		sp.topoGen++
	}
}

// updateZone applies a change of this node's zone: the services whose endpoints carry
// topology hints are rendered again (the others do not depend on it). A zone changes
// rarely; finding those services is a scan of the services.
func (sp *ServiceProcessor) updateZone(txn renderer.UpdateTxn, zone string) error {
	if zone == sp.zone {
		return nil
	}
	sp.zone = zone
	sp.topoGen++
	sp.refreshNodeContext()
	var errs []error
	for _, s := range sp.services {
		if s.usesHints() {
			errs = append(errs, sp.updateService(txn, s.id, func(*Service) {}))
		}
	}
	return errors.Join(errs...)
}

// serviceAt returns the service kept under key, a new empty one with the given ID
// when there is none.
func (sp *ServiceProcessor) serviceAt(key string, id renderer.ServiceID) *Service {
	s := sp.services[key]
	if s == nil {
		s = &Service{sp: sp, id: id}
		sp.services[key] = s
	}
	return s
}

// updateService changes one half of a service, refreshes it and renders the
// difference into txn. A service with neither half left is forgotten.
func (sp *ServiceProcessor) updateService(txn renderer.UpdateTxn, id renderer.ServiceID, change func(*Service)) error {
	key := serviceKeyOf(id.Name, id.Namespace)
	s := sp.serviceAt(key, id)
	old := rendering{flat: s.flat, contiv: s.contivSvc, localBackends: s.localBackends}
	change(s)
	// A cluster IP that came or went changes the checks of the endpoints at it: of this
	// service and of the others (found through the index, rendered after this one).
	var vipBuf [2]netip.Addr
	others := sp.servicesAt(sp.indexVIPs(s, sp.vipsOf(s.meta, vipBuf[:0]), nil))
	if slices.Contains(others, s) {
		s.recheck()
	}
	s.Refresh()
	sp.indexOutsideCIDR(s)
	sp.indexHost(s)
	if s.meta == nil && s.endpoints == nil && len(s.slices) == 0 {
		delete(sp.services, key)
	}
	errs := []error{sp.renderService(txn, s, old)}
	errs = append(errs, sp.recheckServices(txn, others, s)...)
	return errors.Join(errs...)
}

// recheckServices checks the endpoints of the services again and renders what changed
// (skip is the service being updated, already checked).
func (sp *ServiceProcessor) recheckServices(txn renderer.UpdateTxn, list []*Service, skip *Service) []error {
	var errs []error
	for _, o := range list {
		if o != skip {
			errs = append(errs, sp.updateService(txn, o.id, (*Service).recheck))
		}
	}
	return errs
}

// rendering is what a service was rendered as before a change.
type rendering struct {
	flat          *renderer.FlatService
	contiv        *renderer.ContivService // its ContivService form, if GetContivService built it
	localBackends []podmodel.ID
}

// renderService passes the change of one service to the renderers (add, update or
// delete; nothing when the rendering did not change), keeps the node-port index and
// updates the backend interfaces for pods that started or stopped backing a service.
func (sp *ServiceProcessor) renderService(txn renderer.UpdateTxn, s *Service, old rendering) error {
	newSvc := s.flat
	var errs []error
	switch {
	case newSvc != nil && old.flat == nil:
		sp.Log.WithField("service", s.id.String()).Debug("service added")
		for _, r := range sp.renderers {
			if err := r.AddFlatService(txn, newSvc); err != nil {
				errs = append(errs, fmt.Errorf("service %s: add: %w", s.id, err))
			}
		}
	case newSvc != nil && old.flat != nil:
		if old.flat.Equal(newSvc) {
			sp.Log.WithField("service", s.id.String()).Debug("service change does not affect its rendering")
			s.flat, s.contivSvc = old.flat, old.contiv // renderers keep seeing the same value
			break
		}
		sp.Log.WithField("service", s.id.String()).Debug("service updated")
		for _, r := range sp.renderers {
			if err := r.UpdateFlatService(txn, old.flat, newSvc); err != nil {
				errs = append(errs, fmt.Errorf("service %s: update: %w", s.id, err))
			}
		}
	case newSvc == nil && old.flat != nil:
		sp.Log.WithField("service", s.id.String()).Debug("service removed")
		for _, r := range sp.renderers {
			if err := r.DeleteFlatService(txn, old.flat); err != nil {
				errs = append(errs, fmt.Errorf("service %s: delete: %w", s.id, err))
			}
		}
	}
	if newSvc != nil && newSvc.HasNodePort() {
		sp.nodePortServices[s.id] = s
	} else {
		delete(sp.nodePortServices, s.id)
	}
	if err := sp.updateLocalBackends(txn, old.localBackends, s.localBackends); err != nil {
		errs = append(errs, fmt.Errorf("service %s: %w", s.id, err))
	}
	return errors.Join(errs...)
}

// updateLocalBackends counts the services of the pods that joined or left the local
// backends of one service; an interface becomes a backend interface when its pod's
// count goes from 0 to 1 and stops being one when it drops back to 0.
func (sp *ServiceProcessor) updateLocalBackends(txn renderer.UpdateTxn, oldPods, newPods []podmodel.ID) error {
	if len(oldPods) == 0 && len(newPods) == 0 {
		return nil
	}
	var newIfs renderer.Interfaces // copy of backendIfs, made on the first change
	change := func(ifName string, add bool) {
		if ifName == "" || sp.backendIfs.Has(ifName) == add {
			return
		}
		if newIfs == nil {
			newIfs = sp.backendIfs.Copy()
		}
		if add {
			newIfs.Add(ifName)
		} else {
			newIfs.Del(ifName)
		}
	}
	for _, pod := range newPods {
		if containsPod(oldPods, pod) {
			continue
		}
		ep := sp.localEndpoint(pod)
		ep.svcCount++
		if ep.svcCount == 1 {
			change(ep.ifName, true)
		}
	}
	for _, pod := range oldPods {
		if containsPod(newPods, pod) {
			continue
		}
		ep := sp.localEps[pod]
		if ep == nil || ep.svcCount == 0 {
			continue
		}
		ep.svcCount--
		if ep.svcCount == 0 {
			change(ep.ifName, false)
			if ep.ifName == "" {
				delete(sp.localEps, pod)
			}
		}
	}
	if newIfs == nil {
		return nil
	}
	return sp.setBackendIfs(txn, newIfs)
}

// localEndpoint returns the pod's entry, creating it (with the pod's VPP interface,
// if ipnet wired it) when missing.
func (sp *ServiceProcessor) localEndpoint(pod podmodel.ID) *LocalEndpoint {
	ep := sp.localEps[pod]
	if ep == nil {
		ep = &LocalEndpoint{}
		if vppIf, _, _, exists := sp.IPNet.GetPodIfNames(pod.Namespace, pod.Name); exists {
			ep.ifName = vppIf
		}
		sp.localEps[pod] = ep
	}
	return ep
}

// setFrontendIfs hands the new frontend set to the renderers and keeps it.
func (sp *ServiceProcessor) setFrontendIfs(txn renderer.UpdateTxn, newIfs renderer.Interfaces) error {
	old := sp.frontendIfs
	sp.frontendIfs = newIfs
	var errs []error
	for _, r := range sp.renderers {
		if err := r.UpdateFrontendIfs(txn, old, newIfs); err != nil {
			errs = append(errs, fmt.Errorf("update frontend interfaces: %w", err))
		}
	}
	return errors.Join(errs...)
}

// setBackendIfs hands the new backend set to the renderers and keeps it.
func (sp *ServiceProcessor) setBackendIfs(txn renderer.UpdateTxn, newIfs renderer.Interfaces) error {
	old := sp.backendIfs
	sp.backendIfs = newIfs
	var errs []error
	for _, r := range sp.renderers {
		if err := r.UpdateBackendIfs(txn, old, newIfs); err != nil {
			errs = append(errs, fmt.Errorf("update backend interfaces: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ProcessNewPod is the AddPod part of Update (the seed API's form: the renderers are
// given a renderer.DiscardTxn, see Update).
func (sp *ServiceProcessor) ProcessNewPod(podNamespace string, podName string) error {
	return sp.processNewPod(renderer.DiscardTxn{}, podNamespace, podName)
}

// processNewPod makes a newly wired pod's VPP interface a frontend, and a backend too
// when the pod already backs a service (its endpoints arrived before the pod was
// wired). Pods without a VPP interface (host network) are ignored.
func (sp *ServiceProcessor) processNewPod(txn renderer.UpdateTxn, podNamespace string, podName string) error {
	pod := podmodel.ID{Name: podName, Namespace: podNamespace}
	vppIf, _, _, exists := sp.IPNet.GetPodIfNames(podNamespace, podName)
	if !exists || vppIf == "" {
		sp.Log.WithField("pod", pod.String()).Debug("pod has no VPP interface: not a service frontend")
		return nil
	}
	ep := sp.localEps[pod]
	if ep == nil {
		ep = &LocalEndpoint{}
		sp.localEps[pod] = ep
	}
	ep.ifName = vppIf
	var errs []error
	if !sp.frontendIfs.Has(vppIf) {
		newIfs := sp.frontendIfs.Copy()
		newIfs.Add(vppIf)
		errs = append(errs, sp.setFrontendIfs(txn, newIfs))
	}
	if ep.svcCount > 0 && !sp.backendIfs.Has(vppIf) {
		newIfs := sp.backendIfs.Copy()
		newIfs.Add(vppIf)
		errs = append(errs, sp.setBackendIfs(txn, newIfs))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pod %s: %w", pod, err)
	}
	return nil
}

// ProcessDeletingPod is the DeletePod part of Update (the seed API's form: the
// renderers are given a renderer.DiscardTxn, see Update).
func (sp *ServiceProcessor) ProcessDeletingPod(podNamespace string, podName string) error {
	return sp.processDeletingPod(renderer.DiscardTxn{}, podNamespace, podName)
}

// processDeletingPod removes the pod's interface from the backends and frontends. The
// pod stays counted as a backend of its services until their endpoints change.
func (sp *ServiceProcessor) processDeletingPod(txn renderer.UpdateTxn, podNamespace string, podName string) error {
	pod := podmodel.ID{Name: podName, Namespace: podNamespace}
	ep := sp.localEps[pod]
	ifName := ""
	if ep != nil {
		ifName = ep.ifName
	}
	if ifName == "" {
		if vppIf, _, _, exists := sp.IPNet.GetPodIfNames(podNamespace, podName); exists {
			ifName = vppIf
		}
	}
	var errs []error
	if ifName != "" && sp.backendIfs.Has(ifName) {
		newIfs := sp.backendIfs.Copy()
		newIfs.Del(ifName)
		errs = append(errs, sp.setBackendIfs(txn, newIfs))
	}
	if ifName != "" && sp.frontendIfs.Has(ifName) {
		newIfs := sp.frontendIfs.Copy()
		newIfs.Del(ifName)
		errs = append(errs, sp.setFrontendIfs(txn, newIfs))
	}
	if ep != nil {
		ep.ifName = ""
		if ep.svcCount == 0 {
			delete(sp.localEps, pod)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pod %s: %w", pod, err)
	}
	return nil
}

// processNodeUpdate checks again the endpoints at the addresses of the node that
// changed (the services found through the address index) and re-renders the
// node-port services when the set of node IPs changed. It touches those services
// only (both kept in indexes), never the others.
func (sp *ServiceProcessor) processNodeUpdate(txn renderer.UpdateTxn, ev controller.Event) error {
	// The endpoints at an address of the node that changed are checked again.
	var changed []netip.Addr
	if nu, ok := ev.(*nodesync.NodeUpdate); ok && nu.NodeName != "" {
		changed = sp.nodeAddrs.setNode(nu.NodeName, nu.NewState, changed)
	} else {
		changed = sp.resyncNodeAddrs()
	}
	var errs []error
	if list := sp.servicesAt(changed); len(list) > 0 {
		sp.refreshNodeContext()
		errs = sp.recheckServices(txn, list, nil)
	}
	errs = append(errs, sp.updateNodePorts(txn))
	return errors.Join(errs...)
}

// updateNodePorts is the part of processNodeUpdate that concerns the node ports.
func (sp *ServiceProcessor) updateNodePorts(txn renderer.UpdateTxn) error {
	if name := sp.thisNodeName(); name != sp.nodeName {
		// This node got its name (its ID): node hints are read against it from now
		// on (the services that have some are rendered again by the next resync,
		// which also reads the node's zone).
		sp.nodeName = name
		sp.topoGen++
	}
	nodeIPs := sp.clusterNodeIPs()
	if nodeIPs.Equal(sp.nodeIPs) {
		sp.Log.Debug("node IPs unchanged: node ports stay as they are")
		return nil
	}
	sp.nodeIPs = nodeIPs
	npServices := make([]*Service, 0, len(sp.nodePortServices))
	for _, s := range sp.nodePortServices {
		npServices = append(npServices, s)
	}
	sort.Slice(npServices, func(i, j int) bool {
		a, b := npServices[i].id, npServices[j].id
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	sp.Log.WithFields(logrus.Fields{"nodeIPs": nodeIPs.String(), "nodePortServices": len(npServices)}).Info("node IPs changed")
	flat := make([]*renderer.FlatService, len(npServices))
	for i, s := range npServices {
		flat[i] = s.flat
	}
	var errs []error
	for _, r := range sp.renderers {
		if err := r.UpdateFlatNodePortServices(txn, nodeIPs, flat); err != nil {
			errs = append(errs, fmt.Errorf("update node-port services: %w", err))
		}
	}
	return errors.Join(errs...)
}

// clusterNodeIPs returns the IPs node ports are exposed on: the VPP and management IPs
// of every node (of this node only with NodePortsOnThisNodeOnly), nodes ordered by ID
// so that the order (and the rendered mappings) is the same on every run.
func (sp *ServiceProcessor) clusterNodeIPs() *renderer.IPAddresses {
	all := sp.NodeSync.GetAllNodes()
	nodes := make([]*nodesync.Node, 0, len(all))
	thisNode := sp.NodeSync.GetNodeID()
	for _, n := range all {
		if sp.NodePortsOnThisNodeOnly && n.ID != thisNode {
			continue
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].ID != nodes[j].ID {
			return nodes[i].ID < nodes[j].ID
		}
		return nodes[i].Name < nodes[j].Name
	})
	ips := renderer.NewIPAddresses()
	for _, n := range nodes {
		for _, a := range n.VppIPAddresses {
			if a != nil {
				ips.Add(normalizeIP(a.IP))
			}
		}
		for _, ip := range n.MgmtIPAddresses {
			ips.Add(normalizeIP(ip))
		}
	}
	return ips
}

func normalizeIP(ip net.IP) net.IP {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4
	}
	return ip
}
