//lint:file-ignore SA1019 the agent's model is the Endpoints API, deprecated in Kubernetes 1.33 but still served; EndpointSlices fill in when it is absent.

package ksr

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
)

// Reflectors returns the names of the reflectors (the model keywords), in the order
// they are resynced: the label values of the per-reflector metrics.
func Reflectors() []string {
	return []string{namespace.Keyword, node.Keyword, pod.Keyword, policy.Keyword, service.Keyword, endpoints.Keyword}
}

// sliceServiceIndex indexes EndpointSlices by "<namespace>/<service name>".
const sliceServiceIndex = "service"

// item is one object to reflect: the reflector and the cache key of the object
// ("namespace/name", or "name" for cluster-scoped kinds). For endpoints, name is the
// service name, whichever of Endpoints or EndpointSlices the event came from.
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
	// value converts the cached object; (nil, nil) when the caches do not hold it.
	value func(id string) (proto.Message, error)
	// key builds the etcd key (relative to the KSR prefix) of an object.
	key func(id string) string
}

// informerSet is the informers of one leadership term and the reflectors reading them.
type informerSet struct {
	factory    informers.SharedInformerFactory
	informers  []cache.SharedIndexInformer
	reflectors []*reflector // in the order of Reflectors()
	byName     map[string]*reflector
	queue      *queue
}

// newInformerSet creates the informers (not started) and registers the event handlers
// that queue items.
// convService converts a Service for the service reflector (the plugin checks its
// limits on top of convert.Service).
func newInformerSet(client kubernetes.Interface, convService func(*corev1.Service) (*service.Service, error)) (*informerSet, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	s := &informerSet{factory: factory, byName: map[string]*reflector{}, queue: newQueue()}

	nsInf := factory.Core().V1().Namespaces().Informer()
	nodeInf := factory.Core().V1().Nodes().Informer()
	podInf := factory.Core().V1().Pods().Informer()
	polInf := factory.Networking().V1().NetworkPolicies().Informer()
	svcInf := factory.Core().V1().Services().Informer()
	epInf := factory.Core().V1().Endpoints().Informer()
	sliceInf := factory.Discovery().V1().EndpointSlices().Informer()
	if err := sliceInf.AddIndexers(cache.Indexers{sliceServiceIndex: sliceServiceKeys}); err != nil {
		return nil, fmt.Errorf("endpoint slice index: %w", err)
	}
	s.informers = []cache.SharedIndexInformer{nsInf, nodeInf, podInf, polInf, svcInf, epInf, sliceInf}

	clusterKey := func(id string) string { return id }
	nsKey := func(build func(name, ns string) string) func(string) string {
		return func(id string) string {
			ns, name, _ := cache.SplitMetaNamespaceKey(id)
			return build(name, ns)
		}
	}
	s.reflectors = []*reflector{
		simpleReflector(namespace.Keyword, namespace.KeyPrefix(), nsInf, func(id string) string { return namespace.Key(clusterKey(id)) }, convert.Namespace),
		simpleReflector(node.Keyword, node.KeyPrefix(), nodeInf, func(id string) string { return node.Key(clusterKey(id)) }, convert.Node),
		simpleReflector(pod.Keyword, pod.KeyPrefix(), podInf, nsKey(pod.Key), convert.Pod),
		simpleReflector(policy.Keyword, policy.KeyPrefix(), polInf, nsKey(policy.Key), convert.Policy),
		simpleReflector(service.Keyword, service.KeyPrefix(), svcInf, nsKey(service.Key), convService),
		endpointsReflector(epInf, sliceInf, nsKey(endpoints.Key)),
	}
	for _, r := range s.reflectors {
		s.byName[r.name] = r
	}

	direct := func(name string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.queueObject(name, obj) },
			UpdateFunc: func(_, obj any) { s.queueObject(name, obj) },
			DeleteFunc: func(obj any) { s.queueObject(name, obj) },
		}
	}
	sliceHandler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.queueSlice(obj) },
		UpdateFunc: func(old, obj any) {
			s.queueSlice(old) // the service label may have changed
			s.queueSlice(obj)
		},
		DeleteFunc: func(obj any) { s.queueSlice(obj) },
	}
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandler
	}{
		{nsInf, direct(namespace.Keyword)}, {nodeInf, direct(node.Keyword)}, {podInf, direct(pod.Keyword)},
		{polInf, direct(policy.Keyword)}, {svcInf, direct(service.Keyword)}, {epInf, direct(endpoints.Keyword)},
		{sliceInf, sliceHandler},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return nil, fmt.Errorf("register event handler: %w", err)
		}
	}
	return s, nil
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

func (s *informerSet) queueSlice(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	keys, _ := sliceServiceKeys(obj)
	for _, k := range keys {
		s.queue.add(item{reflector: endpoints.Keyword, id: k})
	}
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
			if err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

// endpointsReflector reflects Endpoints objects, and the EndpointSlices of services
// without one.
func endpointsReflector(epInf, sliceInf cache.SharedIndexInformer, key func(string) string) *reflector {
	return &reflector{
		name:   endpoints.Keyword,
		prefix: endpoints.KeyPrefix(),
		key:    key,
		ids: func() []string {
			seen := map[string]bool{}
			for _, id := range epInf.GetIndexer().ListKeys() {
				seen[id] = true
			}
			for _, id := range sliceInf.GetIndexer().ListIndexFuncValues(sliceServiceIndex) {
				if objs, _ := sliceInf.GetIndexer().ByIndex(sliceServiceIndex, id); len(objs) > 0 {
					seen[id] = true
				}
			}
			ids := make([]string, 0, len(seen))
			for id := range seen {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			return ids
		},
		value: func(id string) (proto.Message, error) {
			obj, exists, err := epInf.GetIndexer().GetByKey(id)
			if err != nil {
				return nil, err
			}
			if exists {
				e, ok := obj.(*corev1.Endpoints)
				if !ok {
					return nil, fmt.Errorf("endpoints %s: cache holds a %T", id, obj)
				}
				return convert.Endpoints(e)
			}
			objs, err := sliceInf.GetIndexer().ByIndex(sliceServiceIndex, id)
			if err != nil || len(objs) == 0 {
				return nil, err
			}
			slices := make([]*discoveryv1.EndpointSlice, 0, len(objs))
			for _, o := range objs {
				if s, ok := o.(*discoveryv1.EndpointSlice); ok {
					slices = append(slices, s)
				}
			}
			ns, name, _ := cache.SplitMetaNamespaceKey(id)
			return convert.EndpointsFromSlices(ns, name, slices)
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
