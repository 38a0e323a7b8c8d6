package lab

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// The addresses the external client routes to the nodes (ServiceIngressCIDR): the
// LoadBalancer pool of the lab's allocator and a range for the externalIPs of Services.
const (
	// ServiceIngressCIDR holds LBPoolCIDR and ExternalIPCIDR; the external client routes
	// it to the nodes (equal-cost multipath over every node).
	ServiceIngressCIDR = "198.51.100.0/24"
	// LBPoolCIDR is the pool of the LoadBalancer allocator.
	LBPoolCIDR = "198.51.100.0/25"
	// ExternalIPCIDR is for the spec.externalIPs that tests and users pick.
	ExternalIPCIDR = "198.51.100.128/25"
	// LBIPModeAnnotation on a LoadBalancer Service asks the allocator for ipMode Proxy
	// ("Proxy"; anything else, or none, is VIP).
	LBIPModeAnnotation = "lab.contiv.io/lb-ip-mode"
)

// lbAllocator stands in for a LoadBalancer implementation such as MetalLB: it gives each
// Service of type LoadBalancer without a loadBalancerClass one address of the pool
// (status.loadBalancer.ingress, ipMode VIP, or Proxy when the Service asks by
// LBIPModeAnnotation), keeps it while the Service stays such, and takes it back (status
// cleared) when the Service changes type or goes. The nodes get the traffic: the
// external client routes the pool to them.
type lbAllocator struct {
	kube kubernetes.Interface
	pool netip.Prefix
	logf func(format string, args ...any)

	factory  informers.SharedInformerFactory
	services cache.Indexer
	queue    workqueue.TypedRateLimitingInterface[string]
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu    sync.Mutex
	owner map[netip.Addr]string // allocated address -> namespace/name
}

func (a *lbAllocator) start(ctx context.Context) error {
	a.owner = make(map[netip.Addr]string)
	a.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	a.factory = informers.NewSharedInformerFactory(a.kube, 0)
	inf := a.factory.Core().V1().Services().Informer()
	a.services = inf.GetIndexer()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("LoadBalancer allocator: service handler: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.factory.Start(runCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("LoadBalancer allocator: service informer did not sync")
	}
	// The addresses given before (a lab restarted on the same API) stay their Services'.
	for _, o := range a.services.List() {
		svc := o.(*corev1.Service)
		if ip, ok := a.assigned(svc); ok && wantsLB(svc) {
			a.owner[ip] = svc.Namespace + "/" + svc.Name
		}
	}
	a.wg.Go(func() {
		for processNext(runCtx, a.queue, a.sync, a.logf, "LoadBalancer allocator: service") {
		}
	})
	return nil
}

func (a *lbAllocator) stop() {
	if a.cancel == nil {
		return
	}
	a.cancel()
	a.queue.ShutDown()
	a.factory.Shutdown()
	a.wg.Wait()
}

// wantsLB tells whether the allocator serves the Service: type LoadBalancer, no
// loadBalancerClass (another implementation's).
func wantsLB(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// assigned returns the pool address in the Service's status, if any.
func (a *lbAllocator) assigned(svc *corev1.Service) (netip.Addr, bool) {
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ip, err := netip.ParseAddr(ing.IP); err == nil && a.pool.Contains(ip) {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// ipMode is the ipMode the Service asks for.
func ipMode(svc *corev1.Service) corev1.LoadBalancerIPMode {
	if svc.Annotations[LBIPModeAnnotation] == string(corev1.LoadBalancerIPModeProxy) {
		return corev1.LoadBalancerIPModeProxy
	}
	return corev1.LoadBalancerIPModeVIP
}

// sync gives the Service its address, or takes it back.
func (a *lbAllocator) sync(ctx context.Context, key string) error {
	obj, exists, err := a.services.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		a.release(key)
		return nil
	}
	svc := obj.(*corev1.Service)
	ip, has := a.assigned(svc)
	if !wantsLB(svc) {
		a.release(key)
		if !has {
			return nil
		}
		return a.writeIngress(ctx, svc, nil)
	}
	mode := ipMode(svc)
	if has && a.owns(ip, key) {
		if len(svc.Status.LoadBalancer.Ingress) == 1 && ptrEq(svc.Status.LoadBalancer.Ingress[0].IPMode, mode) {
			return nil
		}
	} else if ip, err = a.allocate(key); err != nil {
		return err
	}
	return a.writeIngress(ctx, svc, []corev1.LoadBalancerIngress{{IP: ip.String(), IPMode: &mode}})
}

// owns records ip as key's if it is free and tells whether key has it.
func (a *lbAllocator) owns(ip netip.Addr, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.owner[ip] == "" {
		a.owner[ip] = key
	}
	return a.owner[ip] == key
}

// allocate gives key its address: the one it was given already, else the first free one
// of the pool (the network and broadcast addresses excluded).
func (a *lbAllocator) allocate(key string) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ip, k := range a.owner {
		if k == key {
			return ip, nil // given before a failed status write
		}
	}
	for ip := a.pool.Masked().Addr().Next(); a.pool.Contains(ip) && a.pool.Contains(ip.Next()); ip = ip.Next() {
		if a.owner[ip] == "" {
			a.owner[ip] = key
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("the LoadBalancer pool %s is exhausted", a.pool)
}

// release frees key's address.
func (a *lbAllocator) release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ip, k := range a.owner {
		if k == key {
			delete(a.owner, ip)
		}
	}
}

// writeIngress sets the Service's status.loadBalancer.ingress.
func (a *lbAllocator) writeIngress(ctx context.Context, svc *corev1.Service, ingress []corev1.LoadBalancerIngress) error {
	upd := svc.DeepCopy()
	upd.Status.LoadBalancer.Ingress = ingress
	_, err := a.kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status.loadBalancer: %w", err)
	}
	a.logf("LoadBalancer allocator: service %s/%s: ingress %v", svc.Namespace, svc.Name, ingressIPs(ingress))
	return nil
}

func ingressIPs(ingress []corev1.LoadBalancerIngress) []string {
	var out []string
	for _, i := range ingress {
		out = append(out, i.IP)
	}
	return out
}

func ptrEq[T comparable](p *T, v T) bool { return p != nil && *p == v }
