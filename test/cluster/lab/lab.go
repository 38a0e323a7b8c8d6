package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The node network (the bridge) and the hosts on it besides the nodes.
const (
	// NodeNetwork is the node interconnect of contiv.conf: node N has .N on its VPP NIC.
	NodeNetwork = "192.168.16.0/24"
	// ClientIP is the external client's address on the node network.
	ClientIP = "192.168.16.200"
	// GatewayIP is the "internet" namespace on the node network, the nodes' default
	// gateway.
	GatewayIP = "192.168.16.254"
	// InternetIP stands for a server on the internet (in the "internet" namespace).
	InternetIP = "203.0.113.1"
	// bridgeName is the bridge of the node network, in the lab's network namespace.
	bridgeName = "br0"
)

// DefaultZones are the zones of the nodes by default: node1, node3, ... in zone-a,
// node2, node4, ... in zone-b.
var DefaultZones = []string{"zone-a", "zone-b"}

// K8sBinaries are the control-plane binaries the lab needs (scripts/k8s-control-plane.sh).
var K8sBinaries = []string{"kube-apiserver", "kube-controller-manager", "kubectl", "etcd"}

// ContivBinaries are the contiv-vpp binaries the lab needs (make build).
var ContivBinaries = []string{"contiv-agent", "contiv-cni", "contiv-ksr", "contiv-stn", "vpp-sim"}

// Config says what lab to start.
type Config struct {
	// Nodes is the number of nodes at start (default 3).
	Nodes int
	// K8sBinDir holds K8sBinaries.
	K8sBinDir string
	// ContivBinDir holds ContivBinaries (it is also contiv-cni's CNI_PATH).
	ContivBinDir string
	// Dir is the lab's directory (files, sockets, logs); empty means a new temporary
	// directory, removed by Close unless KeepDir.
	Dir string
	// KeepDir keeps the directory on Close (to read the logs).
	KeepDir bool
	// KSRReplicas is the number of contiv-ksr replicas (default 2).
	KSRReplicas int
	// KSRElectionTTL is contiv-ksr's leader lease (default 5s).
	KSRElectionTTL time.Duration
	// Zones are the nodes' zones (label topology.kubernetes.io/zone), given in turn:
	// node1 the first, node2 the second, ...; default DefaultZones.
	Zones []string
	// Logf receives the lab's progress and the kubelets' messages; nil discards them.
	Logf func(format string, args ...any)
	// SingleNIC makes every node single-NIC (singlenic.go): its only link carries the
	// node IP, contiv-stn hands it to VPP (contiv.conf stealInterface). Needs a vpp-sim
	// that binds NICs (NICBound).
	SingleNIC bool
	// IPFamily is the cluster's address families (family.go; "" is IPv4): the API
	// server's service ranges, the controller manager's pod ranges, contiv.conf's
	// ipamConfig, the node network's and the external client's addresses, the Nodes'
	// InternalIPs and podCIDRs and the pods' podIPs. Single-NIC nodes are IPv4 only.
	IPFamily IPFamily
	// ServiceRenderer is contiv.conf's serviceRenderer on every node (renderer.go; ""
	// is RendererNAT44): the renderer of IPv4 Services (IPv6 ones are always cnat's).
	ServiceRenderer ServiceRenderer
}

// Lab is a running cluster: a Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager), the Contiv etcd, contiv-ksr replicas, a scheduler stand-in and
// the nodes, with the external client and the "internet" on the node network.
type Lab struct {
	// Name is the prefix of everything the lab names on the host (network namespaces).
	Name string
	// Dir is the lab's directory.
	Dir string
	// Kubeconfig is a kubeconfig for kubectl (cluster admin).
	Kubeconfig string
	// Kubectl is the kubectl binary.
	Kubectl string
	// APIServer is the API server's URL.
	APIServer string
	// Kube is a client of the API server (cluster admin).
	Kube kubernetes.Interface
	// ContivEtcd is the client URL of the Contiv etcd (contiv-ksr's and the agents').
	ContivEtcd string
	// KSR are the contiv-ksr replicas.
	KSR []*Process
	// ClientNetns and InternetNetns are the namespaces of the external client and of the
	// internet.
	ClientNetns, InternetNetns string
	// NICBound tells whether vpp-sim binds the VPP NIC to the node's link (-nic
	// NAME=LINUXIF): only then do packets cross nodes.
	NICBound bool

	cfg        Config
	logf       func(format string, args ...any)
	cp         *controlPlane
	contivEtcd *etcdServer
	netNS      string
	sched      *scheduler
	lb         *lbAllocator
	cl         cleanups
	removeDir  bool

	mu        sync.Mutex
	nodes     []*Node
	nextIndex int
	closed    bool
	hostUp    hostUpHook  // single-NIC nodes: SetHostUpHook
	dhcp      *dhcpServer // single-NIC nodes: their addresses (dhcp.go)
}

// Start starts a lab; on failure everything it created is removed.
func Start(ctx context.Context, cfg Config) (l *Lab, err error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.KSRReplicas == 0 {
		cfg.KSRReplicas = 2
	}
	if len(cfg.Zones) == 0 {
		cfg.Zones = DefaultZones
	}
	if cfg.KSRElectionTTL == 0 {
		cfg.KSRElectionTTL = 5 * time.Second
	}
	family, err := ParseIPFamily(string(cfg.IPFamily))
	if err != nil {
		return nil, fmt.Errorf("lab: Config.IPFamily: %w", err)
	}
	cfg.IPFamily = family
	if cfg.ServiceRenderer, err = ParseServiceRenderer(string(cfg.ServiceRenderer)); err != nil {
		return nil, fmt.Errorf("lab: Config.ServiceRenderer: %w", err)
	}
	if cfg.SingleNIC && family != IPv4 {
		return nil, fmt.Errorf("lab: Config.IPFamily %q: single-NIC (STN) nodes are IPv4 only", family)
	}
	if err := CheckBinaries(cfg.K8sBinDir, cfg.ContivBinDir); err != nil {
		return nil, err
	}
	l = &Lab{cfg: cfg, logf: cfg.Logf, nextIndex: 1}
	if l.logf == nil {
		l.logf = func(string, ...any) {}
	}
	if swept, err := SweepStale(); err != nil {
		l.logf("lab: removing what crashed labs left: %v", err)
	} else if len(swept) > 0 {
		l.logf("lab: removed what crashed labs left: %v", swept)
	}
	id, err := randomHex(3)
	if err != nil {
		return nil, err
	}
	l.Name = "ctvlab-" + id
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			l = nil
		}
	}()
	if cfg.Dir == "" {
		if l.Dir, err = os.MkdirTemp("", l.Name+"-"); err != nil {
			return l, err
		}
		l.removeDir = !cfg.KeepDir
	} else {
		l.Dir = cfg.Dir
		if err := os.MkdirAll(l.Dir, 0o755); err != nil {
			return l, err
		}
	}
	removable := ""
	if l.removeDir {
		removable = l.Dir
	}
	if err := registerLab(l.Name, removable); err != nil {
		return l, err
	}
	l.cl.add("lab registry entry", func() error { return unregisterLab(l.Name) })
	l.Kubectl = filepath.Join(cfg.K8sBinDir, "kubectl")
	if l.NICBound, err = simBindsNICs(filepath.Join(cfg.ContivBinDir, "vpp-sim")); err != nil {
		return l, err
	}
	if cfg.SingleNIC && !l.NICBound {
		return l, errors.New("single-NIC nodes need a vpp-sim that binds its NIC to a Linux link (-nic NAME=LINUXIF)")
	}
	start := time.Now()

	// The control plane starts while the network and the Contiv etcd are set up.
	type cpResult struct {
		cp  *controlPlane
		err error
	}
	cpDone := make(chan cpResult, 1)
	go func() {
		cp, err := startControlPlane(ctx, cfg.K8sBinDir, l.Dir, cfg.IPFamily, &l.cl)
		cpDone <- cpResult{cp, err}
	}()
	netErr := l.setupNetwork()
	if netErr == nil && cfg.SingleNIC {
		netErr = l.startDHCP()
	}
	var etcdErr error
	if netErr == nil {
		l.contivEtcd, etcdErr = startEtcd(ctx, cfg.K8sBinDir, filepath.Join(l.Dir, "etcd-contiv"), "etcd-contiv")
		if l.contivEtcd != nil {
			ce := l.contivEtcd
			l.cl.add("etcd for Contiv", func() error { return ce.proc.Stop(syscall.SIGTERM, 10*time.Second) })
			l.ContivEtcd = ce.ClientURL
		}
	}
	res := <-cpDone
	if err := errors.Join(res.err, netErr, etcdErr); err != nil {
		return l, err
	}
	l.cp = res.cp
	l.APIServer, l.Kubeconfig = l.cp.URL, l.cp.Kubeconfig
	if l.Kube, err = l.cp.client(); err != nil {
		return l, err
	}
	l.logf("lab %s: control plane and Contiv etcd up in %v", l.Name, time.Since(start).Round(time.Millisecond))

	if err := l.startKSR(ctx); err != nil {
		return l, err
	}
	l.sched = &scheduler{kube: l.Kube, nodes: l.schedulableNodes, logf: l.logf}
	l.cl.add("scheduler", func() error { l.sched.stop(); return nil })
	if err := l.sched.start(ctx); err != nil {
		return l, err
	}
	l.lb = &lbAllocator{kube: l.Kube, pool: netip.MustParsePrefix(LBPoolCIDR), logf: l.logf}
	l.cl.add("LoadBalancer allocator", func() error { l.lb.stop(); return nil })
	if err := l.lb.start(ctx); err != nil {
		return l, err
	}

	// Nodes one after the other up to their IDs (node1 gets ID 1, ...), then they get
	// ready in parallel.
	for range cfg.Nodes {
		if _, err := l.addNode(ctx); err != nil {
			return l, err
		}
	}
	if err := l.waitNodesReady(ctx, l.Nodes()); err != nil {
		return l, err
	}
	l.logf("lab %s: %d nodes ready in %v", l.Name, cfg.Nodes, time.Since(start).Round(time.Millisecond))
	return l, nil
}

// ServiceRenderer returns the renderer of IPv4 Services the lab's nodes start with.
func (l *Lab) ServiceRenderer() ServiceRenderer { return l.cfg.ServiceRenderer }

// IPFamily returns the lab's address families.
func (l *Lab) IPFamily() IPFamily { return l.cfg.IPFamily }

// CheckBinaries returns an error naming the binaries missing from the two directories.
func CheckBinaries(k8sBinDir, contivBinDir string) error {
	var missing []string
	for _, set := range []struct {
		dir   string
		names []string
	}{{k8sBinDir, K8sBinaries}, {contivBinDir, ContivBinaries}} {
		for _, b := range set.names {
			p := filepath.Join(set.dir, b)
			if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lab: missing binaries: %s", strings.Join(missing, ", "))
	}
	return nil
}

// simBindsNICs tells whether vpp-sim can bind a NIC to a Linux link (-nic NAME=LINUXIF),
// from its usage text.
func simBindsNICs(bin string) (bool, error) {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	if !strings.Contains(string(out), "-nic") {
		return false, fmt.Errorf("%s -h: no -nic flag in its usage: %s", bin, out)
	}
	return strings.Contains(string(out), "LINUXIF"), nil
}

// setupNetwork creates the bridge namespace, the client and the internet.
func (l *Lab) setupNetwork() error {
	l.netNS = l.Name + "-net"
	l.ClientNetns = l.Name + "-client"
	l.InternetNetns = l.Name + "-inet"
	if err := addNetns(l.netNS); err != nil {
		return err
	}
	l.cl.add("netns "+l.netNS, func() error { return deleteNetns(l.netNS) })
	if err := runIP("-n", l.netNS, "link", "add", bridgeName, "type", "bridge"); err != nil {
		return err
	}
	if err := runIP("-n", l.netNS, "link", "set", bridgeName, "up"); err != nil {
		return err
	}
	for _, h := range []struct {
		ns, port, addr, addr6 string
	}{{l.ClientNetns, "client", ClientIP, ClientIPv6}, {l.InternetNetns, "inet", GatewayIP, GatewayIPv6}} {
		if err := addNetns(h.ns); err != nil {
			return err
		}
		ns := h.ns
		l.cl.add("netns "+ns, func() error { return deleteNetns(ns) })
		cmds := [][]string{
			{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", h.port, "netns", l.netNS},
			{"-n", l.netNS, "link", "set", h.port, "master", bridgeName, "up"},
			{"-n", ns, "addr", "add", h.addr + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
		}
		if l.cfg.IPFamily.HasIPv6() { // no duplicate address detection: the lab knows its addresses are unique
			cmds = append(cmds, []string{"-n", ns, "addr", "add", h.addr6 + "/64", "dev", "eth0", "nodad"})
		}
		for _, c := range cmds {
			if err := runIP(c...); err != nil {
				return err
			}
		}
	}
	return runIP("-n", l.InternetNetns, "addr", "add", InternetIP+"/32", "dev", "lo")
}

// startKSR starts the contiv-ksr replicas and waits until one leads and has reflected.
func (l *Lab) startKSR(ctx context.Context) error {
	dir := filepath.Join(l.Dir, "ksr")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	etcdConf := filepath.Join(dir, "etcd.conf")
	if err := os.WriteFile(etcdConf, []byte("endpoints:\n  - "+strings.TrimPrefix(l.ContivEtcd, "http://")+"\n"), 0o644); err != nil {
		return err
	}
	for i := 1; i <= l.cfg.KSRReplicas; i++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		httpConf := filepath.Join(dir, fmt.Sprintf("http-%d.conf", i))
		if err := os.WriteFile(httpConf, []byte("endpoint: 127.0.0.1:"+strconv.Itoa(port)+"\n"), 0o644); err != nil {
			return err
		}
		name := fmt.Sprintf("contiv-ksr-%d", i)
		p := newProcess(name, filepath.Join(dir, name+".log"), "", []string{"POD_NAME=" + name},
			filepath.Join(l.cfg.ContivBinDir, "contiv-ksr"),
			"-kube-config", l.Kubeconfig, "-etcd-config", etcdConf, "-http-config", httpConf,
			"-election-ttl", l.cfg.KSRElectionTTL.String())
		l.cl.add(name, func() error { return p.Stop(syscall.SIGTERM, 15*time.Second) })
		if err := p.Start(); err != nil {
			return err
		}
		l.KSR = append(l.KSR, p)
	}
	return nil
}

// schedulableNodes returns the names of the nodes whose kubelet runs.
func (l *Lab) schedulableNodes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for _, n := range l.nodes {
		names = append(names, n.Name)
	}
	return names
}

// Nodes returns the lab's nodes in the order they joined.
func (l *Lab) Nodes() []*Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.nodes)
}

// Node returns the named node, nil if there is none.
func (l *Lab) Node(name string) *Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// AddNode starts one more node and waits until its agent is ready.
func (l *Lab) AddNode(ctx context.Context) (*Node, error) {
	n, err := l.addNode(ctx)
	if err != nil {
		return nil, err
	}
	if err := n.WaitReady(ctx, 90*time.Second); err != nil {
		return n, err
	}
	return n, nil
}

func (l *Lab) addNode(ctx context.Context) (*Node, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("lab: closed")
	}
	index := l.nextIndex
	l.nextIndex++
	l.mu.Unlock()
	start := time.Now()
	n, err := l.startNode(ctx, index)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.nodes = append(l.nodes, n)
	l.mu.Unlock()
	if err := l.routeClient(n, true); err != nil {
		return nil, err
	}
	l.logf("lab %s: %s up with ID %d, IP %s, pod subnet %s in %v", l.Name, n.Name, n.ID, n.IP, n.PodSubnet,
		time.Since(start).Round(time.Millisecond))
	return n, nil
}

func (l *Lab) waitNodesReady(ctx context.Context, nodes []*Node) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.WaitReady(ctx, 90*time.Second) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// RemoveNode takes a node out as an operator would: its pods are deleted (and torn down
// by its kubelet, CNI DEL included), the Node object is deleted, then the node's
// processes stop and its namespace goes.
func (l *Lab) RemoveNode(ctx context.Context, name string) error {
	n := l.Node(name)
	if n == nil {
		return fmt.Errorf("lab: no node %q", name)
	}
	l.mu.Lock()
	l.nodes = slices.DeleteFunc(l.nodes, func(x *Node) bool { return x == n })
	l.mu.Unlock()
	pods, err := l.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("remove node %s: list its pods: %w", name, err)
	}
	for _, p := range pods.Items {
		err := l.Kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove node %s: delete pod %s/%s: %w", name, p.Namespace, p.Name, err)
		}
	}
	err = testkit.Wait(ctx, 60*time.Second, "pods of "+name+" gone", func() error {
		left, err := l.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if err != nil {
			return err
		}
		if len(left.Items) > 0 {
			return fmt.Errorf("%d pods left", len(left.Items))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove node %s: %w", name, err)
	}
	if err := n.kubelet.stop(true); err != nil {
		return fmt.Errorf("remove node %s: %w", name, err)
	}
	if err := l.routeClient(n, false); err != nil {
		return fmt.Errorf("remove node %s: %w", name, err)
	}
	err = l.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove node %s: delete Node: %w", name, err)
	}
	return n.cl.run()
}

// StopContivEtcd stops the Contiv etcd (a fault); StartContivEtcd starts it again.
func (l *Lab) StopContivEtcd() error {
	return l.contivEtcd.proc.Stop(syscall.SIGTERM, 10*time.Second)
}

// StartContivEtcd starts the Contiv etcd again with its data and waits until it is healthy.
func (l *Lab) StartContivEtcd(ctx context.Context) error { return l.contivEtcd.start(ctx) }

// RestartAPIServer stops kube-apiserver and starts it again.
// kube-apiserver stops listening at once on SIGTERM but then waits up to 60 s for open
// watches before it exits: after 3 s it is killed (its state is in etcd).
func (l *Lab) RestartAPIServer(ctx context.Context) error {
	_ = l.cp.apiserver.Stop(syscall.SIGTERM, 3*time.Second)
	return l.cp.startAPIServer(ctx)
}

// EnsureNamespace creates a namespace (if needed) and waits for its default
// ServiceAccount, which Pods need.
func (l *Lab) EnsureNamespace(ctx context.Context, name string) error {
	return ensureNamespace(ctx, l.Kube, name)
}

// PodNetns returns the network namespace and IP of a running pod, wherever it runs.
func (l *Lab) PodNetns(namespace, name string) (node *Node, netns string, ok bool) {
	for _, n := range l.Nodes() {
		if ns, _, ok := n.PodNetns(namespace, name); ok {
			return n, ns, true
		}
	}
	return nil, "", false
}

// WaitPodsReady waits until the pods of the namespace matching the selector number want
// and all are Ready with an IP.
func (l *Lab) WaitPodsReady(ctx context.Context, namespace, selector string, want int, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := testkit.Wait(ctx, timeout, fmt.Sprintf("%d ready pods %q in %s", want, selector, namespace), func() error {
		list, err := l.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && p.Status.PodIP != "" {
				ready++
			}
		}
		if len(list.Items) != want || ready != want {
			return fmt.Errorf("%d pods, %d ready", len(list.Items), ready)
		}
		pods = list.Items
		return nil
	})
	return pods, err
}

// Close stops everything and removes every namespace, link, process and file the lab
// created; it returns what could not be removed.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	nodes := l.nodes
	l.nodes = nil
	l.mu.Unlock()
	var errs []error
	// The nodes first (in parallel: each stops its kubelet, agent and simulator).
	nodeErrs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { nodeErrs[i] = n.cl.run() })
	}
	wg.Wait()
	errs = append(errs, nodeErrs...)
	errs = append(errs, l.cl.run())
	if l.removeDir {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// routeClient routes, in the external client's namespace, the node's pod subnet to the
// node (added, or removed when the node leaves) and ServiceIngressCIDR (LoadBalancer and
// external IPs) to every node of the lab, equal-cost multipath.
func (l *Lab) routeClient(n *Node, joins bool) error {
	routes := map[string]net.IP{n.PodSubnet.String(): n.IP}
	if n.PodSubnetIPv6 != nil {
		routes[n.PodSubnetIPv6.String()] = n.IPv6
	}
	for subnet, via := range routes {
		if joins {
			if err := runIP("-n", l.ClientNetns, "route", "replace", subnet, "via", via.String()); err != nil {
				return err
			}
		} else if err := runIP("-n", l.ClientNetns, "route", "del", subnet); err != nil {
			return err
		}
	}
	if !l.cfg.IPFamily.HasIPv4() {
		return nil // ServiceIngressCIDR is IPv4
	}
	nodes := l.Nodes()
	if !joins {
		nodes = slices.DeleteFunc(nodes, func(o *Node) bool { return o == n })
	}
	if len(nodes) == 0 {
		return runIP("-n", l.ClientNetns, "route", "del", ServiceIngressCIDR)
	}
	args := []string{"-n", l.ClientNetns, "route", "replace", ServiceIngressCIDR}
	for _, o := range nodes {
		args = append(args, "nexthop", "via", o.IP.String())
	}
	return runIP(args...)
}
