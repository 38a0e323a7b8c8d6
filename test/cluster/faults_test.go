package cluster

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr"
	"github.com/contiv-vpp/contiv-vpp/test/cluster/lab"
)

// vppState is the VPP configuration of every node (SB view), node name -> key -> value.
type vppState map[string]map[string]string

func dumpAll(l *lab.Lab) (vppState, error) {
	s := make(vppState)
	for _, n := range l.Nodes() {
		d, err := vppDump(n, "config/vpp/")
		if err != nil {
			return nil, err
		}
		s[n.Name] = d
	}
	return s, nil
}

// diff describes how s differs from want (empty when equal).
func (s vppState) diff(want vppState) string {
	var out []string
	for node, w := range want {
		g := s[node]
		for k, v := range w {
			switch gv, ok := g[k]; {
			case !ok:
				out = append(out, fmt.Sprintf("%s lacks %s", node, k))
			case gv != v:
				out = append(out, fmt.Sprintf("%s: %s is %s, was %s", node, k, gv, v))
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				out = append(out, fmt.Sprintf("%s has a new %s", node, k))
			}
		}
	}
	sort.Strings(out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("... %d more", len(out)-8))
	}
	return strings.Join(out, "; ")
}

// podIPs returns the IPs of the namespace's pods by name.
func podIPs(ctx context.Context, l *lab.Lab, ns string) (map[string]string, error) {
	list, err := l.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, p := range list.Items {
		out[p.Name] = p.Status.PodIP
	}
	return out, nil
}

// ksrLeader returns the identity of the elected contiv-ksr replica.
func ksrLeader(ctx context.Context, etcd *clientv3.Client) (string, error) {
	resp, err := etcd.Get(ctx, ksr.ElectionPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return "", fmt.Errorf("etcd get %s: %w", ksr.ElectionPrefix, err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("no contiv-ksr leader in %s", ksr.ElectionPrefix)
	}
	return string(resp.Kvs[0].Value), nil
}

func TestFaultsConvergeToTheSameVPPStateAndPodsKeepTheirIPs(t *testing.T) {
	l := sharedLab(t)
	ns := testNamespace(t, l, "faults")
	backends := podsOnEveryNode(t, l, ns, "ft", 1)
	svc := createService(t, l, ns, echoService("ft", "ft", corev1.ServiceTypeClusterIP, ""))
	waitServiceProgrammed(t, l, svc, len(backends))
	etcd := etcdClient(t, l)
	ctx := testCtx(t, 15*time.Minute)

	// Traffic, when the simulator forwards: a client pod on node1 to the Service, whose
	// backends are on every node.
	var traffic dialer
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	if l.NICBound {
		n1 := l.Nodes()[0].Name
		if _, err := l.Kube.CoreV1().Pods(ns).Create(ctx, echoPod("ftclient", "ftclient", n1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.WaitPodsReady(ctx, ns, "app=ftclient", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		traffic = podDialer(t, l, ns, "ftclient")
		testkit.Eventually(t, 60*time.Second, "traffic to "+addr, func() error { _, _, err := probe(traffic, addr, 2*time.Second); return err })
	} else {
		t.Log("no traffic during the faults: vpp-sim does not bind its NIC to the node's link (-nic NAME=LINUXIF)")
	}

	var before vppState
	testkit.Eventually(t, 30*time.Second, "a stable VPP state", func() error {
		a, err := dumpAll(l)
		if err != nil {
			return err
		}
		time.Sleep(time.Second) // real time: the state must hold still for a second
		b, err := dumpAll(l)
		if err != nil {
			return err
		}
		if d := b.diff(a); d != "" {
			return fmt.Errorf("still changing: %s", d)
		}
		before = b
		return nil
	})
	ipsBefore, err := podIPs(ctx, l, ns)
	if err != nil {
		t.Fatal(err)
	}

	node2 := l.Nodes()[1]
	faults := []struct {
		name   string
		inject func() error
	}{
		{"VPP restart on node2", func() error { return node2.RestartVPP(ctx) }},
		{"agent kill -9 and restart on node2", func() error {
			if err := node2.StopAgent(syscall.SIGKILL); err != nil {
				return err
			}
			return node2.StartAgent(ctx)
		}},
		{"Contiv etcd stopped for 30 s", func() error {
			if err := l.StopContivEtcd(); err != nil {
				return err
			}
			time.Sleep(30 * time.Second) // real time: the outage is what is tested
			return l.StartContivEtcd(ctx)
		}},
		{"kube-apiserver restart", func() error { return l.RestartAPIServer(ctx) }},
		{"contiv-ksr leader killed", func() error {
			leader, err := ksrLeader(ctx, etcd)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(l.KSR, func(p *lab.Process) bool { return p.Name == leader })
			if i < 0 {
				return fmt.Errorf("leader %q is none of the replicas", leader)
			}
			if err := l.KSR[i].Kill(); err != nil {
				return err
			}
			start := time.Now()
			err = testkit.Wait(ctx, 30*time.Second, "a new contiv-ksr leader", func() error {
				now, err := ksrLeader(ctx, etcd)
				if err == nil && now == leader {
					err = fmt.Errorf("%s still leads", leader)
				}
				return err
			})
			if err != nil {
				return err
			}
			t.Logf("contiv-ksr: leadership moved from %s in %v", leader, time.Since(start).Round(time.Millisecond))
			// The new leader reflects: a new Service reaches etcd.
			probeSvc := createService(t, l, ns, echoService("after-ksr-fault", "none", corev1.ServiceTypeClusterIP, ""))
			key := "/vnf-agent/contiv-ksr/k8s/service/" + probeSvc.Name + "/namespace/" + ns
			if err := testkit.Wait(ctx, 30*time.Second, "the new Service in etcd", func() error { return etcdHas(ctx, etcd, key, probeSvc.Spec.ClusterIP) }); err != nil {
				return err
			}
			if err := l.Kube.CoreV1().Services(ns).Delete(ctx, probeSvc.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			return l.KSR[i].Start()
		}},
	}
	for _, f := range faults {
		t.Run(strings.ReplaceAll(f.name, " ", "_"), func(t *testing.T) {
			var tl *trafficLoop
			if traffic != nil {
				tl = startTraffic(traffic, addr)
			}
			start := time.Now()
			if err := f.inject(); err != nil {
				if tl != nil {
					tl.stop()
				}
				t.Fatalf("%s: %v", f.name, err)
			}
			injected := time.Since(start)
			var last string
			err := testkit.Wait(ctx, 2*time.Minute, "every node's VPP state as before", func() error {
				now, err := dumpAll(l)
				if err != nil {
					return err
				}
				if last = now.diff(before); last != "" {
					return fmt.Errorf("%s", last)
				}
				return nil
			})
			converged := time.Since(start)
			if tl != nil {
				// Traffic is back once 10 connections in a row succeed.
				rerr := testkit.Wait(ctx, time.Minute, "10 connections in a row", func() error {
					for range 10 {
						if _, _, err := probe(traffic, addr, time.Second); err != nil {
							return err
						}
					}
					return nil
				})
				ok, failed, disturbed := tl.stop()
				t.Logf("%s: traffic disturbed for %v (%d failed, %d good connections)", f.name, disturbed.Round(time.Millisecond), failed, ok)
				if rerr != nil {
					t.Errorf("%s: traffic did not come back: %v", f.name, rerr)
				}
			}
			if err != nil {
				t.Fatalf("%s: VPP state differs from before the fault: %v", f.name, err)
			}
			t.Logf("%s: fault took %v, every node's VPP state as before after %v", f.name,
				injected.Round(time.Millisecond), converged.Round(time.Millisecond))
			ips, err := podIPs(ctx, l, ns)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(ips, ipsBefore) {
				t.Errorf("%s: pod IPs %v, were %v", f.name, ips, ipsBefore)
			}
		})
	}
}

func TestAFourthNodeJoinsAndLeaves(t *testing.T) {
	l := sharedLab(t)
	ctx := testCtx(t, 5*time.Minute)
	start := time.Now()
	n4, err := l.AddNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s joined with ID %d in %v", n4.Name, n4.ID, time.Since(start).Round(time.Millisecond))
	left := false
	t.Cleanup(func() {
		if !left {
			if err := l.RemoveNode(context.Background(), n4.Name); err != nil {
				t.Error(err)
			}
		}
	})
	testkit.Eventually(t, 60*time.Second, "a full VXLAN mesh of 4 nodes", func() error { return checkMesh(l.Nodes()) })

	if l.NICBound {
		ns := testNamespace(t, l, "join")
		pods := podsOnEveryNode(t, l, ns, "jn", 1)
		from := "jn-" + l.Nodes()[0].Name + "-0"
		to := pods["jn-"+n4.Name+"-0"]
		d := podDialer(t, l, ns, from)
		testkit.Eventually(t, 30*time.Second, from+" reaches the pod on "+n4.Name, func() error {
			pod, _, err := probe(d, net.JoinHostPort(to.Status.PodIP, "8080"), 2*time.Second)
			if err == nil && pod != to.Name {
				return fmt.Errorf("answered by %s", pod)
			}
			return err
		})
	} else {
		t.Log("no traffic to the new node: vpp-sim does not bind its NIC to the node's link (-nic NAME=LINUXIF)")
	}

	start = time.Now()
	if err := l.RemoveNode(ctx, n4.Name); err != nil {
		t.Fatal(err)
	}
	left = true
	t.Logf("%s removed in %v", n4.Name, time.Since(start).Round(time.Millisecond))
	nodes := l.Nodes()
	testkit.Eventually(t, 60*time.Second, "the mesh of the 3 remaining nodes, nothing left of "+n4.Name, func() error {
		if err := checkMesh(nodes); err != nil {
			return err
		}
		gone := []string{n4.IP.String(), n4.PodSubnet.String(), fmt.Sprintf("vxlan%d", n4.ID)}
		for _, n := range nodes {
			dump, err := vppDump(n, "config/vpp/")
			if err != nil {
				return err
			}
			for k, v := range dump {
				for _, g := range gone {
					if strings.Contains(k, g) || strings.Contains(v, `"`+g+`"`) {
						return fmt.Errorf("%s still has %s: %s", n.Name, k, v)
					}
				}
			}
		}
		return nil
	})
}
