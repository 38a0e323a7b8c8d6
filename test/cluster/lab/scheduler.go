package lab

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// scheduler binds Pods created without spec.nodeName (those of a Deployment, or of
// kubectl run) to the node with the fewest pods, so the lab serves Deployments; Pods that
// name their node are left alone. It stands in for kube-scheduler, without its
// filters and scores.
type scheduler struct {
	kube  kubernetes.Interface
	nodes func() []string // the nodes that accept pods now
	logf  func(format string, args ...any)

	factory informers.SharedInformerFactory
	pods    cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// bound remembers the bindings made, until the informer shows them.
	bound map[types.UID]string
}

func (s *scheduler) start(ctx context.Context) error {
	s.bound = make(map[types.UID]string)
	s.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	s.factory = informers.NewSharedInformerFactory(s.kube, 0)
	inf := s.factory.Core().V1().Pods().Informer()
	s.pods = inf.GetIndexer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
				if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
					s.queue.Add(key)
				}
			}
		},
	}); err != nil {
		return fmt.Errorf("scheduler: pod handler: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.factory.Start(runCtx.Done())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for s.next(runCtx) {
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("scheduler: pod informer did not sync")
	}
	return nil
}

func (s *scheduler) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.queue.ShutDown()
	s.factory.Shutdown()
	s.wg.Wait()
}

func (s *scheduler) next(ctx context.Context) bool {
	return processNext(ctx, s.queue, s.schedule, s.logf, "scheduler: pod")
}

// schedule binds the pod to the node with the fewest pods (ties: the first name).
func (s *scheduler) schedule(ctx context.Context, key string) error {
	obj, exists, err := s.pods.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return nil
	}
	nodes := s.nodes()
	if len(nodes) == 0 {
		return fmt.Errorf("no node accepts pods")
	}
	count := make(map[string]int, len(nodes))
	seen := make(map[types.UID]bool)
	for _, o := range s.pods.List() {
		p := o.(*corev1.Pod)
		seen[p.UID] = true
		switch {
		case p.Spec.NodeName != "":
			count[p.Spec.NodeName]++
			delete(s.bound, p.UID)
		case s.bound[p.UID] != "":
			count[s.bound[p.UID]]++
		}
	}
	for uid := range s.bound {
		if !seen[uid] {
			delete(s.bound, uid)
		}
	}
	best := nodes[0]
	for _, n := range nodes[1:] {
		if count[n] < count[best] {
			best = n
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = s.kube.CoreV1().Pods(pod.Namespace).Bind(bctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: best},
	}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or bound meanwhile
	}
	if err != nil {
		return fmt.Errorf("bind to %s: %w", best, err)
	}
	s.bound[pod.UID] = best
	return nil
}
