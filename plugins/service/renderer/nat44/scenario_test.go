package nat44

import (
	"slices"
	"strings"
	"testing"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	epmodel "github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/plugins/ksr/model/service"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
)

// One test per scenario of the upstream renderer tests (facts §7.8), each asserting
// the complete global configuration and every DNAT, plus packet traces through the
// committed configuration. Each runs twice (bothWays): once staging into a key-value
// store only, once also committing every transaction through the KV scheduler and the
// NAT descriptors into the VPP simulator, where every value must end up configured and
// every packet trace must agree with the simulator's own NAT lookup.

// bothWays runs a scenario without and with VPP.
func bothWays(t *testing.T, scenario func(t *testing.T, vppMode bool)) {
	t.Run("staged", func(t *testing.T) { scenario(t, false) })
	t.Run("vpp", func(t *testing.T) { scenario(t, true) })
}

func TestResyncAndSingleService(t *testing.T) { bothWays(t, resyncAndSingleService) }

func resyncAndSingleService(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode})

	// Startup resync without services: SNAT on the main interface (output feature)
	// with the node IP, the NAT loopback as twice-NAT address, VXLAN BVI and host
	// interconnect both in and out, pods only out (frontends).
	e.expectGlobal(global(pool(snatPool(nodeIP), twicePool(natLoop)),
		output(mainIf), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
	e.expectDNATs(identities(nodeIP))

	// The service arrives before its endpoints: nothing is rendered yet.
	svc := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	svc.ExternalIps = []string{"20.20.20.20"}
	changes, txn := e.putService(svc)
	if len(changes) != 0 || len(txn.Values) != 0 {
		t.Fatalf("service without endpoints staged %v %v", changes, txn.Keys())
	}

	// Endpoints: two local pods.
	eps := st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(pod2IP, "default", "pod2")}, st.EpPort("http", 8080, "TCP")))
	changes, _ = e.putEndpoints(eps)
	if want := []string{"add service 'default/nginx'", "update NAT backend interfaces"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
	}
	locals := []*vpp_nat.DNat44_StaticMapping_LocalIP{loc(pod1IP, 8080, podVRF, 1), loc(pod2IP, 8080, podVRF, 1)}
	e.expectDNATs(identities(nodeIP), dnat("default/nginx",
		mapping(tcp, "10.96.0.10", 80, self, locals...),
		mapping(tcp, "20.20.20.20", 80, enabled, locals...)))
	// The pods now back a service: both in and out.
	e.expectGlobal(global(pool(snatPool(nodeIP), twicePool(natLoop)),
		output(mainIf), in(pod1If), out(pod1If), in(pod2If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))

	// Packet traces.
	outcomes, why := e.trace(tcp, pod1IP+":40000", "10.96.0.10:80", pod1If)
	if got := st.Destinations(outcomes); !slices.Equal(got, []string{pod1IP + ":8080", pod2IP + ":8080"}) {
		t.Fatalf("pod1 -> cluster IP goes to %v (%s)", got, why)
	}
	for _, o := range outcomes {
		wantSrc := pod1IP + ":40000"
		if o.Dst.Addr().String() == pod1IP {
			wantSrc = natLoop + ":40000" // pod reaching itself: self-twice-NAT to the NAT loopback
		}
		if o.Src.String() != wantSrc || o.VRF != podVRF {
			t.Errorf("pod1 -> cluster IP: %s, want source %s in VRF %d", o, wantSrc, podVRF)
		}
	}
	outcomes, _ = e.trace(tcp, "8.8.8.8:5000", "20.20.20.20:80", mainIf)
	for _, o := range outcomes {
		if o.Src.Addr().String() != natLoop {
			t.Errorf("external client -> external IP: %s, want the source twice-NATed to %s", o, natLoop)
		}
	}
	if len(outcomes) != 2 {
		t.Errorf("external IP reaches %d backends, want 2", len(outcomes))
	}
	if outcomes, why := e.trace(udp, "8.8.8.8:5000", "10.96.0.10:80", mainIf); why != "no static mapping" {
		t.Errorf("UDP to a TCP service port: %v (%s)", outcomes, why)
	}

	// Port change.
	svc2 := st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 8000, 0))
	svc2.ExternalIps = []string{"20.20.20.20"}
	e.putService(svc2)
	e.expectDNATs(identities(nodeIP), dnat("default/nginx",
		mapping(tcp, "10.96.0.10", 8000, self, locals...),
		mapping(tcp, "20.20.20.20", 8000, enabled, locals...)))
	if _, why := e.trace(tcp, "8.8.8.8:5000", "10.96.0.10:80", mainIf); why != "no static mapping" {
		t.Errorf("old port still translated (%s)", why)
	}

	// Delete: endpoints first, then the service.
	changes, txn = e.deleteEndpoints("default", "nginx")
	if want := []string{"delete service 'default/nginx'", "update NAT backend interfaces"}; !slices.Equal(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
	}
	if v, staged := txn.Values[vpp_nat.DNAT44Key("default/nginx")]; !staged || v != nil {
		t.Errorf("the DNAT of the service is not staged for deletion: %v", txn.Keys())
	}
	e.expectDNATs(identities(nodeIP))
	e.expectGlobal(global(pool(snatPool(nodeIP), twicePool(natLoop)),
		output(mainIf), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
	if changes, _ := e.deleteService("default", "nginx"); len(changes) != 0 {
		t.Errorf("deleting an unrendered service staged %q", changes)
	}
}

func TestMultipleServicesWithMultiplePortsAndResync(t *testing.T) {
	bothWays(t, multipleServicesWithMultiplePortsAndResync)
}

func multipleServicesWithMultiplePortsAndResync(t *testing.T, vppMode bool) {
	web := st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 30080), st.Port("https", "TCP", 443, 30443))
	dns := st.Service("kube-system", "dns", "10.96.0.53", st.Port("dns", "UDP", 53, 0), st.Port("dns-tcp", "TCP", 53, 0))
	webEps := st.Endpoints("default", "web",
		st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""), st.EpPort("https", 8443, "")))
	dnsEps := st.Endpoints("kube-system", "dns",
		st.Subset([]st.Addr{st.PodAddr(remote1, "kube-system", "dns1"), st.PodAddr(remote2, "kube-system", "dns2")}, st.EpPort("dns", 5353, "UDP"), st.EpPort("dns-tcp", 5353, "TCP")))

	e := newEnv(t, envOptions{vpp: vppMode})
	e.putService(web)
	e.putEndpoints(webEps)
	e.putEndpoints(dnsEps)
	e.putService(dns)

	webHTTP := []*vpp_nat.DNat44_StaticMapping_LocalIP{loc(pod1IP, 8080, podVRF, 1), loc(remote1, 8080, podVRF, 1)}
	webHTTPS := []*vpp_nat.DNat44_StaticMapping_LocalIP{loc(pod1IP, 8443, podVRF, 1), loc(remote1, 8443, podVRF, 1)}
	dnsLocals := func(p uint32) []*vpp_nat.DNat44_StaticMapping_LocalIP {
		return []*vpp_nat.DNat44_StaticMapping_LocalIP{loc(remote1, p, podVRF, 1), loc(remote2, p, podVRF, 1)}
	}
	// Node ports on both nodes' VPP IPs and management IPs.
	nodeIPs := []string{nodeIP, hostIP, workerIP, workerMg}
	webDNAT := func(nodeIPs ...string) *vpp_nat.DNat44 {
		d := dnat("default/web", mapping(tcp, "10.96.0.20", 80, self, webHTTP...))
		for _, ip := range nodeIPs {
			d.StMappings = append(d.StMappings, mapping(tcp, ip, 30080, self, webHTTP...))
		}
		d.StMappings = append(d.StMappings, mapping(tcp, "10.96.0.20", 443, self, webHTTPS...))
		for _, ip := range nodeIPs {
			d.StMappings = append(d.StMappings, mapping(tcp, ip, 30443, self, webHTTPS...))
		}
		return d
	}
	dnsDNAT := dnat("kube-system/dns", mapping(udp, "10.96.0.53", 53, self, dnsLocals(5353)...), mapping(tcp, "10.96.0.53", 53, self, dnsLocals(5353)...))
	e.expectDNATs(identities(nodeIP), webDNAT(nodeIPs...), dnsDNAT)
	e.expectGlobal(global(pool(snatPool(nodeIP), twicePool(natLoop)),
		output(mainIf), in(pod1If), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))

	// A node port reaches the backends from every node IP, also through the worker's.
	for _, ip := range nodeIPs {
		outcomes, why := e.trace(tcp, "1.2.3.4:999", ip+":30443", mainIf)
		if got := st.Destinations(outcomes); !slices.Equal(got, []string{pod1IP + ":8443", remote1 + ":8443"}) {
			t.Errorf("node port on %s goes to %v (%s)", ip, got, why)
		}
	}
	outcomes, _ := e.trace(udp, pod2IP+":1000", "10.96.0.53:53", pod2If)
	if got := st.Destinations(outcomes); !slices.Equal(got, []string{remote1 + ":5353", remote2 + ":5353"}) {
		t.Errorf("DNS query goes to %v", got)
	}

	// A third node joins: the node-port services (only those) are re-rendered.
	e.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"})
	changes, txn := e.nodeUpdate("worker2", nil, e.nodes.Nodes["worker2"])
	if !slices.Equal(changes, []string{"update node-port services"}) || !slices.Equal(txn.Keys(), []string{vpp_nat.DNAT44Key("default/web")}) {
		t.Errorf("node update staged %q %v", changes, txn.Keys())
	}
	e.expectDNATs(identities(nodeIP), webDNAT(append(nodeIPs, "192.168.16.30")...), dnsDNAT)
	// A node update that does not change the node IPs stages nothing.
	if changes, _ := e.nodeUpdate("worker2", e.nodes.Nodes["worker2"], e.nodes.Nodes["worker2"]); len(changes) != 0 {
		t.Errorf("unchanged node IPs staged %q", changes)
	}

	// Resync equivalence: a resync of the same Kubernetes state, in this agent and in
	// a fresh one, produces exactly the configuration built incrementally.
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = web
	kube[svcmodel.Keyword][svcmodel.Key("dns", "kube-system")] = dns
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = webEps
	kube[epmodel.Keyword][epmodel.Key("dns", "kube-system")] = dnsEps
	incremental := e.dp.KVs
	e.resync(kube)
	equalKVs(t, incremental, e.dp.KVs)
	fresh := newEnv(t, envOptions{vpp: vppMode, kube: kube, nodes: func(f *env) { f.nodes.SetNode(3, "worker2", []string{"192.168.16.30/24"}) }})
	equalKVs(t, incremental, fresh.dp.KVs)
}

func TestWithVXLANButNoGateway(t *testing.T) { bothWays(t, withVXLANButNoGateway) }

func withVXLANButNoGateway(t *testing.T, vppMode bool) {
	const conf = `
mainVRFID: 1
podVRFID: 2
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
`
	e := newEnv(t, envOptions{vpp: vppMode, conf: conf})
	e.putService(st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 0)))
	e.putEndpoints(st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1")}, st.EpPort("http", 8080, ""))))

	// No gateway: no default interface, no SNAT; the main NIC is a plain frontend.
	e.expectGlobal(global(pool(twicePool(natLoop)),
		out(mainIf), in(pod1If), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
	e.expectDNATs(identities(""), dnat("default/nginx", mapping(tcp, "10.96.0.10", 80, self, loc(pod1IP, 8080, podVRF, 0))))
	if src := e.nat().SNAT(mustAddr(pod1IP), mainIf); src.String() != pod1IP {
		t.Errorf("pod traffic leaving %s gets source %s, want no SNAT", mainIf, src)
	}
	// A single backend reached from itself: source becomes the NAT loopback.
	outcomes, _ := e.trace(tcp, pod1IP+":1234", "10.96.0.10:80", pod1If)
	if len(outcomes) != 1 || outcomes[0].Src.Addr().String() != natLoop {
		t.Errorf("pod1 -> its own service: %v", outcomes)
	}
}

func TestWithoutNodeIP(t *testing.T) { bothWays(t, withoutNodeIP) }

func withoutNodeIP(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode, ipnet: func(e *env) { e.ipnet.NodeIP, e.ipnet.NodeNet = nil, nil }})
	// The gateway cannot be matched to an interface without the node's network.
	e.expectGlobal(global(pool(twicePool(natLoop)),
		out(mainIf), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
	e.expectDNATs(identities(""))
}

func TestWithoutVXLAN(t *testing.T) { bothWays(t, withoutVXLAN) }

func withoutVXLAN(t *testing.T, vppMode bool) {
	const conf = `
mainVRFID: 1
podVRFID: 2
useNoOverlay: true
natExternalTraffic: true
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  gateway: 192.168.16.1
`
	e := newEnv(t, envOptions{vpp: vppMode, conf: conf, ipnet: func(e *env) { e.ipnet.VxlanBVI = "" }})
	e.putService(st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 30080)))
	e.putEndpoints(st.Endpoints("default", "web", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))))

	// No overlay: the main NIC carries the pod traffic between nodes, so it is a
	// backend as well and is not SNATed; remote pods are reached in the main VRF.
	e.expectGlobal(global(pool(twicePool(natLoop)),
		in(mainIf), out(mainIf), in(pod1If), out(pod1If), out(pod2If), in(hostIf), out(hostIf)))
	locals := []*vpp_nat.DNat44_StaticMapping_LocalIP{loc(pod1IP, 8080, podVRF, 1), loc(remote1, 8080, mainVRF, 1)}
	d := dnat("default/web", mapping(tcp, "10.96.0.20", 80, self, locals...))
	for _, ip := range []string{nodeIP, hostIP, workerIP, workerMg} {
		d.StMappings = append(d.StMappings, mapping(tcp, ip, 30080, self, locals...))
	}
	e.expectDNATs(identities(""), d)
}

func TestWithOtherInterfaces(t *testing.T) { bothWays(t, withOtherInterfaces) }

func withOtherInterfaces(t *testing.T, vppMode bool) {
	const conf = `
mainVRFID: 1
podVRFID: 2
natExternalTraffic: true
ipamConfig:
  nodeInterconnectCIDR: 192.168.16.0/24
nodeConfig:
- nodeName: master
  mainVPPInterface:
    interfaceName: GbE
    ip: 192.168.16.10/24
  otherVPPInterfaces:
  - interfaceName: GbE2
    ip: 10.10.10.5/24
  gateway: 10.10.10.1
`
	e := newEnv(t, envOptions{vpp: vppMode, conf: conf})
	// The gateway lies in the other NIC's subnet: that NIC is the default interface.
	e.expectGlobal(global(pool(snatPool("10.10.10.5"), twicePool(natLoop)),
		out(mainIf), output(otherIf), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
	e.expectDNATs(identities("10.10.10.5"))

	nat := e.nat()
	if src := nat.SNAT(mustAddr(pod1IP), otherIf); src.String() != "10.10.10.5" {
		t.Errorf("pod traffic leaving %s gets source %s, want 10.10.10.5", otherIf, src)
	}
	if src := nat.SNAT(mustAddr(pod1IP), mainIf); src.String() != pod1IP {
		t.Errorf("pod traffic leaving %s gets source %s, want no SNAT", mainIf, src)
	}
	if _, why := e.trace(udp, workerIP+":1000", "10.10.10.5:4789", otherIf); !strings.HasPrefix(why, "identity mapping") {
		t.Errorf("VXLAN to the default interface's IP: %s, want an identity mapping", why)
	}
}

func TestServiceUpdates(t *testing.T) { bothWays(t, serviceUpdates) }

func serviceUpdates(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode, svcConf: &config.Config{ServiceLocalEndpointWeight: 3}})
	svc := st.Service("default", "app", "10.96.0.30", st.Port("http", "TCP", 80, 0))
	e.putService(svc)
	e.putEndpoints(st.Endpoints("default", "app", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1")}, st.EpPort("http", 8080, ""))))
	e.expectDNATs(identities(nodeIP), dnat("default/app", mapping(tcp, "10.96.0.30", 80, self, loc(pod1IP, 8080, podVRF, 0))))

	steps := []struct {
		name        string
		svc         *svcmodel.Service
		eps         *epmodel.Endpoints
		want        *vpp_nat.DNat44
		wantChanges []string
	}{
		{
			name:        "remote backend added: local weight applies",
			eps:         st.Endpoints("default", "app", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))),
			want:        dnat("default/app", mapping(tcp, "10.96.0.30", 80, self, loc(pod1IP, 8080, podVRF, 3), loc(remote1, 8080, podVRF, 1))),
			wantChanges: []string{"update service 'default/app'"},
		},
		{
			name: "external IP and ClientIP affinity added",
			svc: func() *svcmodel.Service {
				s := st.Service("default", "app", "10.96.0.30", st.Port("http", "TCP", 80, 0))
				s.ExternalIps, s.SessionAffinity, s.SessionAffinityTimeout = []string{"20.0.0.1"}, "ClientIP", 600
				return s
			}(),
			want: dnat("default/app",
				withAffinity(mapping(tcp, "10.96.0.30", 80, self, loc(pod1IP, 8080, podVRF, 3), loc(remote1, 8080, podVRF, 1)), 600),
				withAffinity(mapping(tcp, "20.0.0.1", 80, enabled, loc(pod1IP, 8080, podVRF, 3), loc(remote1, 8080, podVRF, 1)), 600)),
			wantChanges: []string{"update service 'default/app'"},
		},
		{
			name: "local backend replaced by a remote one",
			eps:  st.Endpoints("default", "app", st.Subset([]st.Addr{st.PodAddr(remote2, "default", "r2"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))),
			want: dnat("default/app",
				withAffinity(mapping(tcp, "10.96.0.30", 80, self, loc(remote2, 8080, podVRF, 1), loc(remote1, 8080, podVRF, 1)), 600),
				withAffinity(mapping(tcp, "20.0.0.1", 80, enabled, loc(remote2, 8080, podVRF, 1), loc(remote1, 8080, podVRF, 1)), 600)),
			wantChanges: []string{"update service 'default/app'", "update NAT backend interfaces"},
		},
		{
			name: "a not-ready address changes nothing",
			eps: st.Endpoints("default", "app", st.NotReady(st.Subset([]st.Addr{st.PodAddr(remote2, "default", "r2"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, "")),
				st.PodAddr(pod2IP, "default", "pod2"))),
			want: dnat("default/app",
				withAffinity(mapping(tcp, "10.96.0.30", 80, self, loc(remote2, 8080, podVRF, 1), loc(remote1, 8080, podVRF, 1)), 600),
				withAffinity(mapping(tcp, "20.0.0.1", 80, enabled, loc(remote2, 8080, podVRF, 1), loc(remote1, 8080, podVRF, 1)), 600)),
		},
		{
			name:        "all endpoints gone: the service keeps an empty DNAT",
			eps:         st.Endpoints("default", "app"),
			want:        dnat("default/app"),
			wantChanges: []string{"update service 'default/app'"},
		},
	}
	for _, step := range steps {
		var changes []string
		if step.svc != nil {
			changes, _ = e.putService(step.svc)
		} else {
			changes, _ = e.putEndpoints(step.eps)
		}
		if !slices.Equal(changes, step.wantChanges) {
			t.Errorf("%s: changes %q, want %q", step.name, changes, step.wantChanges)
		}
		if diff := st.ProtoDiff(step.want, e.nat().DNATs["default/app"]); diff != "" {
			t.Errorf("%s: DNAT (- want, + got):\n%s", step.name, diff)
		}
	}
	// No pod backs a service any more.
	e.expectGlobal(global(pool(snatPool(nodeIP), twicePool(natLoop)),
		output(mainIf), out(pod1If), out(pod2If), in(hostIf), out(hostIf), in(bviIf), out(bviIf)))
}

func TestWithSNATOnly(t *testing.T) { bothWays(t, withSNATOnly) }

func withSNATOnly(t *testing.T, vppMode bool) {
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("nginx", "default")] = st.Service("default", "nginx", "10.96.0.10", st.Port("http", "TCP", 80, 0))
	kube[epmodel.Keyword][epmodel.Key("nginx", "default")] = st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1")}, st.EpPort("http", 8080, "")))
	e := newEnv(t, envOptions{vpp: vppMode, snatOnly: true, kube: kube, svcConf: &config.Config{ServiceLocalEndpointWeight: 1, DisableNATVirtualReassembly: true}})

	// Only SNAT: forwarding, the SNAT address, the output feature, the identities.
	want := global(pool(snatPool(nodeIP)), output(mainIf))
	want.VirtualReassembly = &vpp_nat.VirtualReassembly{DropFragments: true}
	e.expectGlobal(want)
	e.expectDNATs(identities(nodeIP))

	// Service events stage nothing.
	e.putEndpoints(st.Endpoints("default", "nginx", st.Subset([]st.Addr{st.PodAddr(pod2IP, "default", "pod2")}, st.EpPort("http", 8080, ""))))
	changes, txn := e.addPod("pod3", pod3If)
	if len(changes) != 0 || len(txn.Values) != 0 {
		t.Errorf("snatOnly staged %q %v", changes, txn.Keys())
	}
	if src := e.nat().SNAT(mustAddr(pod1IP), mainIf); src.String() != nodeIP {
		t.Errorf("pod traffic leaving %s gets source %s, want %s", mainIf, src, nodeIP)
	}
}

func TestLocalServicePolicy(t *testing.T) { bothWays(t, localServicePolicy) }

func localServicePolicy(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode})
	svc := st.Service("default", "ingress", "10.96.0.40", st.Port("http", "TCP", 80, 30000))
	svc.ExternalTrafficPolicy, svc.ExternalIps = "Local", []string{"20.0.0.2"}
	e.putService(svc)
	e.putEndpoints(st.Endpoints("default", "ingress", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))))

	// Node-local: the remote backend is excluded everywhere, the external IP uses
	// self-twice-NAT (the client source is preserved).
	local := loc(pod1IP, 8080, podVRF, 0)
	d := dnat("default/ingress", mapping(tcp, "10.96.0.40", 80, self, local), mapping(tcp, "20.0.0.2", 80, self, local))
	for _, ip := range []string{nodeIP, hostIP, workerIP, workerMg} {
		d.StMappings = append(d.StMappings, mapping(tcp, ip, 30000, self, local))
	}
	e.expectDNATs(identities(nodeIP), d)
	outcomes, _ := e.trace(tcp, "7.7.7.7:3333", "20.0.0.2:80", mainIf)
	if len(outcomes) != 1 || outcomes[0].Src.String() != "7.7.7.7:3333" || outcomes[0].Dst.String() != pod1IP+":8080" {
		t.Errorf("external client -> node-local service: %v, want only the local pod with the client source kept", outcomes)
	}

	// No local backend: the mappings are dropped, the DNAT stays (empty).
	e.putEndpoints(st.Endpoints("default", "ingress", st.Subset([]st.Addr{st.PodAddr(remote1, "default", "r1")}, st.EpPort("http", 8080, ""))))
	e.expectDNATs(identities(nodeIP), dnat("default/ingress"))
}

func TestHostNetworkBackendsUseTheMainVRF(t *testing.T) {
	bothWays(t, hostNetworkBackendsUseTheMainVRF)
}

func hostNetworkBackendsUseTheMainVRF(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode})
	e.putService(st.Service("default", "kubernetes", "10.96.0.1", st.Port("https", "TCP", 443, 0)))
	// This node's own IP (the API server in the host network) and another node's.
	e.putEndpoints(st.Endpoints("default", "kubernetes", st.Subset([]st.Addr{st.IPAddr(nodeIP), st.IPAddr(workerIP)}, st.EpPort("https", 6443, ""))))
	e.expectDNATs(identities(nodeIP), dnat("default/kubernetes",
		mapping(tcp, "10.96.0.1", 443, self, loc(nodeIP, 6443, mainVRF, 1), loc(workerIP, 6443, podVRF, 1))))
}

func TestIPv6AddressesAreSkipped(t *testing.T) { bothWays(t, iPv6AddressesAreSkipped) }

func iPv6AddressesAreSkipped(t *testing.T, vppMode bool) {
	e := newEnv(t, envOptions{vpp: vppMode})
	svc := st.Service("default", "dual", "10.96.0.50", st.Port("http", "TCP", 80, 0))
	svc.ExternalIps = []string{"2001:db8::1", "20.0.0.3"}
	e.putService(svc)
	e.putEndpoints(st.Endpoints("default", "dual", st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr("fd00::5", "default", "v6")}, st.EpPort("http", 8080, ""))))
	e.expectDNATs(identities(nodeIP), dnat("default/dual",
		mapping(tcp, "10.96.0.50", 80, self, loc(pod1IP, 8080, podVRF, 0)),
		mapping(tcp, "20.0.0.3", 80, enabled, loc(pod1IP, 8080, podVRF, 0))))
}
