package ksr

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// Reflectors returns the names of the reflectors (the model keywords), in the order
// they are resynced: the label values of the per-reflector metrics.
func Reflectors() []string {
	return []string{namespace.Keyword, node.Keyword, pod.Keyword, policy.Keyword, service.Keyword,
		servicecidr.Keyword, endpointslice.Keyword, endpoints.Keyword}
}

// sliceServiceIndex indexes EndpointSlices by "<namespace>/<service name>".
const sliceServiceIndex = "service"

// item is one object to reflect: the reflector and the cache key of the object
// ("namespace/name", or "name" for cluster-scoped kinds). For the legacy endpoints,
// name is the service name.
type item struct {
	reflector string
	id        string
}

// reflector knows how to get the model values of one kind out of the informer caches.
type reflector struct {
	name   string
	prefix string
	// ids lists the objects in the caches.
	ids func() []string
	// value converts the cached object; (nil, nil) when the caches do not hold it (or
	// hold it but it is not to be written).
	value func(id string) (proto.Message, error)
	// key builds the etcd key (relative to the KSR prefix) of an object.
	key func(id string) string
}

// termOptions are what one leadership term reflects.
type termOptions struct {
	// convService converts a Service; cidrs are the ranges of the ServiceCIDR objects
	// when cidrsLimitServices, else nil (the plugin checks its limits on top of
	// convert.Service).
	convService func(s *corev1.Service, cidrs []*net.IPNet) (*service.Service, error)
	// convPod converts a Pod (the plugin bounds its annotations on top of convert.Pod);
	// nil means convert.Pod.
	convPod func(p *corev1.Pod) (*pod.Pod, error)
	// legacyEndpoints: write the legacy Endpoints value of every service with slices;
	// false sweeps the legacy prefix.
	legacyEndpoints bool
	// serviceCIDRs: the API server serves networking.k8s.io/v1 ServiceCIDRs; false
	// sweeps their prefix.
	serviceCIDRs bool
	// cidrsLimitServices: a ServiceCIDR change must requeue every service (their
	// cluster IPs are checked against the ranges).
	cidrsLimitServices bool
	// skipped receives the number of EndpointSlices without a service (not written).
	skipped func(n int)
}

// informerSet is the informers of one leadership term and the reflectors reading them.
type informerSet struct {
	factory    informers.SharedInformerFactory
	informers  []cache.SharedIndexInformer
	reflectors []*reflector // in the order of Reflectors()
	byName     map[string]*reflector
	queue      *queue
	opts       termOptions
	svcInf     cache.SharedIndexInformer
	sliceInf   cache.SharedIndexInformer
	cidrInf    cache.SharedIndexInformer // nil when not served

	mu      sync.Mutex
	unowned map[string]bool // EndpointSlices without the service-name label
}

// newInformerSet creates the informers (not started) and registers the event handlers
// that queue items.
func newInformerSet(client kubernetes.Interface, opts termOptions) (*informerSet, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	s := &informerSet{factory: factory, byName: map[string]*reflector{}, queue: newQueue(), opts: opts, unowned: map[string]bool{}}

	nsInf := factory.Core().V1().Namespaces().Informer()
	nodeInf := factory.Core().V1().Nodes().Informer()
	podInf := factory.Core().V1().Pods().Informer()
	polInf := factory.Networking().V1().NetworkPolicies().Informer()
	s.svcInf = factory.Core().V1().Services().Informer()
	s.sliceInf = factory.Discovery().V1().EndpointSlices().Informer()
	if err := s.sliceInf.AddIndexers(cache.Indexers{sliceServiceIndex: sliceServiceKeys}); err != nil {
		return nil, fmt.Errorf("endpoint slice index: %w", err)
	}
	s.informers = []cache.SharedIndexInformer{nsInf, nodeInf, podInf, polInf, s.svcInf, s.sliceInf}
	cidrRefl := absentReflector(servicecidr.Keyword, servicecidr.KeyPrefix())
	if opts.serviceCIDRs {
		s.cidrInf = factory.Networking().V1().ServiceCIDRs().Informer()
		s.informers = append(s.informers, s.cidrInf)
		cidrRefl = simpleReflector(servicecidr.Keyword, servicecidr.KeyPrefix(), s.cidrInf, servicecidr.Key, convert.ServiceCIDR)
	}
	legacyRefl := absentReflector(endpoints.Keyword, endpoints.KeyPrefix())
	if opts.legacyEndpoints {
		legacyRefl = s.legacyEndpointsReflector()
	}

	nsKey := func(build func(name, ns string) string) func(string) string {
		return func(id string) string {
			ns, name, _ := cache.SplitMetaNamespaceKey(id)
			return build(name, ns)
		}
	}
	convPod := opts.convPod
	if convPod == nil {
		convPod = convert.Pod
	}
	convService := func(svc *corev1.Service) (*service.Service, error) {
		var cidrs []*net.IPNet
		if opts.cidrsLimitServices {
			cidrs = s.serviceCIDRs()
		}
		return opts.convService(svc, cidrs)
	}
	s.reflectors = []*reflector{
		simpleReflector(namespace.Keyword, namespace.KeyPrefix(), nsInf, namespace.Key, convert.Namespace),
		simpleReflector(node.Keyword, node.KeyPrefix(), nodeInf, node.Key, convert.Node),
		simpleReflector(pod.Keyword, pod.KeyPrefix(), podInf, nsKey(pod.Key), convPod),
		simpleReflector(policy.Keyword, policy.KeyPrefix(), polInf, nsKey(policy.Key), convert.Policy),
		simpleReflector(service.Keyword, service.KeyPrefix(), s.svcInf, nsKey(service.Key), convService),
		cidrRefl,
		simpleReflector(endpointslice.Keyword, endpointslice.KeyPrefix(), s.sliceInf, nsKey(endpointslice.Key), s.convertSlice),
		legacyRefl,
	}
	for _, r := range s.reflectors {
		s.byName[r.name] = r
	}

	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{nsInf, s.direct(namespace.Keyword)}, {nodeInf, s.direct(node.Keyword)}, {podInf, s.direct(pod.Keyword)},
		{polInf, s.direct(policy.Keyword)},
		{s.svcInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.serviceChanged(nil, obj) },
			UpdateFunc: s.serviceChanged,
			DeleteFunc: func(obj any) { s.serviceChanged(nil, obj) },
		}},
		{s.sliceInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.sliceChanged(nil, obj, false) },
			UpdateFunc: func(old, obj any) { s.sliceChanged(old, obj, false) },
			DeleteFunc: func(obj any) { s.sliceChanged(nil, obj, true) },
		}},
	}
	if s.cidrInf != nil {
		handlers = append(handlers, struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandler
		}{s.cidrInf, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.serviceCIDRChanged(obj) },
			UpdateFunc: func(_, obj any) { s.serviceCIDRChanged(obj) },
			DeleteFunc: func(obj any) { s.serviceCIDRChanged(obj) },
		}})
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("register event handler: %w", err)
		}
	}
	return s, nil
}

// direct is the event handler of a kind whose objects map one to one to values.
func (s *informerSet) direct(name string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.queueObject(name, obj) },
		UpdateFunc: func(_, obj any) { s.queueObject(name, obj) },
		DeleteFunc: func(obj any) { s.queueObject(name, obj) },
	}
}

// start runs the informers until ctx is done and waits for their caches to fill;
// false when ctx ended first.
func (s *informerSet) start(ctx context.Context) bool {
	s.factory.Start(ctx.Done())
	synced := make([]cache.InformerSynced, len(s.informers))
	for i, inf := range s.informers {
		synced[i] = inf.HasSynced
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

// shutdown waits for the informers to stop (their context must be done).
func (s *informerSet) shutdown() { s.factory.Shutdown() }

func (s *informerSet) queueObject(reflector string, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.queue.add(item{reflector: reflector, id: key})
}

// serviceChanged queues a service, and its legacy Endpoints value when the address
// type that value is made of may have changed (the service appeared, went or changed
// its primary IP family): O(1) but for that rare case.
func (s *informerSet) serviceChanged(old, obj any) {
	s.queueObject(service.Keyword, obj)
	if !s.opts.legacyEndpoints {
		return
	}
	if o, ok := old.(*corev1.Service); ok {
		if n, ok := obj.(*corev1.Service); ok && convert.PrimaryAddressType(o) == convert.PrimaryAddressType(n) {
			return
		}
	}
	s.queueObject(endpoints.Keyword, obj)
}

// sliceChanged queues a slice, and the legacy Endpoints values of the services it
// belonged to before and after the change. It keeps the count of slices that belong to
// no service.
func (s *informerSet) sliceChanged(old, obj any, deleted bool) {
	s.queueObject(endpointslice.Keyword, obj)
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if sl, ok := obj.(*discoveryv1.EndpointSlice); ok {
		id := sl.Namespace + "/" + sl.Name
		s.mu.Lock()
		if deleted || convert.SliceServiceName(sl) != "" {
			delete(s.unowned, id)
		} else {
			s.unowned[id] = true
		}
		n := len(s.unowned)
		s.mu.Unlock()
		if s.opts.skipped != nil {
			s.opts.skipped(n)
		}
	}
	if !s.opts.legacyEndpoints {
		return
	}
	for _, o := range []any{old, obj} {
		keys, _ := sliceServiceKeys(o)
		for _, k := range keys {
			s.queue.add(item{reflector: endpoints.Keyword, id: k})
		}
	}
}

// serviceCIDRChanged queues a ServiceCIDR and, when cluster IPs are checked against
// the ranges, every service: O(services), for an object that changes about never.
func (s *informerSet) serviceCIDRChanged(obj any) {
	s.queueObject(servicecidr.Keyword, obj)
	if !s.opts.cidrsLimitServices {
		return
	}
	for _, id := range s.svcInf.GetIndexer().ListKeys() {
		s.queue.add(item{reflector: service.Keyword, id: id})
	}
}

// serviceCIDRs returns the ranges of the cached ServiceCIDR objects (nil when not
// served); objects that do not convert are left out.
func (s *informerSet) serviceCIDRs() []*net.IPNet {
	if s.cidrInf == nil {
		return nil
	}
	var out []*net.IPNet
	for _, obj := range s.cidrInf.GetIndexer().List() {
		c, ok := obj.(*networkingv1.ServiceCIDR)
		if !ok {
			continue
		}
		for _, cidr := range c.Spec.CIDRs {
			if _, n, err := net.ParseCIDR(cidr); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// convertSlice converts a cached slice; (nil, nil) for a slice that belongs to no
// service: it is not written (and deleted if it was).
func (s *informerSet) convertSlice(sl *discoveryv1.EndpointSlice) (*endpointslice.EndpointSlice, error) {
	if convert.SliceServiceName(sl) == "" {
		return nil, nil
	}
	return convert.EndpointSlice(sl)
}

// sliceServiceKeys is the index function of EndpointSlices: the "namespace/service" of
// the service the slice belongs to.
func sliceServiceKeys(obj any) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil
	}
	svc := convert.SliceServiceName(s)
	if svc == "" {
		return nil, nil
	}
	return []string{s.Namespace + "/" + svc}, nil
}

// stripManagedFields drops the managed fields before objects enter the caches: they
// are never reflected and take much memory.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	if p, ok := obj.(*corev1.Pod); ok {
		// The cache keeps only the annotations agents read (convert.AgentAnnotations):
		// contiv-ksr then holds no more of a pod than it reflects.
		p.Annotations = convert.AgentAnnotations(p.Annotations)
	}
	return obj, nil
}

// simpleReflector reflects a kind whose objects convert one to one.
func simpleReflector[T any, M proto.Message](name, prefix string, inf cache.SharedIndexInformer,
	key func(string) string, conv func(T) (M, error)) *reflector {
	return &reflector{
		name:   name,
		prefix: prefix,
		key:    key,
		ids:    func() []string { return inf.GetIndexer().ListKeys() },
		value: func(id string) (proto.Message, error) {
			obj, exists, err := inf.GetIndexer().GetByKey(id)
			if err != nil || !exists {
				return nil, err
			}
			typed, ok := obj.(T)
			if !ok {
				return nil, fmt.Errorf("%s %s: cache holds a %T", name, id, obj)
			}
			v, err := conv(typed)
			if err != nil || isNil(v) {
				return nil, err
			}
			return v, nil
		},
	}
}

// isNil says whether a typed message is a nil pointer.
func isNil(m proto.Message) bool { return m == nil || !m.ProtoReflect().IsValid() }

// absentReflector owns a prefix that nothing is written under: its resync deletes
// what others (an earlier term, an older contiv-ksr) left there.
func absentReflector(name, prefix string) *reflector {
	return &reflector{
		name: name, prefix: prefix,
		key:   func(id string) string { return prefix + id },
		ids:   func() []string { return nil },
		value: func(string) (proto.Message, error) { return nil, nil },
	}
}

// legacyEndpointsReflector writes, for every service with EndpointSlices, the legacy
// Endpoints value made of them (convert.LegacyEndpoints): what agents of the previous
// release read. A change of one slice rebuilds the value of its whole service.
func (s *informerSet) legacyEndpointsReflector() *reflector {
	idx := s.sliceInf.GetIndexer()
	return &reflector{
		name:   endpoints.Keyword,
		prefix: endpoints.KeyPrefix(),
		key: func(id string) string {
			ns, name, _ := cache.SplitMetaNamespaceKey(id)
			return endpoints.Key(name, ns)
		},
		ids: func() []string {
			var ids []string
			for _, id := range idx.ListIndexFuncValues(sliceServiceIndex) {
				if objs, _ := idx.ByIndex(sliceServiceIndex, id); len(objs) > 0 {
					ids = append(ids, id)
				}
			}
			sort.Strings(ids)
			return ids
		},
		value: func(id string) (proto.Message, error) {
			objs, err := idx.ByIndex(sliceServiceIndex, id)
			if err != nil || len(objs) == 0 {
				return nil, err
			}
			slices := make([]*discoveryv1.EndpointSlice, 0, len(objs))
			for _, o := range objs {
				if sl, ok := o.(*discoveryv1.EndpointSlice); ok {
					slices = append(slices, sl)
				}
			}
			var svc *corev1.Service
			if obj, ok, _ := s.svcInf.GetIndexer().GetByKey(id); ok {
				svc, _ = obj.(*corev1.Service)
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(id)
			return convert.LegacyEndpoints(ns, name, svc, slices)
		},
	}
}

// queue is the set of items waiting to be written, with a signal channel that holds a
// token while the set is not empty. Items queued twice are written once.
type queue struct {
	mu     sync.Mutex
	items  map[item]struct{}
	signal chan struct{}
}

func newQueue() *queue {
	return &queue{items: map[item]struct{}{}, signal: make(chan struct{}, 1)}
}

func (q *queue) add(it item) {
	q.mu.Lock()
	q.items[it] = struct{}{}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// drain takes every queued item, sorted so writes happen in a stable order.
func (q *queue) drain() []item {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]item, 0, len(q.items))
	for it := range q.items {
		out = append(out, it)
	}
	clear(q.items)
	sort.Slice(out, func(i, j int) bool {
		if out[i].reflector != out[j].reflector {
			return out[i].reflector < out[j].reflector
		}
		return out[i].id < out[j].id
	})
	return out
}
