package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// kubeletWorkers is how many pods a kubelet sets up or tears down at once.
const kubeletWorkers = 4

// defaultGracePeriod is the grace period of a pod that states none (the API's default).
const defaultGracePeriod = 30 * time.Second

// kubelet stands in for a node's kubelet and container runtime: it registers the Node,
// watches the Pods bound to it, creates each pod's sandbox (a network namespace), calls
// contiv-cni, runs the pod's container (a responder on its ports), runs its readiness
// probes and reports the pod's status as kubelet does (phase, IPs, conditions, container
// statuses).
//
// A deleted pod terminates gracefully: its container keeps serving for the pod's grace
// period (deletionGracePeriodSeconds, from terminationGracePeriodSeconds) or until its
// server exits, while the API shows it terminating; then the container is stopped, the
// sandbox torn down (CNI DEL, namespace removed), the final status written (containers
// terminated, phase Succeeded or Failed: the terminal phase of kubelet since v1.27) and
// the deletion confirmed with grace period 0, as kubelet's status manager does.
type kubelet struct {
	node     string
	nodeIPs  []net.IP // the primary family's first (InternalIPs, status.hostIPs)
	podCIDRs []string // the primary family's first
	family   IPFamily // orders a pod's IPs as kubelet does
	zone     string   // topology.kubernetes.io/zone of the Node, "" = none
	prefix   string   // of the pod namespace names
	kube     kubernetes.Interface
	cni      *cniPlugin
	clock    clock.WithTicker
	logf     func(format string, args ...any)
	onChange func() // called after a pod was set up or torn down (tests wait on it)

	factory  informers.SharedInformerFactory
	store    cache.Store
	events   record.EventBroadcaster
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
	runCtx   context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu        sync.Mutex
	sandboxes map[string]*sandbox // by namespace/name
}

// sandbox is a pod on the node, from its setup until its deletion is confirmed.
type sandbox struct {
	uid         types.UID
	namespace   string
	name        string
	containerID string
	netns       string   // name
	ips         []net.IP // one per family, the primary family's first
	started     time.Time
	container   *container
	stopProbes  context.CancelFunc

	// Guarded by kubelet.mu.
	ready       map[string]bool // container name -> its readiness probe's verdict
	terminating bool            // the grace period runs
	terminated  bool            // the container stopped
	exitCode    int32
	finished    time.Time
	tornDown    bool // CNI DEL done, namespace removed
}

func (s *sandbox) cniRequest() cniRequest {
	return cniRequest{containerID: s.containerID, netnsPath: netnsPath(s.netns),
		namespace: s.namespace, name: s.name, uid: string(s.uid)}
}

// registerNode creates or updates the Node object with its labels (hostname, os, zone),
// addresses and pod CIDR and reports it Ready.
func (k *kubelet) registerNode(ctx context.Context) error {
	nodes := k.kube.CoreV1().Nodes()
	_, err := nodes.Get(ctx, k.node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		labels := map[string]string{"kubernetes.io/hostname": k.node, "kubernetes.io/os": "linux"}
		if k.zone != "" {
			labels[corev1.LabelTopologyZone] = k.zone
		}
		_, err = nodes.Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: k.node, Labels: labels},
			Spec:       corev1.NodeSpec{PodCIDR: k.podCIDRs[0], PodCIDRs: k.podCIDRs},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create Node %s: %w", k.node, err)
		}
	case err != nil:
		return fmt.Errorf("get Node %s: %w", k.node, err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Addresses = nil
		for _, ip := range k.nodeIPs { // as kubelet --node-ip=<IPv4>,<IPv6> reports them
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: k.node})
		n.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "lab kubelet stand-in", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		n.Status.NodeInfo.KubeletVersion = "v1.34.2"
		n.Status.NodeInfo.OperatingSystem = "linux"
		n.Status.NodeInfo.Architecture = "amd64"
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// start registers the node and starts watching its pods.
func (k *kubelet) start(ctx context.Context) error {
	if k.clock == nil {
		k.clock = clock.RealClock{}
	}
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	k.startEvents()
	k.sandboxes = make(map[string]*sandbox)
	k.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	k.factory = informers.NewSharedInformerFactoryWithOptions(k.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + k.node }))
	inf := k.factory.Core().V1().Pods().Informer()
	k.store = inf.GetStore()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("kubelet %s: pod handler: %w", k.node, err)
	}
	k.runCtx, k.cancel = context.WithCancel(context.Background())
	k.factory.Start(k.runCtx.Done())
	for range kubeletWorkers {
		k.wg.Go(func() {
			for processNext(k.runCtx, k.queue, k.syncPod, k.logf, "kubelet "+k.node+": pod") {
			}
		})
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("kubelet %s: pod informer did not sync", k.node)
	}
	return nil
}

// stop stops the workers, probes and grace periods; with teardown it also stops every
// pod's container and removes its namespace (without CNI DEL: the node goes away with
// it).
func (k *kubelet) stop(teardown bool) error {
	if k.cancel == nil {
		return nil
	}
	k.cancel()
	k.queue.ShutDown()
	k.factory.Shutdown()
	k.wg.Wait()
	k.stopEvents()
	if !teardown {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for key, sb := range k.sandboxes {
		sb.container.stop()
		if err := deleteNetns(sb.netns); err != nil {
			errs = append(errs, err)
		}
		delete(k.sandboxes, key)
	}
	return errors.Join(errs...)
}

// syncPod brings the pod's sandbox in line with its object.
func (k *kubelet) syncPod(ctx context.Context, key string) error {
	obj, exists, err := k.store.GetByKey(key)
	if err != nil {
		return err
	}
	var pod *corev1.Pod
	if exists {
		pod = obj.(*corev1.Pod)
	}
	k.mu.Lock()
	sb := k.sandboxes[key]
	k.mu.Unlock()

	// The object is gone, or replaced, without the deletion this kubelet confirms (a
	// forced deletion): the containers are killed at once.
	if sb != nil && (pod == nil || pod.UID != sb.uid) {
		if err := k.teardown(ctx, key, sb); err != nil {
			return err
		}
		k.forget(key, sb)
		sb = nil
	}
	if pod == nil {
		return nil
	}
	if sb == nil {
		switch {
		case pod.DeletionTimestamp != nil:
			// Nothing runs (any more): confirm the deletion.
			return k.confirmDeletion(ctx, pod)
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			return nil
		}
		if sb, err = k.setup(ctx, key, pod); err != nil {
			k.sandboxFailed(pod, err)
			return err
		}
	}
	if pod.DeletionTimestamp != nil {
		k.startTermination(key, pod, sb, gracePeriod(pod))
	}
	k.mu.Lock()
	terminated := sb.terminated
	k.mu.Unlock()
	if !terminated {
		return k.writeStatus(ctx, pod, sb)
	}
	// The containers are gone: the sandbox goes, the final status is written, the
	// deletion confirmed.
	if err := k.teardown(ctx, key, sb); err != nil {
		return err
	}
	if err := k.writeStatus(ctx, pod, sb); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil {
		return nil
	}
	if err := k.confirmDeletion(ctx, pod); err != nil {
		return err
	}
	k.forget(key, sb)
	return nil
}

// confirmDeletion deletes the pod with grace period 0 (its UID as precondition), as
// kubelet's status manager does once its containers are gone.
func (k *kubelet) confirmDeletion(ctx context.Context, pod *corev1.Pod) error {
	err := k.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("confirm deletion: %w", err)
	}
	return nil
}

// gracePeriod is how long a deleted pod's containers may run: the deletion's grace
// period (the API sets it from terminationGracePeriodSeconds or the delete options),
// else the spec's, else 30 s.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGracePeriod
}

// startTermination starts the grace period of a deleted pod (once): its container keeps
// serving until its server exits (exit code 0) or the period ends (killed: 137); then
// the pod is synced again to be torn down.
func (k *kubelet) startTermination(key string, pod *corev1.Pod, sb *sandbox, grace time.Duration) {
	k.mu.Lock()
	started := sb.terminating
	sb.terminating = true
	k.mu.Unlock()
	if started {
		return
	}
	k.logf("kubelet %s: pod %s terminating, grace period %v", k.node, key, grace)
	k.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonKilling, "Stopping container(s), grace period %v", grace)
	timer := k.clock.NewTimer(grace)
	k.wg.Go(func() {
		defer timer.Stop()
		code := int32(0)
		select {
		case <-sb.container.done():
		case <-timer.C():
			code = 137 // SIGKILL
		case <-k.runCtx.Done():
			return // stop tears the sandboxes down
		}
		sb.stopProbes()
		sb.container.stop()
		k.mu.Lock()
		sb.terminated, sb.exitCode, sb.finished = true, code, k.clock.Now()
		k.mu.Unlock()
		k.queue.Add(key)
	})
}

// setup creates the sandbox: namespace, CNI ADD, container, readiness probes.
func (k *kubelet) setup(ctx context.Context, key string, pod *corev1.Pod) (*sandbox, error) {
	id, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{uid: pod.UID, namespace: pod.Namespace, name: pod.Name, containerID: id,
		netns: podNetnsName(k.prefix, pod), started: k.clock.Now(), ready: make(map[string]bool)}
	if err := addNetns(sb.netns); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ips, err := k.cni.add(ctx, sb.cniRequest(), k.family)
	if err != nil {
		// As the runtime does after a failed ADD: DEL, then drop the sandbox.
		if derr := k.cni.del(ctx, sb.cniRequest()); derr != nil {
			k.logf("kubelet %s: pod %s: cleanup after failed ADD: %v", k.node, key, derr)
		}
		_ = deleteNetns(sb.netns)
		return nil, err
	}
	sb.ips = k.family.sortByFamily(ips)
	c, err := startContainer(pod.Namespace, pod.Name, netnsPath(sb.netns), podPorts(pod), k.family)
	if err != nil {
		_ = k.cni.del(ctx, sb.cniRequest())
		_ = deleteNetns(sb.netns)
		return nil, err
	}
	sb.container = c
	k.startProbes(key, pod, sb)
	k.mu.Lock()
	k.sandboxes[key] = sb
	k.mu.Unlock()
	k.logf("kubelet %s: pod %s running with IPs %v in netns %s", k.node, key, sb.ips, sb.netns)
	if k.onChange != nil {
		k.onChange()
	}
	return sb, nil
}

// teardown stops the container (if it still runs), calls CNI DEL and removes the
// namespace, once.
func (k *kubelet) teardown(ctx context.Context, key string, sb *sandbox) error {
	k.mu.Lock()
	done := sb.tornDown
	k.mu.Unlock()
	if done {
		return nil
	}
	sb.stopProbes()
	sb.container.stop()
	if err := k.cni.del(ctx, sb.cniRequest()); err != nil {
		return err
	}
	if err := deleteNetns(sb.netns); err != nil {
		return err
	}
	k.mu.Lock()
	sb.tornDown = true
	k.mu.Unlock()
	k.logf("kubelet %s: pod %s stopped", k.node, key)
	if k.onChange != nil {
		k.onChange()
	}
	return nil
}

// forget drops the sandbox of a pod whose object is gone.
func (k *kubelet) forget(key string, sb *sandbox) {
	k.mu.Lock()
	if k.sandboxes[key] == sb {
		delete(k.sandboxes, key)
	}
	k.mu.Unlock()
}

// podSandbox returns the netns name and primary IP of a running pod of this node.
func (k *kubelet) podSandbox(namespace, name string) (netns string, ip net.IP, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sb := k.sandboxes[namespace+"/"+name]
	if sb == nil || sb.tornDown {
		return "", nil, false
	}
	return sb.netns, sb.ips[0], true
}
