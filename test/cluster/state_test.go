package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// dumpEntry is an entry of GET /scheduler/dump.
type dumpEntry struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// vppDump returns the values under prefix as VPP has them (view SB: retrieved from the
// simulator through the descriptors' dumps), key -> compact JSON.
func vppDump(n *lab.Node, prefix string) (map[string]string, error) {
	var entries []dumpEntry
	if err := n.GetJSON("/scheduler/dump?view=SB&key-prefix="+url.QueryEscape(prefix), &entries); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		var v any
		if err := json.Unmarshal(e.Value, &v); err != nil {
			return nil, fmt.Errorf("%s: value of %s: %w", n.Name, e.Key, err)
		}
		compact, _ := json.Marshal(v)
		out[e.Key] = string(compact)
	}
	return out, nil
}

// cnatPaths returns the number of paths of the translation of vip (and port; 0: any)
// in the JSON of a cnat translation set, -1 when the set has none (or is not one).
func cnatPaths(setJSON, vip string, port uint32) int {
	var set struct {
		Translations []struct {
			VipAddress string            `json:"vipAddress"`
			VipPort    uint32            `json:"vipPort"`
			Paths      []json.RawMessage `json:"paths"`
		} `json:"translations"`
	}
	if json.Unmarshal([]byte(setJSON), &set) != nil {
		return -1
	}
	for _, t := range set.Translations {
		if t.VipAddress == vip && (port == 0 || t.VipPort == port) {
			return len(t.Paths)
		}
	}
	return -1
}

// vxlanTunnel is the part of a VXLAN interface value the tests check.
type vxlanTunnel struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Vxlan struct {
		SrcAddress string `json:"srcAddress"`
		DstAddress string `json:"dstAddress"`
		Vni        uint32 `json:"vni"`
	} `json:"vxlan"`
}

// vxlanTunnels returns the VXLAN tunnels VPP has on the node, by name.
func vxlanTunnels(n *lab.Node) (map[string]vxlanTunnel, error) {
	dump, err := vppDump(n, "config/vpp/v2/interfaces/")
	if err != nil {
		return nil, err
	}
	out := make(map[string]vxlanTunnel)
	for key, val := range dump {
		var t vxlanTunnel
		if err := json.Unmarshal([]byte(val), &t); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", n.Name, key, err)
		}
		if t.Type == "VXLAN_TUNNEL" {
			out[t.Name] = t
		}
	}
	return out, nil
}

// checkMesh returns nil when every node has exactly one VXLAN tunnel to each other node
// (vxlan<peer ID>, from its own IP to the peer's, VNI 10) and no other.
func checkMesh(nodes []*lab.Node) error {
	var problems []string
	for _, n := range nodes {
		tunnels, err := vxlanTunnels(n)
		if err != nil {
			return err
		}
		want := make(map[string]string)
		for _, peer := range nodes {
			if peer != n {
				want[fmt.Sprintf("vxlan%d", peer.ID)] = peer.IP.String()
			}
		}
		for name, dst := range want {
			t, ok := tunnels[name]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s lacks %s to %s", n.Name, name, dst))
			case t.Vxlan.SrcAddress != n.IP.String() || t.Vxlan.DstAddress != dst || t.Vxlan.Vni != 10:
				problems = append(problems, fmt.Sprintf("%s: %s is %+v, want %s -> %s VNI 10", n.Name, name, t.Vxlan, n.IP, dst))
			}
		}
		for name := range tunnels {
			if _, ok := want[name]; !ok {
				problems = append(problems, fmt.Sprintf("%s has an extra tunnel %s", n.Name, name))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func TestThreeNodesGetIDsOneToThreeAndAFullVXLANMesh(t *testing.T) {
	l := sharedLab(t)
	nodes := l.Nodes()
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	_, nodeNet, _ := net.ParseCIDR(lab.NodeNetwork)
	for i, n := range nodes {
		wantID := uint32(i + 1)
		wantIP := fmt.Sprintf("192.168.16.%d", wantID)
		if n.ID != wantID || n.IP.String() != wantIP || !nodeNet.Contains(n.IP) {
			t.Errorf("%s: ID %d IP %s, want ID %d IP %s", n.Name, n.ID, n.IP, wantID, wantIP)
		}
		if want := fmt.Sprintf("10.1.%d.0/24", wantID); n.PodSubnet.String() != want {
			t.Errorf("%s: pod subnet %s, want %s", n.Name, n.PodSubnet, want)
		}
	}
	testkit.Eventually(t, 30*time.Second, "a full VXLAN mesh", func() error { return checkMesh(nodes) })

	// The Node objects are as the kubelets registered them.
	ctx := testCtx(t, time.Minute)
	for _, n := range nodes {
		kn, err := l.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if kn.Spec.PodCIDR != n.PodSubnet.String() || len(kn.Status.Addresses) == 0 ||
			kn.Status.Addresses[0].Address != n.IP.String() {
			t.Errorf("Node %s: podCIDR %s, addresses %v; want %s and InternalIP %s",
				n.Name, kn.Spec.PodCIDR, kn.Status.Addresses, n.PodSubnet, n.IP)
		}
	}
	// In two zones, in turn.
	for i, n := range nodes {
		kn, err := l.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := lab.DefaultZones[i%2]
		if got := kn.Labels[corev1.LabelTopologyZone]; got != want || n.Zone != want {
			t.Errorf("Node %s: zone label %q (lab: %q), want %q", n.Name, got, n.Zone, want)
		}
	}
}

// echoGracePeriod is the grace period of the tests' pods: their container keeps serving
// that long after they are deleted.
const echoGracePeriod = 2

// echoPod is a pod of the tests: its container answers on TCP 8080, UDP 8081 and SCTP
// 8082 (where the kernel has SCTP).
func echoPod(name, app, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64(echoGracePeriod)),
			Containers: []corev1.Container{{
				Name: "echo", Image: "lab/echo",
				Ports: []corev1.ContainerPort{
					{Name: "tcp", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "udp", ContainerPort: 8081, Protocol: corev1.ProtocolUDP},
					{Name: "sctp", ContainerPort: 8082, Protocol: corev1.ProtocolSCTP},
				},
			}},
		},
	}
}

// testNamespace creates a namespace for the test, deleted (and awaited) at its end.
func testNamespace(t testing.TB, l *lab.Lab, name string) string {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	if err := l.EnsureNamespace(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := l.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
			return
		}
		if err := testkit.Wait(ctx, 2*time.Minute, "namespace "+name+" gone", func() error {
			_, err := l.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err == nil:
				return errors.New("still there")
			}
			return err
		}); err != nil {
			t.Error(err)
		}
	})
	return name
}

// podOnItsNodeSubnet checks that the pod's IP is in its node's pod subnet and that the
// node's agent allocated it to the pod.
func podOnItsNodeSubnet(l *lab.Lab, p corev1.Pod) error {
	n := l.Node(p.Spec.NodeName)
	if n == nil {
		return fmt.Errorf("pod %s on unknown node %q", p.Name, p.Spec.NodeName)
	}
	ip := net.ParseIP(p.Status.PodIP)
	if ip == nil || !n.PodSubnet.Contains(ip) {
		return fmt.Errorf("pod %s on %s has IP %q, not in %s", p.Name, n.Name, p.Status.PodIP, n.PodSubnet)
	}
	var allocs struct {
		Pods []struct {
			PodID struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"PodID"`
			MainIP string `json:"MainIP"`
		} `json:"Pods"`
	}
	if err := n.GetJSON("/contiv/v1/ipam/allocations", &allocs); err != nil {
		return err
	}
	for _, a := range allocs.Pods {
		if a.PodID.Name == p.Name && a.PodID.Namespace == p.Namespace {
			if a.MainIP != p.Status.PodIP {
				return fmt.Errorf("pod %s: the agent of %s allocated %s, the pod reports %s", p.Name, n.Name, a.MainIP, p.Status.PodIP)
			}
			return nil
		}
	}
	return fmt.Errorf("pod %s/%s: no allocation on %s", p.Namespace, p.Name, n.Name)
}

func TestPodsGetIPsFromTheirNodeSubnetAndKSRReflectsEndpointsOfTheControllerManager(t *testing.T) {
	l := sharedLab(t)
	ns := testNamespace(t, l, "reflect")
	ctx := testCtx(t, 3*time.Minute)
	pods := l.Kube.CoreV1().Pods(ns)
	for _, n := range l.Nodes() {
		if _, err := pods.Create(ctx, echoPod("echo-"+n.Name, "echo", n.Name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := l.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "echo"},
			Ports:    []corev1.ServicePort{{Name: "tcp", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running, err := l.WaitPodsReady(ctx, ns, "app=echo", len(l.Nodes()), 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wantIPs := make([]string, 0, len(running))
	for _, p := range running {
		if err := podOnItsNodeSubnet(l, p); err != nil {
			t.Error(err)
		}
		if p.Status.HostIP != l.Node(p.Spec.NodeName).IP.String() {
			t.Errorf("pod %s: hostIP %s, want %s", p.Name, p.Status.HostIP, l.Node(p.Spec.NodeName).IP)
		}
		wantIPs = append(wantIPs, p.Status.PodIP)
	}
	slices.Sort(wantIPs)

	// contiv-ksr has reflected the Nodes, the Pods with their IPs, the Service and the
	// Endpoints that kube-controller-manager computed from the ready pods.
	etcd := etcdClient(t, l)
	const prefix = "/vnf-agent/contiv-ksr/k8s/"
	testkit.Eventually(t, 30*time.Second, "contiv-ksr reflects the cluster", func() error {
		for _, n := range l.Nodes() {
			if err := etcdHas(ctx, etcd, prefix+"node/"+n.Name, n.IP.String()); err != nil {
				return err
			}
		}
		for _, p := range running {
			if err := etcdHas(ctx, etcd, prefix+"pod/"+p.Name+"/namespace/"+ns, p.Status.PodIP); err != nil {
				return err
			}
		}
		if err := etcdHas(ctx, etcd, prefix+"service/echo/namespace/"+ns, svc.Spec.ClusterIP); err != nil {
			return err
		}
		got, err := endpointIPs(ctx, etcd, prefix+"endpoints/echo/namespace/"+ns)
		if err != nil {
			return err
		}
		if !slices.Equal(got, wantIPs) {
			return fmt.Errorf("endpoints in etcd %v, want %v", got, wantIPs)
		}
		return nil
	})

	// Deleting a pod: its kubelet stops it (CNI DEL), confirms the deletion; the
	// controller-manager drops it from the Endpoints; contiv-ksr follows.
	gone := running[0]
	if err := pods.Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "the deleted pod is gone everywhere", func() error {
		if _, err := pods.Get(ctx, gone.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s still in the API (%v)", gone.Name, err)
		}
		if _, _, ok := l.PodNetns(ns, gone.Name); ok {
			return fmt.Errorf("pod %s still has a sandbox", gone.Name)
		}
		got, err := endpointIPs(ctx, etcd, prefix+"endpoints/echo/namespace/"+ns)
		if err != nil {
			return err
		}
		if slices.Contains(got, gone.Status.PodIP) || len(got) != len(wantIPs)-1 {
			return fmt.Errorf("endpoints in etcd %v still list %s", got, gone.Status.PodIP)
		}
		resp, err := etcd.Get(ctx, prefix+"pod/"+gone.Name+"/namespace/"+ns)
		if err != nil {
			return err
		}
		if len(resp.Kvs) != 0 {
			return fmt.Errorf("pod %s still in etcd", gone.Name)
		}
		return nil
	})
	if err := podOnItsNodeSubnet(l, gone); err == nil || !strings.Contains(err.Error(), "no allocation") {
		t.Errorf("after the deletion of %s its agent still holds its IP (%v)", gone.Name, err)
	}
}

// etcdHas checks that key exists and its value mentions want.
func etcdHas(ctx context.Context, etcd *clientv3.Client, key, want string) error {
	resp, err := etcd.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return fmt.Errorf("etcd: no %s", key)
	}
	if !strings.Contains(string(resp.Kvs[0].Value), want) {
		return fmt.Errorf("etcd %s = %s, lacks %q", key, resp.Kvs[0].Value, want)
	}
	return nil
}

func TestDeploymentPodsAreScheduledOnEveryNodeAndBecomeReady(t *testing.T) {
	l := sharedLab(t)
	ns := testNamespace(t, l, "deploy")
	ctx := testCtx(t, 3*time.Minute)
	nodes := l.Nodes()
	replicas := int32(2 * len(nodes))
	tmpl := echoPod("", "web", "")
	_, err := l.Kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running, err := l.WaitPodsReady(ctx, ns, "app=web", int(replicas), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	perNode := make(map[string]int)
	for _, p := range running {
		perNode[p.Spec.NodeName]++
		if err := podOnItsNodeSubnet(l, p); err != nil {
			t.Error(err)
		}
	}
	for _, n := range nodes {
		if perNode[n.Name] != 2 {
			t.Errorf("pods per node %v, want 2 on each", perNode)
			break
		}
	}
}

// endpointIPs returns the sorted ready addresses of the Endpoints stored at key.
func endpointIPs(ctx context.Context, etcd *clientv3.Client, key string) ([]string, error) {
	resp, err := etcd.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("etcd get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("etcd: no %s", key)
	}
	var eps endpoints.Endpoints
	if err := protojson.Unmarshal(resp.Kvs[0].Value, &eps); err != nil {
		return nil, fmt.Errorf("etcd %s: %w", key, err)
	}
	var ips []string
	for _, s := range eps.GetEndpointSubsets() {
		for _, a := range s.GetAddresses() {
			ips = append(ips, a.GetIp())
		}
	}
	slices.Sort(ips)
	return ips, nil
}
