package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// TestTheExternalClientReachesEveryPodByItsIP: the external client routes the pod
// subnets to their nodes; every pod answers it with its name and namespace, seeing the
// client's own address.
func TestTheExternalClientReachesEveryPodByItsIP(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "extpods")
	pods := podsOnEveryNode(t, l, ns, "ext", 1)
	d := fromNetns(l.ClientNetns)
	for _, p := range pods {
		addr := net.JoinHostPort(p.Status.PodIP, "8080")
		testkit.Eventually(t, 30*time.Second, "the client reaches "+p.Name+" at "+addr, func() error {
			r, err := probeReply(d, addr, 2*time.Second)
			if err != nil {
				return err
			}
			host, _, _ := net.SplitHostPort(r.client)
			if r.pod != p.Name || r.namespace != ns || host != lab.ClientIP {
				return fmt.Errorf("answered by %s/%s seeing %s, want %s/%s seeing %s", r.namespace, r.pod, r.client, ns, p.Name, lab.ClientIP)
			}
			return nil
		})
	}
}

// waitIngress waits until the Service's status.loadBalancer has want ingress addresses
// (0: none) and returns them.
func waitIngress(t *testing.T, l *lab.Lab, ns, name string, want int) []corev1.LoadBalancerIngress {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	var ing []corev1.LoadBalancerIngress
	testkit.Eventually(t, 30*time.Second, fmt.Sprintf("%d ingress addresses of %s", want, name), func() error {
		svc, err := l.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ing = svc.Status.LoadBalancer.Ingress
		if len(ing) != want {
			return fmt.Errorf("ingress %+v", ing)
		}
		return nil
	})
	return ing
}

// TestALoadBalancerServiceGetsAnAddressOfThePoolAndItsNodePortWorks: the lab's
// allocator gives a LoadBalancer Service an address of its pool (ipMode VIP, or Proxy
// when the Service asks by annotation), takes it back when the Service changes type,
// and leaves a Service of another loadBalancerClass alone; the NodePort of the Service
// answers the external client, as (issue #26 item 7) its LoadBalancer address should.
func TestALoadBalancerServiceGetsAnAddressOfThePoolAndItsNodePortWorks(t *testing.T) {
	l := sharedLab(t)
	requireForwarding(t, l)
	ns := testNamespace(t, l, "lb")
	backends := podsOnEveryNode(t, l, ns, "lb", 1)
	pool := netip.MustParsePrefix(lab.LBPoolCIDR)

	vip := createService(t, l, ns, echoService("vip", "lb", corev1.ServiceTypeLoadBalancer, ""))
	proxySvc := echoService("proxy", "lb", corev1.ServiceTypeLoadBalancer, "")
	proxySvc.Annotations = map[string]string{lab.LBIPModeAnnotation: "Proxy"}
	createService(t, l, ns, proxySvc)
	other := echoService("other", "lb", corev1.ServiceTypeLoadBalancer, "")
	other.Spec.LoadBalancerClass = new("example.com/another-lb")
	createService(t, l, ns, other)

	seen := make(map[string]string)
	for name, mode := range map[string]corev1.LoadBalancerIPMode{"vip": corev1.LoadBalancerIPModeVIP, "proxy": corev1.LoadBalancerIPModeProxy} {
		ing := waitIngress(t, l, ns, name, 1)[0]
		ip, err := netip.ParseAddr(ing.IP)
		if err != nil || !pool.Contains(ip) || ing.IPMode == nil || *ing.IPMode != mode {
			t.Errorf("%s: ingress %s (ipMode %v), want an address of %s with ipMode %s", name, ing.IP, ing.IPMode, pool, mode)
		}
		if seen[ing.IP] != "" {
			t.Errorf("%s and %s share %s", name, seen[ing.IP], ing.IP)
		}
		seen[ing.IP] = name
	}

	d := fromNetns(l.ClientNetns)
	port := strconv.Itoa(int(vip.Spec.Ports[0].NodePort))
	for _, n := range l.Nodes() {
		addr := net.JoinHostPort(n.IP.String(), port)
		everyBackendAnswers(t, d, addr, backends, "every backend answers the client on NodePort "+addr)
	}

	t.Run("LoadBalancerIPFromTheClient", func(t *testing.T) {
		ing := waitIngress(t, l, ns, "vip", 1)[0]
		addr := net.JoinHostPort(ing.IP, "80")
		if _, _, err := probe(d, addr, 3*time.Second); err != nil {
			t.Fatalf("the client's first connection to the LoadBalancer IP (issue #26 item 7): %s: %v; %s",
				addr, err, mappedOn(l, ns+"/vip", ing.IP))
		}
		everyBackendAnswers(t, d, addr, backends, "every backend answers the client on "+addr)
	})

	// Another class's Service is not ours; a Service that stops being a LoadBalancer
	// gives its address back.
	ctx := testCtx(t, time.Minute)
	if got := waitIngress(t, l, ns, "other", 0); len(got) != 0 {
		t.Errorf("a Service of another loadBalancerClass got %+v", got)
	}
	svc, err := l.Kube.CoreV1().Services(ns).Get(ctx, "proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	svc.Spec.ExternalTrafficPolicy = ""
	if _, err := l.Kube.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, l, ns, "proxy", 0)
}

// mappedOn tells which nodes' VPP have a NAT mapping of the Service (namespace/name) for
// ip, or a cnat translation of ip on a lab whose serviceRenderer is cnat.
func mappedOn(l *lab.Lab, svc, ip string) string {
	prefix, what := "config/vpp/nat/v2/dnat44/"+svc, "the DNAT of "+svc
	cnat := l.ServiceRenderer() == lab.RendererCNAT
	if cnat {
		prefix, what = cnatmodel.TranslationSetKey(svc), "a cnat translation of "+svc
	}
	var on []string
	for _, n := range l.Nodes() {
		dump, err := vppDump(n, prefix)
		if err != nil {
			return err.Error()
		}
		for _, v := range dump {
			if (cnat && cnatPaths(v, ip, 0) >= 0) || (!cnat && strings.Contains(v, `"`+ip+`"`)) {
				on = append(on, n.Name)
				break
			}
		}
	}
	return fmt.Sprintf("%s mapped in %s on %v", ip, what, on)
}
