package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// The Services of the traffic tests (service CIDR 10.96.0.0/12 of the example cluster).
// Every responder listens on respPort; every Service forwards svcPort to it.
const (
	respPort      = 8080
	svcPort       = 80
	workerName    = "k8s-worker1" // the node of the remote endpoint (no agent runs there)
	remotePodIP   = "10.1.2.2"    // a pod of workerName
	nodePortWeb   = 30080
	nodePortLocal = 30081
)

// endpointSpec is an address of an Endpoints object.
type endpointSpec struct {
	ip, node, pod string
}

// serviceSpec is a Service with its Endpoints, TCP and UDP on svcPort -> respPort.
type serviceSpec struct {
	name      string
	clusterIP string
	nodePort  int  // 0: type ClusterIP
	local     bool // externalTrafficPolicy: Local
	affinity  bool // sessionAffinity: ClientIP
	endpoints []endpointSpec
}

// yamlDocs renders the Service and its Endpoints as two documents of a cluster file.
func (s serviceSpec) yamlDocs() []string {
	var b strings.Builder
	typ := "ClusterIP"
	if s.nodePort != 0 {
		typ = "NodePort"
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  type: %s\n  clusterIP: %s\n",
		s.name, typ, s.clusterIP)
	if s.local {
		b.WriteString("  externalTrafficPolicy: Local\n")
	}
	if s.affinity {
		b.WriteString("  sessionAffinity: ClientIP\n")
	}
	b.WriteString("  ports:\n")
	for _, proto := range []string{"TCP", "UDP"} {
		fmt.Fprintf(&b, "    - name: %s\n      protocol: %s\n      port: %d\n      targetPort: %d\n",
			strings.ToLower(proto), proto, svcPort, respPort)
		if s.nodePort != 0 {
			fmt.Fprintf(&b, "      nodePort: %d\n", s.nodePort)
		}
	}
	svc := b.String()

	b.Reset()
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: default\nsubsets:\n  - addresses:\n", s.name)
	for _, ep := range s.endpoints {
		fmt.Fprintf(&b, "      - ip: %s\n        nodeName: %s\n        targetRef:\n          kind: Pod\n          name: %s\n          namespace: default\n",
			ep.ip, ep.node, ep.pod)
	}
	b.WriteString("    ports:\n")
	for _, proto := range []string{"TCP", "UDP"} {
		fmt.Fprintf(&b, "      - name: %s\n        protocol: %s\n        port: %d\n", strings.ToLower(proto), proto, respPort)
	}
	return []string{svc, b.String()}
}

// workerNodeDoc is the second node of the cluster, where the remote endpoint runs; the
// standalone loader publishes its VPP address so that the agent builds the VXLAN to it.
const workerNodeDoc = `apiVersion: v1
kind: Node
metadata:
  name: ` + workerName + `
  annotations:
    standalone.contivpp.io/vpp-ip-addresses: 192.168.16.2/24
spec:
  podCIDR: 10.1.2.0/24
status:
  addresses:
    - type: InternalIP
      address: 10.20.0.11
`

// The renderers of IPv4 Services (contiv.conf serviceRenderer): the traffic tests of
// Services run with each.
const (
	rendererNAT44 = "nat44"
	rendererCnat  = "cnat"
)

// trafficContivConf is k8s/examples/contiv.conf with the node network's host as the
// default gateway (so that the NIC is the default interface and gets the NAT output
// feature: pods reach the outside through SNAT), the service CIDR routed from the
// host to VPP (routeServiceCIDRToVPP, the host reaches cluster IPs without kube-proxy)
// and serviceRenderer set to renderer.
func trafficContivConf(t *testing.T, e *env, renderer string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, "k8s", "examples", "contiv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(data)
	for old, repl := range map[string]string{
		"routeServiceCIDRToVPP: false\n": "routeServiceCIDRToVPP: true\n",
		"  vxlanCIDR: 192.168.30.0/24\n": "  vxlanCIDR: 192.168.30.0/24\n  defaultGateway: " + lanHostIP + "\n",
		"serviceRenderer: nat44\n":       "serviceRenderer: " + renderer + "\n",
	} {
		if !strings.Contains(conf, old) {
			t.Fatalf("k8s/examples/contiv.conf has no %q to replace", old)
		}
		conf = strings.Replace(conf, old, repl, 1)
	}
	return conf
}

// trafficNode is a node with its NIC on a node network, three pods with responders and
// the Services of the tests.
type trafficNode struct {
	*contivNode
	renderer string // contiv.conf serviceRenderer: rendererNAT44 or rendererCnat
	lan      *netns // the node network (an external host on it: lanHostIP)
	pods     map[string]*pod
	services map[string]serviceSpec
	podIPs   map[string]string
}

// startTrafficNode starts the node with the given renderer of IPv4 Services, wires p1,
// p2 and p3 through cnitool with a responder each, and loads the Services; it returns
// once the Services are rendered.
func startTrafficNode(t *testing.T, renderer, serviceConf string) *trafficNode {
	t.Helper()
	e := requireEnv(t)
	tn := &trafficNode{renderer: renderer, pods: map[string]*pod{}, podIPs: map[string]string{}}
	names := []string{"p1", "p2", "p3"}
	tn.contivNode = startContivNodeWith(t, e, nodeOptions{
		beforeSim:   func(ns *netns) { tn.lan = newNodeNetwork(t, e, ns) },
		nicLink:     nicLinkName,
		serviceConf: serviceConf,
		contivConf:  trafficContivConf(t, e, renderer),
	}, names...)
	for _, name := range names {
		p := tn.addPod(t, name)
		tn.pods[name] = p
		tn.podIPs[name] = p.ip
		startResponder(t, p.ns, name, respPort)
	}
	var ipam ipamData
	if err := tn.rest.getJSON("/contiv/v1/ipam", &ipam); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ipam.NodeIP, nodeVPPIP+"/") && ipam.NodeIP != nodeVPPIP {
		t.Fatalf("the node's VPP IP is %q, the tests expect %s", ipam.NodeIP, nodeVPPIP)
	}
	ep := func(pod string) endpointSpec { return endpointSpec{ip: tn.podIPs[pod], node: nodeName, pod: pod} }
	tn.services = map[string]serviceSpec{}
	for _, s := range []serviceSpec{
		{name: "web", clusterIP: "10.96.1.10", nodePort: nodePortWeb, endpoints: []endpointSpec{ep("p1"), ep("p2")}},
		{name: "local", clusterIP: "10.96.1.11", nodePort: nodePortLocal, local: true,
			endpoints: []endpointSpec{ep("p2"), {ip: remotePodIP, node: workerName, pod: "w1"}}},
		{name: "hairpin", clusterIP: "10.96.1.12", endpoints: []endpointSpec{ep("p1")}},
		{name: "sticky", clusterIP: "10.96.1.13", affinity: true, endpoints: []endpointSpec{ep("p1"), ep("p2"), ep("p3")}},
		{name: "shrink", clusterIP: "10.96.1.14", endpoints: []endpointSpec{ep("p2"), ep("p3")}},
	} {
		tn.services[s.name] = s
	}
	tn.applyServices(t)
	return tn
}

// applyServices rewrites the cluster file with the pods running and tn.services, and
// waits until the simulator has, for each cluster IP and protocol, a static mapping
// (NAT44) or a translation (cnat) whose backends include every local endpoint.
func (tn *trafficNode) applyServices(t *testing.T) {
	t.Helper()
	docs := []string{workerNodeDoc}
	for _, name := range []string{"web", "local", "hairpin", "sticky", "shrink"} {
		if s, ok := tn.services[name]; ok {
			docs = append(docs, s.yamlDocs()...)
		}
	}
	tn.extraDocs = docs
	tn.setClusterPods(tn.podIPs)
	testkit.Eventually(t, 20*time.Second, "the services are rendered in VPP", func() error {
		for _, s := range tn.services {
			for _, proto := range []string{"tcp", "udp"} {
				backends, cli, err := tn.serviceBackends(proto, s.clusterIP, svcPort)
				if err != nil {
					return err
				}
				if len(backends) == 0 {
					return fmt.Errorf("service %s: no %s %s for %s in:\n%s", s.name, proto, tn.serviceRuleName(), hostPort(s.clusterIP, svcPort), cli)
				}
				for _, ep := range s.endpoints {
					if want := hostPort(ep.ip, respPort); ep.node == nodeName && !slices.Contains(backends, want) {
						return fmt.Errorf("service %s: %s backend %s not in %v:\n%s", s.name, proto, want, backends, cli)
					}
				}
			}
		}
		return nil
	})
}

// serviceRuleName names what the renderer programs for a Service port.
func (tn *trafficNode) serviceRuleName() string {
	if tn.renderer == rendererCnat {
		return "cnat translation"
	}
	return "NAT44 static mapping"
}

// serviceBackends returns the backends ("ip:port") that the simulated VPP has for proto
// (tcp or udp) ip:port, read with the renderer's CLI: the locals of the NAT44 static
// mapping, or the paths' destinations of the cnat translation; and the CLI output.
func (tn *trafficNode) serviceBackends(proto, ip string, port int) ([]string, string, error) {
	if tn.renderer == rendererCnat {
		cli, err := tn.rest.vppCLI("show cnat translation")
		return translationBackends(cli, proto, ip, port), cli, err
	}
	cli, err := tn.rest.vppCLI("show nat44 static mappings")
	return mappingLocals(cli, proto, ip, port), cli, err
}

// waitBackends waits until the TCP rule of each cluster IP in want has exactly the one
// backend want[ip]:respPort.
func (tn *trafficNode) waitBackends(t *testing.T, what string, want map[string]string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, func() error {
		for ip, backend := range want {
			backends, cli, err := tn.serviceBackends("tcp", ip, svcPort)
			if err != nil {
				return err
			}
			if len(backends) != 1 || backends[0] != hostPort(backend, respPort) {
				return fmt.Errorf("the TCP %s of %s has the backends %v, want only %s:\n%s", tn.serviceRuleName(), ip, backends, backend, cli)
			}
		}
		return nil
	})
}

// translationBackends returns the backends ("ip:port") of the cnat translation of
// proto ip:port in the output of "show cnat translation" (VPP's
// format_cnat_translation, docs/dev-guide/VPP-FORWARDING.md §12): the header
// "[id] <vip>;<port> <PROTO> lb:... fhc:...", then per path "  <src>-><dst>" with the
// endpoints as "<ip>;<port>".
func translationBackends(cli, proto, ip string, port int) []string {
	head := fmt.Sprintf("%s;%d %s ", ip, port, strings.ToUpper(proto))
	var backends []string
	in := false
	for _, line := range strings.Split(cli, "\n") {
		if strings.HasPrefix(line, "[") {
			_, rest, _ := strings.Cut(line, "] ")
			in = strings.HasPrefix(rest, head)
			continue
		}
		_, dst, ok := strings.Cut(strings.TrimSpace(line), "->")
		if !in || !ok {
			continue
		}
		addr, p, ok := strings.Cut(dst, ";")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(p); err == nil {
			backends = append(backends, hostPort(addr, n))
		}
	}
	return backends
}

// mappingLocals returns the local addresses ("ip:port") of the static mapping of
// proto external ip:port in the output of "show nat44 static mappings": on the line of
// a static mapping, or on the lines under a load-balancing one.
func mappingLocals(cli, proto, ip string, port int) []string {
	ext := "external " + hostPort(ip, port)
	var locals []string
	in := false
	for _, line := range strings.Split(cli, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "local" && in:
			locals = append(locals, f[1])
		case len(f) >= 1 && (f[0] == "tcp" || f[0] == "udp"):
			in = false
			if f[0] == proto && (strings.Contains(line, ext+" ") || strings.HasSuffix(line, ext)) {
				if len(f) >= 3 && f[1] == "local" {
					locals = append(locals, f[2])
				} else {
					in = true
				}
			}
		default:
			in = false
		}
	}
	return locals
}

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// TestTrafficThroughTheSimulator sends real TCP and UDP traffic through the VPP state
// the agent programs: pods wired by cnitool, Services in the cluster file, the NIC of
// the simulated VPP bound to a veth whose peer stands for the node network. It runs
// once per renderer of IPv4 Services, in parallel (a node each); every subtest reaches
// the same backends with both, and asserts the cnat renderer's own behaviour where
// SERVICES.md ("The cnat renderer", differences table) says that it differs.
func TestTrafficThroughTheSimulator(t *testing.T) {
	t.Parallel()
	for _, renderer := range []string{rendererNAT44, rendererCnat} {
		t.Run(renderer, func(t *testing.T) {
			t.Parallel()
			testTrafficThroughTheSimulator(t, startTrafficNode(t, renderer, ""))
		})
	}
}

func testTrafficThroughTheSimulator(t *testing.T, tn *trafficNode) {
	p1, p2, p3 := tn.pods["p1"], tn.pods["p2"], tn.pods["p3"]

	t.Run("PodToPod", func(t *testing.T) {
		a := tn.expect(t, "TCP p1 -> p2", func() (answer, error) { return askTCP(p1.ns, hostPort(p2.ip, respPort)) }, "p2")
		if a.clientIP != p1.ip {
			t.Errorf("p2 saw the client %s, want p1's IP %s (no NAT between pods)", a.clientIP, p1.ip)
		}
		tn.expect(t, "UDP p2 -> p3", func() (answer, error) { return askUDP(p2.ns, hostPort(p3.ip, respPort)) }, "p3")
	})

	t.Run("PodToClusterIP", func(t *testing.T) {
		web := tn.services["web"]
		seen := map[string]int{}
		for i := 0; i < 20; i++ {
			a := tn.expect(t, "TCP p3 -> web", func() (answer, error) { return askTCP(p3.ns, hostPort(web.clusterIP, svcPort)) }, "p1", "p2")
			seen[a.name]++
			if a.clientIP != p3.ip {
				t.Errorf("the backend saw the client %s, want p3's IP %s", a.clientIP, p3.ip)
			}
		}
		if len(seen) != 2 {
			t.Errorf("20 connections to %s reached %v, want both backends p1 and p2", web.clusterIP, seen)
		}
		tn.expect(t, "UDP p3 -> web", func() (answer, error) { return askUDP(p3.ns, hostPort(web.clusterIP, svcPort)) }, "p1", "p2")
	})

	t.Run("Hairpin", func(t *testing.T) {
		svc := tn.services["hairpin"]
		a := tn.expect(t, "TCP p1 -> its own service", func() (answer, error) { return askTCP(p1.ns, hostPort(svc.clusterIP, svcPort)) }, "p1")
		if a.clientIP == p1.ip {
			t.Errorf("p1 saw its own IP as the client: the hairpin needs the source rewritten")
		}
		// Difference (SERVICES.md, "Hairpin with cnat"): NAT44 rewrites the source to
		// the NAT loopback (self-twice-NAT), cnat to the node's SNAT address (the
		// default interface's IPv4 with natExternalTraffic: the NIC's).
		if tn.renderer == rendererCnat && a.clientIP != nodeVPPIP {
			t.Errorf("p1 saw the client %s through its own service, want the SNAT address %s (cnat hairpin)", a.clientIP, nodeVPPIP)
		}
		tn.expect(t, "UDP p1 -> its own service", func() (answer, error) { return askUDP(p1.ns, hostPort(svc.clusterIP, svcPort)) }, "p1")
	})

	t.Run("HostToClusterIP", func(t *testing.T) {
		web := tn.services["web"]
		tn.expect(t, "TCP host -> web", func() (answer, error) { return askTCP(tn.ns, hostPort(web.clusterIP, svcPort)) }, "p1", "p2")
	})

	t.Run("NodePortCluster", func(t *testing.T) {
		addr := hostPort(nodeVPPIP, nodePortWeb)
		seen := map[string]int{}
		for i := 0; i < 20; i++ {
			a := tn.expect(t, "TCP external -> NodePort (Cluster)", func() (answer, error) { return askTCP(tn.lan, addr) }, "p1", "p2")
			seen[a.name]++
			// externalTrafficPolicy Cluster masquerades the client (kube-proxy). The
			// address differs (SERVICES.md, differences table): NAT44 uses the NAT
			// loopback (twice-NAT), cnat this node's IP.
			if a.clientIP == lanHostIP {
				t.Fatalf("%s saw the external client's IP %s: policy Cluster must masquerade it", a.name, lanHostIP)
			}
			if tn.renderer == rendererCnat && a.clientIP != nodeVPPIP {
				t.Fatalf("%s saw the client %s, want this node's IP %s (cnat masquerade)", a.name, a.clientIP, nodeVPPIP)
			}
		}
		if len(seen) != 2 {
			t.Errorf("20 connections to %s reached %v, want both backends p1 and p2", addr, seen)
		}
		tn.expect(t, "UDP external -> NodePort (Cluster)", func() (answer, error) { return askUDP(tn.lan, addr) }, "p1", "p2")
	})

	t.Run("NodePortLocal", func(t *testing.T) {
		addr := hostPort(nodeVPPIP, nodePortLocal)
		for i := 0; i < 10; i++ {
			// Only p2 is local; the other endpoint runs on the worker.
			a := tn.expect(t, "TCP external -> NodePort (Local)", func() (answer, error) { return askTCP(tn.lan, addr) }, "p2")
			if a.clientIP != lanHostIP {
				t.Fatalf("p2 saw the client %s, want the external client's IP %s (externalTrafficPolicy Local)", a.clientIP, lanHostIP)
			}
		}
		a := tn.expect(t, "UDP external -> NodePort (Local)", func() (answer, error) { return askUDP(tn.lan, addr) }, "p2")
		if a.clientIP != lanHostIP {
			t.Errorf("p2 saw the UDP client %s, want %s", a.clientIP, lanHostIP)
		}
	})

	t.Run("PodToNodeNetworkThroughSNAT", func(t *testing.T) {
		if tn.renderer == rendererCnat {
			t.Skip("cnat: pods reaching the node network keep their address (docs/dev-guide/SERVICES.md, the cnat renderer's differences: the node network is excluded from SNAT, " +
				"because cnat-snat cannot tell the reply of a NodePort flow translated on another node from a new flow)")
		}
		startResponder(t, tn.lan, "lan", respPort)
		a := tn.expect(t, "TCP p1 -> host on the node network", func() (answer, error) { return askTCP(p1.ns, hostPort(lanHostIP, respPort)) }, "lan")
		if a.clientIP != nodeVPPIP {
			t.Errorf("the external host saw the client %s, want the node IP %s (SNAT)", a.clientIP, nodeVPPIP)
		}
		a = tn.expect(t, "UDP p2 -> host on the node network", func() (answer, error) { return askUDP(p2.ns, hostPort(lanHostIP, respPort)) }, "lan")
		if a.clientIP != nodeVPPIP {
			t.Errorf("the external host saw the UDP client %s, want the node IP %s (SNAT)", a.clientIP, nodeVPPIP)
		}
	})

	t.Run("ClientIPAffinity", func(t *testing.T) {
		svc := tn.services["sticky"]
		var first string
		for i := 0; i < 10; i++ {
			a := tn.expect(t, "TCP p1 -> sticky", func() (answer, error) { return askTCP(p2.ns, hostPort(svc.clusterIP, svcPort)) }, "p1", "p2", "p3")
			if first == "" {
				first = a.name
			} else if a.name != first {
				t.Fatalf("connection %d reached %s, the first reached %s: ClientIP affinity must keep one backend", i+1, a.name, first)
			}
		}
	})

	t.Run("RemovedEndpointGetsNoNewConnections", func(t *testing.T) {
		svc := tn.services["shrink"]
		addr := hostPort(svc.clusterIP, svcPort)
		seen := map[string]int{}
		for i := 0; i < 20; i++ {
			a := tn.expect(t, "TCP p1 -> shrink", func() (answer, error) { return askTCP(p1.ns, addr) }, "p2", "p3")
			seen[a.name]++
		}
		if len(seen) != 2 {
			t.Fatalf("20 connections reached %v, want both p2 and p3 before the removal", seen)
		}
		svc.endpoints = svc.endpoints[:1] // p2 only
		tn.services["shrink"] = svc
		tn.applyServices(t)
		tn.waitBackends(t, "p3 leaves the service's backends", map[string]string{svc.clusterIP: p2.ip})
		for i := 0; i < 20; i++ {
			tn.expect(t, "TCP p1 -> shrink after removing p3", func() (answer, error) { return askTCP(p1.ns, addr) }, "p2")
			tn.expect(t, "UDP p1 -> shrink after removing p3", func() (answer, error) { return askUDP(p1.ns, addr) }, "p2")
		}
	})

	// The endpoints of two Services change in one write of the cluster: the changes
	// reach the agent together (the loop takes them as one batch when they are pending
	// at once) and connections go to the new backends of both.
	t.Run("EndpointsOfSeveralServicesChangedTogether", func(t *testing.T) {
		web, hairpin := tn.services["web"], tn.services["hairpin"]
		web.endpoints = []endpointSpec{{ip: p3.ip, node: nodeName, pod: "p3"}}
		hairpin.endpoints = []endpointSpec{{ip: p2.ip, node: nodeName, pod: "p2"}}
		tn.services["web"], tn.services["hairpin"] = web, hairpin
		before, err := tn.lastEventSeq()
		if err != nil {
			t.Fatal(err)
		}
		tn.applyServices(t)
		webAddr, hairpinAddr := hostPort(web.clusterIP, svcPort), hostPort(hairpin.clusterIP, svcPort)
		tn.waitBackends(t, "the old backends leave both services", map[string]string{web.clusterIP: p3.ip, hairpin.clusterIP: p2.ip})
		if tn.renderer == rendererCnat {
			// p1 reached p2 and p3 through shrink just before: with cnat a new flow
			// from a source port that such a live session used reaches its backend
			// but gets the answer from the other VIP (SourcePortReusedThroughAnotherService).
			// The new connections must not depend on the kernel's choice of port.
			tn.waitNoCnatSessions(t, "tcp", p1.ip)
		}
		for i := 0; i < 10; i++ {
			tn.expect(t, "TCP p1 -> web after the change", func() (answer, error) { return askTCP(p1.ns, webAddr) }, "p3")
			tn.expect(t, "TCP p1 -> hairpin after the change", func() (answer, error) { return askTCP(p1.ns, hairpinAddr) }, "p2")
		}
		if evs, err := tn.events(); err == nil {
			for _, ev := range evs {
				if ev.SeqNum > before {
					t.Logf("event #%d: %s", ev.SeqNum, strings.SplitN(ev.Description, "\n", 2)[0])
				}
			}
		}
	})

	// A client reaches one backend through two Services, one after the other, from
	// the same source port (the kernel may pick it again once the first connection
	// closed). NAT44 keeps a session per VIP; cnat keys the return session by the
	// backend's side only (backend -> client ports) and VPP 25.10 does not replace a
	// live one (cnat_node.h cnat_rsession_create adds "but don't overwrite" and gives
	// up without CNAT_SESSION_RETRY_SNAT, which cnat-input does not pass,
	// cnat_node_feature.c): the second connection's answer leaves with the first VIP
	// as its source and the client never completes it, until the first flow's session
	// expires (5 s after its FIN, cnat's TCP closing age).
	t.Run("SourcePortReusedThroughAnotherService", func(t *testing.T) {
		shrink, hairpin := tn.services["shrink"], tn.services["hairpin"]
		if len(shrink.endpoints) != 1 || len(hairpin.endpoints) != 1 || shrink.endpoints[0].ip != p2.ip || hairpin.endpoints[0].ip != p2.ip {
			t.Fatalf("the subtest needs shrink and hairpin with p2 as their only backend, have %v and %v", shrink.endpoints, hairpin.endpoints)
		}
		const port = 40123
		tn.expect(t, "TCP p1:40123 -> shrink", func() (answer, error) { return askTCPFromPort(p1.ns, port, hostPort(shrink.clusterIP, svcPort)) }, "p2")
		second := func() (answer, error) { return askTCPFromPort(p1.ns, port, hostPort(hairpin.clusterIP, svcPort)) }
		if tn.renderer == rendererNAT44 {
			tn.expect(t, "TCP p1:40123 -> hairpin", second, "p2")
			return
		}
		if a, err := second(); err == nil {
			t.Fatalf("TCP p1:40123 -> hairpin right after p1:40123 -> shrink was answered by %s: cnat would have replaced the first flow's return session", a.name)
		}
	})
}

// waitNoCnatSessions waits until cnat has no session of proto (tcp or udp) from or to ip.
func (tn *trafficNode) waitNoCnatSessions(t *testing.T, proto, ip string) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "the cnat sessions of "+ip+" expire", func() error {
		out, err := tn.rest.vppCLI("show cnat session")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(out, "\n") {
			key, _, _ := strings.Cut(line, "=>")
			if strings.Contains(key, ip+";") && strings.Contains(key, ", "+strings.ToUpper(proto)+"]") {
				return fmt.Errorf("a session of %s is left: %s", ip, strings.TrimSpace(line))
			}
		}
		return nil
	})
}

// TestTrafficIdleNATSessionsAreCleanedUp checks the renderer's cleanup of idle NAT
// sessions against real flows: with timeouts of one minute in service.conf, the
// sessions of a UDP and a TCP exchange with a Service are deleted within two cleanup
// periods. The simulator's own expiry (VPP's defaults: 5 minutes for UDP, 2 hours for
// established TCP) would not remove them that soon. NAT44 only: with cnat the options
// do not apply, cnat times its sessions out itself (SERVICES.md, differences table).
func TestTrafficIdleNATSessionsAreCleanedUp(t *testing.T) {
	t.Parallel()
	tn := startTrafficNode(t, rendererNAT44, "cleanupIdleNATSessions: true\ntcpNATSessionTimeout: 1\notherNATSessionTimeout: 1\n")
	p3 := tn.pods["p3"]
	web := tn.services["web"]
	tn.expect(t, "UDP p3 -> web", func() (answer, error) { return askUDP(p3.ns, hostPort(web.clusterIP, svcPort)) }, "p1", "p2")
	tn.expect(t, "TCP p3 -> web", func() (answer, error) { return askTCP(p3.ns, hostPort(web.clusterIP, svcPort)) }, "p1", "p2")
	sessionsOfP3 := func() (int, string, error) {
		out, err := tn.rest.vppCLI("show nat44 sessions")
		return strings.Count(out, "external host "+p3.ip+":"), out, err
	}
	n, out, err := sessionsOfP3()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("after a UDP and a TCP exchange, %d sessions of p3, want 2:\n%s", n, out)
	}
	start := time.Now()
	testkit.Eventually(t, 150*time.Second, "the idle sessions are deleted", func() error {
		n, out, err := sessionsOfP3()
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%d sessions of p3 left:\n%s", n, out)
		}
		return nil
	})
	t.Logf("the idle sessions were deleted %v after the exchanges", time.Since(start).Round(time.Second))
}
