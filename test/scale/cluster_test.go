package scale

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/convert"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/store"
)

// setup is the size of the generated cluster.
type setup struct {
	Nodes, Pods, Services, Endpoints, NodePorts int
	// Joins is how many times a node joins and leaves in a round (the median of each
	// is reported).
	Joins int
	// LegacyEndpoints writes v1 Endpoints instead of EndpointSlices, the form a
	// contiv-ksr older than the EndpointSlice agent wrote (to compare with an agent of
	// that time, which reads nothing else).
	LegacyEndpoints bool
	// Dual makes the cluster dual-stack (CONTIV_SCALE_FAMILY=dual): every node has an
	// IPv6 InternalIP, pod CIDR and VPP address beside its IPv4 ones, every pod an IPv6
	// address (dualstack_test.go has the IPv6 plan), and the agent's contiv.conf has
	// ipamConfig.ipv6. Services stay IPv4 (IPv6 Services come with the cnat renderer).
	Dual bool
	// Renderer is the agent's serviceRenderer (contiv.conf; CONTIV_SCALE_RENDERER):
	// "nat44", "cnat", or "" for the shipped example's (nat44). The simulator role
	// is told too: it waits for cnat translations instead of NAT44 mappings.
	Renderer string
}

func (s setup) String() string {
	form := "EndpointSlices"
	if s.LegacyEndpoints {
		form = "Endpoints"
	}
	family := ""
	if s.Dual {
		family = " (dual-stack)"
	}
	return fmt.Sprintf("%d nodes, %d pods/node%s, %d Services x %d endpoints (%s), %d NodePorts, node join and leave x%d",
		s.Nodes, s.Pods, family, s.Services, s.Endpoints, form, s.NodePorts, max(1, s.Joins))
}

// maxEndpointsPerSlice is the EndpointSlice controller's default
// (kube-controller-manager --max-endpoints-per-slice): a Service of more endpoints has
// several slices.
const maxEndpointsPerSlice = 100

// Address plan of the generated cluster (node k is 1-based; the agent runs as node 1).
const (
	namespaceName = "default"
	servicePort   = 80
	targetPort    = 8080
	nodePortBase  = 30000
)

func nodeName(k int) string { return fmt.Sprintf("scale-node-%d", k) }

// nodeIP is node k's InternalIP.
func nodeIP(k int) string { return fmt.Sprintf("10.20.%d.%d", k/200, k%200+10) }

// nodeVPPIP is node k's VPP address in the node interconnect network (node ID k).
func nodeVPPIP(k int) string { return fmt.Sprintf("192.168.16.%d/24", k) }

// podIP is the IP of pod p (0-based) of node k, in the node's pod subnet 10.1.k.0/24,
// host part 2..199 (200..249 are the backends of changed Endpoints).
func podIP(k, p int) string { return fmt.Sprintf("10.1.%d.%d", k, p%198+2) }

// serviceIP is Service i's ClusterIP.
func serviceIP(i int) string { return fmt.Sprintf("10.96.%d.%d", i/250, i%250+1) }

func serviceName(i int) string { return fmt.Sprintf("svc-%d", i) }

// changedBackend is the first address of Service i's Endpoints at version v > 0: a pod
// IP of a remote node outside the range of the generated pods (host part 200..249),
// different from version v-1's.
func (s setup) changedBackend(i, v int) (ip string, node int) {
	node = 2 + i%(s.Nodes-1)
	return fmt.Sprintf("10.1.%d.%d", node, 200+v%50), node
}

func (s setup) k8sNode(k int) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName(k)},
		Spec:       corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.1.%d.0/24", k)},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: nodeIP(k)},
			{Type: corev1.NodeHostName, Address: nodeName(k)},
		}},
	}
	if s.Dual {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR, nodePodCIDR6(k)}
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: nodeIP6(k)})
	}
	return n
}

func (s setup) k8sPod(k, p int) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d-%d", k, p), Namespace: namespaceName,
			Labels: map[string]string{"app": fmt.Sprintf("app-%d", p%20)}},
		Spec: corev1.PodSpec{NodeName: nodeName(k), Containers: []corev1.Container{{Name: "c", Image: "x",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: targetPort}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: nodeIP(k), PodIP: podIP(k, p)},
	}
	if s.Dual {
		pod.Status.PodIPs = []corev1.PodIP{{IP: podIP(k, p)}, {IP: podIP6(k, p)}}
		pod.Status.HostIPs = []corev1.HostIP{{IP: nodeIP(k)}, {IP: nodeIP6(k)}}
	}
	return pod
}

func (s setup) k8sService(i int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName(i), Namespace: namespaceName},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: serviceIP(i),
			Selector: map[string]string{"app": fmt.Sprintf("app-%d", i%20)},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: servicePort,
				TargetPort: intstr.FromInt32(targetPort)}}},
	}
	if i < s.NodePorts {
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Ports[0].NodePort = int32(nodePortBase + i)
	}
	return svc
}

// backend is the j-th endpoint of Service i at version v, with its node: E addresses
// on the nodes after node i's (the local node among them), the first replaced by
// changedBackend from version 1 on.
func (s setup) backend(i, j, v int) (ip string, node int) {
	if j == 0 && v > 0 {
		return s.changedBackend(i, v)
	}
	k := 1 + (i+j)%s.Nodes
	return podIP(k, i/s.Nodes+j), k
}

// firstBackend is the first endpoint of Service i at version 0.
func (s setup) firstBackend(i int) string {
	ip, _ := s.backend(i, 0, 0)
	return ip
}

// endpointSlices are Service i's EndpointSlices at version v, as contiv-ksr writes
// them: the endpoints in slices of at most maxEndpointsPerSlice, as the EndpointSlice
// controller cuts them, every endpoint ready. Only the first slice changes from one
// version to the next (it holds the changed backend).
func (s setup) endpointSlices(i, v int) []kv {
	var out []kv
	for first := 0; first < s.Endpoints; first += maxEndpointsPerSlice {
		out = append(out, s.endpointSlice(i, v, first))
	}
	return out
}

// endpointSlice is the slice of Service i at version v whose first endpoint is the
// first-th.
func (s setup) endpointSlice(i, v, first int) kv {
	es := &endpointslice.EndpointSlice{
		Name: fmt.Sprintf("%s-%d", serviceName(i), first/maxEndpointsPerSlice), Namespace: namespaceName,
		ServiceName: serviceName(i), AddressType: "IPv4", ManagedBy: "endpointslice-controller.k8s.io",
		Ports: []*endpointslice.Port{{Name: "http", Protocol: "TCP", Port: targetPort}},
	}
	for j := first; j < min(first+maxEndpointsPerSlice, s.Endpoints); j++ {
		ip, k := s.backend(i, j, v)
		es.Endpoints = append(es.Endpoints, &endpointslice.Endpoint{Addresses: []string{ip}, Ready: true, Serving: true,
			NodeName: nodeName(k)})
	}
	return kv{endpointslice.Key(es.Name, es.Namespace), es}
}

// changedEndpoints is the value that changes when Service i goes to version v: its
// first EndpointSlice, or its Endpoints.
func (s setup) changedEndpoints(i, v int) kv {
	if s.LegacyEndpoints {
		return mustConvert(s.k8sEndpoints(i, v))
	}
	return s.endpointSlice(i, v, 0)
}

// encodeChange returns the etcd key and value of changedEndpoints.
func (s setup) encodeChange(i, v int) (key, value string, err error) {
	return encodeKV(s.changedEndpoints(i, v))
}

// k8sEndpoints is Service i's Endpoints at version v (the LegacyEndpoints form).
//
//lint:ignore SA1019 contiv-ksr older than the EndpointSlice agent reflected Endpoints.
func (s setup) k8sEndpoints(i, v int) *corev1.Endpoints {
	var addrs []corev1.EndpointAddress
	for j := 0; j < s.Endpoints; j++ {
		ip, k := s.backend(i, j, v)
		n := nodeName(k)
		addrs = append(addrs, corev1.EndpointAddress{IP: ip, NodeName: &n})
	}
	//lint:ignore SA1019 as above
	subset := corev1.EndpointSubset{Addresses: addrs,
		Ports: []corev1.EndpointPort{{Name: "http", Port: targetPort, Protocol: corev1.ProtocolTCP}}}
	//lint:ignore SA1019 as above
	subsets := []corev1.EndpointSubset{subset}
	//lint:ignore SA1019 as above
	return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: serviceName(i), Namespace: namespaceName}, Subsets: subsets}
}

// kv is a converted object: its key relative to ksrkey.KsrPrefix and its value.
type kv struct {
	key   string
	value proto.Message
}

func mustConvert(obj runtime.Object) kv {
	k, v, err := convert.Object(obj)
	if err != nil {
		panic(fmt.Sprintf("convert %T: %v", obj, err))
	}
	return kv{k, v}
}

// writeCluster writes the whole cluster into etcd, prefix by prefix, and the node ID
// allocations of nodes 2..N (node 1 is the agent's: it claims its ID itself).
func (s setup) writeCluster(ctx context.Context, cli *clientv3.Client) error {
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName}}}
	for k := 1; k <= s.Nodes; k++ {
		objs = append(objs, s.k8sNode(k))
		for p := 0; p < s.Pods; p++ {
			objs = append(objs, s.k8sPod(k, p))
		}
	}
	var values []kv
	for i := 0; i < s.Services; i++ {
		objs = append(objs, s.k8sService(i))
		if s.LegacyEndpoints {
			objs = append(objs, s.k8sEndpoints(i, 0))
		} else {
			values = append(values, s.endpointSlices(i, 0)...)
		}
	}
	for _, o := range objs {
		values = append(values, mustConvert(o))
	}
	byPrefix := map[string]map[string]proto.Message{}
	for _, c := range values {
		prefix := ""
		for _, p := range []string{namespace.KeyPrefix(), node.KeyPrefix(), pod.KeyPrefix(), service.KeyPrefix(),
			endpoints.KeyPrefix(), endpointslice.KeyPrefix()} {
			if strings.HasPrefix(c.key, p) {
				prefix = p
			}
		}
		if prefix == "" {
			return fmt.Errorf("%s: no known prefix", c.key)
		}
		if byPrefix[prefix] == nil {
			byPrefix[prefix] = map[string]proto.Message{}
		}
		byPrefix[prefix][c.key] = c.value
	}
	w := store.New(store.Options{KV: cli})
	for prefix, part := range byPrefix {
		if _, err := w.Resync(ctx, prefix, part); err != nil {
			return fmt.Errorf("write %s (%d values): %w", prefix, len(part), err)
		}
	}
	for k := 2; k <= s.Nodes; k++ {
		if err := s.putVPPNode(ctx, cli, k); err != nil {
			return err
		}
	}
	return nil
}

// putVPPNode writes node k's ID allocation (ID k) with its VPP addresses (IPv4 first,
// as nodesync publishes them).
func (s setup) putVPPNode(ctx context.Context, cli *clientv3.Client, k int) error {
	addrs := []string{nodeVPPIP(k)}
	if s.Dual {
		addrs = append(addrs, nodeVPPIP6(k))
	}
	data, err := dbresources.Marshal(&vppnode.VppNode{Id: uint32(k), Name: nodeName(k), IpAddresses: addrs})
	if err != nil {
		return fmt.Errorf("node %d ID: %w", k, err)
	}
	if _, err := cli.Put(ctx, ksrkey.KsrPrefix+vppnode.Key(uint32(k)), string(data)); err != nil {
		return fmt.Errorf("node %d ID: %w", k, err)
	}
	return nil
}

// putObject converts obj and writes it into etcd.
func putObject(ctx context.Context, cli *clientv3.Client, obj runtime.Object) error {
	key, value, err := encodeObject(obj)
	if err != nil {
		return err
	}
	return putEncoded(ctx, cli, key, value)
}

// encodeObject returns the etcd key and value contiv-ksr would write for obj.
func encodeObject(obj runtime.Object) (key, value string, err error) {
	return encodeKV(mustConvert(obj))
}

// encodeKV returns the etcd key and value of a converted object.
func encodeKV(c kv) (key, value string, err error) {
	data, err := dbresources.Marshal(c.value)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", c.key, err)
	}
	return ksrkey.KsrPrefix + c.key, string(data), nil
}

// putEncoded writes what encodeObject returned.
func putEncoded(ctx context.Context, cli *clientv3.Client, key, value string) error {
	if _, err := cli.Put(ctx, key, value); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// deleteObject deletes obj's key from etcd.
func deleteObject(ctx context.Context, cli *clientv3.Client, obj runtime.Object) error {
	c := mustConvert(obj)
	if _, err := cli.Delete(ctx, ksrkey.KsrPrefix+c.key); err != nil {
		return fmt.Errorf("delete %s: %w", c.key, err)
	}
	return nil
}
