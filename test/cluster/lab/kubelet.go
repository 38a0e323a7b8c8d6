package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// kubeletWorkers is how many pods a kubelet sets up or tears down at once.
const kubeletWorkers = 4

// kubelet stands in for a node's kubelet and container runtime: it registers the Node,
// watches the Pods bound to it, creates each pod's sandbox (a network namespace), calls
// contiv-cni, runs the pod's container (a responder on its ports) and reports the pod
// Running and Ready with its IP; a deleted pod is stopped, CNI DEL is called, its
// namespace removed and the deletion confirmed (grace period 0), as kubelet does once
// the containers are gone.
type kubelet struct {
	node     string
	nodeIP   net.IP
	podCIDR  string
	prefix   string // of the pod namespace names
	kube     kubernetes.Interface
	cni      *cniPlugin
	logf     func(format string, args ...any)
	onChange func() // called after a pod was set up or torn down (tests wait on it)

	factory informers.SharedInformerFactory
	store   cache.Store
	queue   workqueue.TypedRateLimitingInterface[string]
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu        sync.Mutex
	sandboxes map[string]*sandbox // by namespace/name
}

// sandbox is a running pod on the node.
type sandbox struct {
	uid         types.UID
	namespace   string
	name        string
	containerID string
	netns       string // name
	ip          net.IP
	started     time.Time
	container   *container
}

func (s *sandbox) cniRequest() cniRequest {
	return cniRequest{containerID: s.containerID, netnsPath: netnsPath(s.netns),
		namespace: s.namespace, name: s.name, uid: string(s.uid)}
}

// registerNode creates or updates the Node object with its addresses and pod CIDR and
// reports it Ready.
func (k *kubelet) registerNode(ctx context.Context) error {
	nodes := k.kube.CoreV1().Nodes()
	_, err := nodes.Get(ctx, k.node, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = nodes.Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: k.node, Labels: map[string]string{
				"kubernetes.io/hostname": k.node, "kubernetes.io/os": "linux"}},
			Spec: corev1.NodeSpec{PodCIDR: k.podCIDR, PodCIDRs: []string{k.podCIDR}},
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
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.nodeIP.String()},
			{Type: corev1.NodeHostName, Address: k.node},
		}
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
	if err := k.registerNode(ctx); err != nil {
		return err
	}
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
	runCtx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	k.factory.Start(runCtx.Done())
	for range kubeletWorkers {
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			for k.processNext(runCtx) {
			}
		}()
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("kubelet %s: pod informer did not sync", k.node)
	}
	return nil
}

// stop stops the workers; with teardown it also stops every pod's container and removes
// its namespace (without CNI DEL: the node goes away with it).
func (k *kubelet) stop(teardown bool) error {
	if k.cancel == nil {
		return nil
	}
	k.cancel()
	k.queue.ShutDown()
	k.factory.Shutdown()
	k.wg.Wait()
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

func (k *kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.syncPod(ctx, key); err != nil {
		if ctx.Err() != nil {
			return false
		}
		k.logf("kubelet %s: pod %s: %v (retrying)", k.node, key, err)
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
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

	terminating := pod == nil || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if sb != nil && (terminating || pod.UID != sb.uid) {
		if err := k.teardown(ctx, key, sb); err != nil {
			return err
		}
		sb = nil
	}
	if pod == nil {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		// The containers are gone: confirm the deletion, as kubelet's status manager does.
		err := k.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("confirm deletion: %w", err)
		}
		return nil
	}
	if terminating {
		return nil
	}
	if sb == nil {
		if sb, err = k.setup(ctx, key, pod); err != nil {
			return err
		}
	}
	if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP == sb.ip.String() && podReady(pod) {
		return nil
	}
	return k.reportRunning(ctx, pod, sb)
}

// setup creates the sandbox: namespace, CNI ADD, container.
func (k *kubelet) setup(ctx context.Context, key string, pod *corev1.Pod) (*sandbox, error) {
	id, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{uid: pod.UID, namespace: pod.Namespace, name: pod.Name, containerID: id,
		netns: k.podNetnsName(pod), started: time.Now()}
	if err := addNetns(sb.netns); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ip, err := k.cni.add(ctx, sb.cniRequest())
	if err != nil {
		// As the runtime does after a failed ADD: DEL, then drop the sandbox.
		if derr := k.cni.del(ctx, sb.cniRequest()); derr != nil {
			k.logf("kubelet %s: pod %s: cleanup after failed ADD: %v", k.node, key, derr)
		}
		_ = deleteNetns(sb.netns)
		return nil, err
	}
	sb.ip = ip
	c, err := startContainer(pod.Name, netnsPath(sb.netns), podPorts(pod))
	if err != nil {
		_ = k.cni.del(ctx, sb.cniRequest())
		_ = deleteNetns(sb.netns)
		return nil, err
	}
	sb.container = c
	k.mu.Lock()
	k.sandboxes[key] = sb
	k.mu.Unlock()
	k.logf("kubelet %s: pod %s running with IP %s in netns %s", k.node, key, ip, sb.netns)
	if k.onChange != nil {
		k.onChange()
	}
	return sb, nil
}

// teardown stops the container, calls CNI DEL and removes the namespace.
func (k *kubelet) teardown(ctx context.Context, key string, sb *sandbox) error {
	sb.container.stop()
	if err := k.cni.del(ctx, sb.cniRequest()); err != nil {
		return err
	}
	if err := deleteNetns(sb.netns); err != nil {
		return err
	}
	k.mu.Lock()
	if k.sandboxes[key] == sb {
		delete(k.sandboxes, key)
	}
	k.mu.Unlock()
	k.logf("kubelet %s: pod %s stopped", k.node, key)
	if k.onChange != nil {
		k.onChange()
	}
	return nil
}

// podNetnsName names the pod's namespace "<lab prefix>-<namespace>-<name>", with a part
// of the UID when that name is taken (a pod recreated under the same name while the old
// sandbox still exists).
func (k *kubelet) podNetnsName(pod *corev1.Pod) string {
	name := k.prefix + "-" + pod.Namespace + "-" + pod.Name
	if len(name) > 200 {
		name = name[:200]
	}
	if _, err := os.Stat(netnsPath(name)); err == nil {
		name += "-" + string(pod.UID)[:8]
	}
	return name
}

// reportRunning writes the pod's status: Running, its IP, Ready.
func (k *kubelet) reportRunning(ctx context.Context, pod *corev1.Pod, sb *sandbox) error {
	pods := k.kube.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != sb.uid {
			return nil // replaced meanwhile; the next sync handles the new one
		}
		now := metav1.Now()
		started := metav1.NewTime(sb.started)
		p.Status.Phase = corev1.PodRunning
		p.Status.HostIP = k.nodeIP.String()
		p.Status.HostIPs = []corev1.HostIP{{IP: k.nodeIP.String()}}
		p.Status.PodIP = sb.ip.String()
		p.Status.PodIPs = []corev1.PodIP{{IP: sb.ip.String()}}
		p.Status.StartTime = &started
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(bool),
				ContainerID: "lab://" + sb.containerID,
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			})
			*p.Status.ContainerStatuses[len(p.Status.ContainerStatuses)-1].Started = true
		}
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// podReady reports the pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podSandbox returns the netns name and IP of a running pod of this node.
func (k *kubelet) podSandbox(namespace, name string) (netns string, ip net.IP, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sb := k.sandboxes[namespace+"/"+name]
	if sb == nil {
		return "", nil, false
	}
	return sb.netns, sb.ip, true
}
