package policy

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	nsmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	pm "github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// The benchmark cluster: 50 namespaces (label team=t<n%5>) of 100 pods each
// (5,000 pods; labels app=app-<i%10>, tier=t<i%3>, named port http=8080);
// this node runs the first 55 pods of ns-0 and ns-1 (110 local pods, IPs in
// 10.1.1.0/24), the others are remote. Policy j lives in namespace j%50,
// selects app-<(j/50)%10> and allows in, on TCP 80+j%5 and the named port
// http, the pods of app-<((j/50)+1)%10> of its namespace; every 10th policy
// also allows the pods with the same app of the team=t<j%5> namespaces
// (podSelector AND namespaceSelector); every 4th one has egress rules: UDP
// 53 to the pods of app-<((j/50)+2)%10> and TCP 443 to 0.0.0.0/0 except
// 10.0.0.0/8. The dual-stack variants give every pod an IPv6 address too
// (fd00:10:1:1::/64 for the local pods, as benchPodIP6 numbers them).
const (
	benchNamespaces = 50
	benchPodsPerNs  = 100
	benchLocalPerNs = 55
)

func benchPodIP(ns, i int) string {
	if ns < 2 && i < benchLocalPerNs {
		return fmt.Sprintf("10.1.1.%d", 2+ns*benchLocalPerNs+i)
	}
	n := ns*benchPodsPerNs + i
	return fmt.Sprintf("10.1.%d.%d", 2+n/250, 2+n%250)
}

// benchPodIP6 is the IPv6 address of the pod of benchPodIP (the local pods in
// this node's IPv6 pod subnet fd00:10:1:1::/64).
func benchPodIP6(ns, i int) string {
	if ns < 2 && i < benchLocalPerNs {
		return fmt.Sprintf("fd00:10:1:1::%x", 2+ns*benchLocalPerNs+i)
	}
	n := ns*benchPodsPerNs + i
	return fmt.Sprintf("fd00:10:1:%x::%x", 2+n/250, 2+n%250)
}

// benchDualPod is benchPod with both addresses.
func benchDualPod(ns, i int, app int, dual bool) *podmodel.Pod {
	p := benchPod(ns, i, app)
	if dual {
		p.IpAddresses = []string{p.IpAddress, benchPodIP6(ns, i)}
	}
	return p
}

func benchPod(ns, i int, app int) *podmodel.Pod {
	return &podmodel.Pod{Name: fmt.Sprintf("p%d", i), Namespace: fmt.Sprintf("ns-%d", ns), IpAddress: benchPodIP(ns, i),
		Label:     []*podmodel.Pod_Label{{Key: "app", Value: fmt.Sprintf("app-%d", app)}, {Key: "tier", Value: fmt.Sprintf("t%d", i%3)}},
		Container: []*podmodel.Pod_Container{{Name: "c", Port: []*podmodel.Pod_Container_Port{{Name: "http", ContainerPort: 8080}}}}}
}

func appSel(app int) *pm.Policy_LabelSelector {
	return &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: "app", Value: fmt.Sprintf("app-%d", app%10)}}}
}

func benchState(policies int) controller.KubeStateData { return benchStateOf(policies, false) }

// benchStateOf is benchState, with dual every pod dual-stack.
func benchStateOf(policies int, dual bool) controller.KubeStateData {
	st := controller.NewKubeStateData(podmodel.Keyword, nsmodel.Keyword, pm.Keyword)
	for n := 0; n < benchNamespaces; n++ {
		name := fmt.Sprintf("ns-%d", n)
		st[nsmodel.Keyword][nsmodel.Key(name)] = &nsmodel.Namespace{Name: name,
			Label: []*nsmodel.Namespace_Label{{Key: "team", Value: fmt.Sprintf("t%d", n%5)}}}
		for i := 0; i < benchPodsPerNs; i++ {
			p := benchDualPod(n, i, i%10, dual)
			st[podmodel.Keyword][podmodel.Key(p.Name, p.Namespace)] = p
		}
	}
	for j := 0; j < policies; j++ {
		app := j / benchNamespaces
		p := &pm.Policy{Name: fmt.Sprintf("pol-%d", j), Namespace: fmt.Sprintf("ns-%d", j%benchNamespaces), Pods: appSel(app),
			IngressRule: []*pm.Policy_IngressRule{{
				Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{Number: int32(80 + j%5)}},
					{Port: &pm.Policy_Port_PortNameOrNumber{Type: pm.Policy_Port_PortNameOrNumber_NAME, Name: "http"}}},
				From: []*pm.Policy_Peer{{Pods: appSel(app + 1)}},
			}}}
		if j%10 == 0 {
			p.IngressRule[0].From = append(p.IngressRule[0].From, &pm.Policy_Peer{Pods: appSel(app),
				Namespaces: &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: "team", Value: fmt.Sprintf("t%d", j%5)}}}})
		}
		if j%4 == 0 {
			p.PolicyType = pm.Policy_INGRESS_AND_EGRESS
			p.EgressRule = []*pm.Policy_EgressRule{
				{Port: []*pm.Policy_Port{{Protocol: pm.Policy_Port_UDP, Port: &pm.Policy_Port_PortNameOrNumber{Number: 53}}},
					To: []*pm.Policy_Peer{{Pods: appSel(app + 2)}}},
				{Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{Number: 443}}},
					To: []*pm.Policy_Peer{{IpBlock: &pm.Policy_Peer_IPBlock{Cidr: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}}},
			}
		}
		st[pm.Keyword][pm.Key(p.Name, p.Namespace)] = p
	}
	return st
}

// benchIPNet names pod interfaces by namespace and name (fakeIPNet's names
// by pod name alone would make pods of ns-0 and ns-1 share interfaces).
type benchIPNet struct{ fakeIPNet }

func (benchIPNet) GetPodIfNames(ns, name string) (string, string, string, bool) {
	return "tap-" + ns + "-" + name, "eth0", "", true
}

func benchPlugin(b testing.TB) *Plugin { return benchPluginOf(b, false) }

// benchPluginOf is benchPlugin, with dual on a dual-stack node.
func benchPluginOf(b testing.TB, dual bool) *Plugin {
	b.Helper()
	l := logrus.New()
	l.SetOutput(&strings.Builder{})
	l.SetLevel(logrus.ErrorLevel)
	p := NewPlugin(Deps{Log: l, ContivConf: fakeConf{}, IPAM: fakeIPAM{pods: map[podmodel.ID]string{}, dual: dual}, IPNet: benchIPNet{},
		PodManager: fakePods{pods: podmanager.LocalPods{}}})
	if err := p.Init(); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchCases are the sizes and stacks of the benchmarks: IPv4, and the same
// cluster dual-stack (every pod with two addresses).
var benchCases = []struct {
	policies int
	dual     bool
}{{100, false}, {1000, false}, {100, true}, {1000, true}}

func benchName(policies int, dual bool) string {
	if dual {
		return fmt.Sprintf("policies=%d/dual-stack", policies)
	}
	return fmt.Sprintf("policies=%d", policies)
}

// BenchmarkResync: a full resync of the policy plugin (cache, processor,
// configurator, renderer cache, ACL renderer staging every value).
func BenchmarkResync(b *testing.B) {
	for _, c := range benchCases {
		b.Run(benchName(c.policies, c.dual), func(b *testing.B) {
			st := benchStateOf(c.policies, c.dual)
			p := benchPluginOf(b, c.dual)
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				if err := p.Resync(controller.NewDBResync(), st, 1, mapTxn{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			s := p.Stats()
			b.ReportMetric(float64(s.ACLs), "acls")
			b.ReportMetric(float64(s.Rules), "rules")
			b.ReportMetric(float64(s.Puts+s.Deletes), "vpp-msgs")
		})
	}
}

// BenchmarkLabelChange: one remote pod of ns-0 toggles between app-1 and
// app-2; the local pods selected by the policies that allow app-1 or app-2
// in are recomputed.
func BenchmarkLabelChange(b *testing.B) {
	for _, c := range benchCases {
		b.Run(benchName(c.policies, c.dual), func(b *testing.B) {
			st := benchStateOf(c.policies, c.dual)
			p := benchPluginOf(b, c.dual)
			if err := p.Resync(controller.NewDBResync(), st, 1, mapTxn{}); err != nil {
				b.Fatal(err)
			}
			pods := [2]*podmodel.Pod{benchDualPod(0, 91, 1, c.dual), benchDualPod(0, 91, 2, c.dual)}
			recomputed, msgs := 0, 0
			runtime.GC() // the garbage of the resync is not the event's
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				ev := &controller.KubeStateChange{Resource: podmodel.Keyword, Key: podmodel.Key("p91", "ns-0"),
					PrevValue: pods[i%2], NewValue: pods[(i+1)%2]}
				if _, err := p.Update(ev, mapTxn{}); err != nil {
					b.Fatal(err)
				}
				recomputed += p.processor.LastStats().PodsRecomputed
				s := p.Stats()
				msgs += s.Puts + s.Deletes
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(recomputed)/float64(b.N), "pods-recomputed")
			b.ReportMetric(float64(msgs)/float64(b.N), "vpp-msgs")
		})
	}
}

// benchTargetState is benchState plus a probe policy in ns-0: it selects
// the first k local pods of ns-0 (label role=target) and allows in, on TCP
// 9000, the pods of ns-0 labelled probe=on. Toggling probe on the remote pod
// p91 changes the rules of exactly those k pods.
func benchTargetState(policies, k int) controller.KubeStateData {
	st := benchState(policies)
	for i := 0; i < k; i++ {
		p := benchPod(0, i, i%10)
		p.Label = append(p.Label, &podmodel.Pod_Label{Key: "role", Value: "target"})
		st[podmodel.Keyword][podmodel.Key(p.Name, p.Namespace)] = p
	}
	probe := &pm.Policy{Name: "probe", Namespace: "ns-0",
		Pods: &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: "role", Value: "target"}}},
		IngressRule: []*pm.Policy_IngressRule{{
			Port: []*pm.Policy_Port{{Port: &pm.Policy_Port_PortNameOrNumber{Number: 9000}}},
			From: []*pm.Policy_Peer{{Pods: &pm.Policy_LabelSelector{MatchLabel: []*pm.Policy_Label{{Key: "probe", Value: "on"}}}}},
		}}}
	st[pm.Keyword][pm.Key(probe.Name, probe.Namespace)] = probe
	return st
}

// probePods are p91 of ns-0 (app-1) with probe=off and probe=on.
func probePods() [2]*podmodel.Pod {
	var out [2]*podmodel.Pod
	for i, v := range []string{"off", "on"} {
		out[i] = benchPod(0, 91, 1)
		out[i].Label = append(out[i].Label, &podmodel.Pod_Label{Key: "probe", Value: v})
	}
	return out
}

// BenchmarkLabelChangeAffecting: with 1,000 policies and the probe policy
// selecting k local pods, the remote pod p91 toggles its probe label: the
// rules of exactly k local pods change (proportionality of a label change).
func BenchmarkLabelChangeAffecting(b *testing.B) {
	for _, k := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("pods=%d", k), func(b *testing.B) {
			st := benchTargetState(1000, k)
			pods := probePods()
			st[podmodel.Keyword][podmodel.Key("p91", "ns-0")] = pods[0]
			p := benchPlugin(b)
			if err := p.Resync(controller.NewDBResync(), st, 1, mapTxn{}); err != nil {
				b.Fatal(err)
			}
			recomputed, msgs := 0, 0
			runtime.GC()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				ev := &controller.KubeStateChange{Resource: podmodel.Keyword, Key: podmodel.Key("p91", "ns-0"),
					PrevValue: pods[i%2], NewValue: pods[(i+1)%2]}
				if _, err := p.Update(ev, mapTxn{}); err != nil {
					b.Fatal(err)
				}
				recomputed += p.processor.LastStats().PodsRecomputed
				s := p.Stats()
				msgs += s.Puts + s.Deletes
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(recomputed)/float64(b.N), "pods-recomputed")
			b.ReportMetric(float64(msgs)/float64(b.N), "vpp-msgs")
		})
	}
}

// cpuTime returns the CPU time (user + system) the process used so far: on a
// loaded machine it says what the code costs better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
