package nat44

import (
	"net/netip"
	"testing"

	epmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/config"
	st "github.com/contiv-vpp/contiv-vpp/plugins/service/internal/servicetest"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// TestVPPAffinityIsTheTimeoutMinusTwoSecondsAtLeastOne: with the recipe VPP's
// affinity is T - 2 s, never below 1 s (0 would turn affinity off); without it (no
// GoVPP channel to run the pass, or turned off) it is T.
func TestVPPAffinityIsTheTimeoutMinusTwoSecondsAtLeastOne(t *testing.T) {
	on := &Renderer{Deps: Deps{Config: config.DefaultConfig(), GoVPPChan: noChan{}}}
	off := &Renderer{Deps: Deps{Config: &config.Config{DisableAffinityTimeoutEnforcement: true}, GoVPPChan: noChan{}}}
	noPass := &Renderer{Deps: Deps{Config: config.DefaultConfig()}}
	for _, tc := range []struct{ timeout, on uint32 }{{0, 0}, {1, 1}, {2, 1}, {3, 1}, {4, 2}, {5, 3}, {10800, 10798}, {86400, 86398}} {
		if got := on.vppAffinity(tc.timeout); got != tc.on {
			t.Errorf("timeout %d: VPP's affinity %d, want %d", tc.timeout, got, tc.on)
		}
		if got := off.vppAffinity(tc.timeout); got != tc.timeout {
			t.Errorf("timeout %d, turned off: VPP's affinity %d", tc.timeout, got)
		}
		if got := noPass.vppAffinity(tc.timeout); got != tc.timeout {
			t.Errorf("timeout %d, no GoVPP channel: VPP's affinity %d", tc.timeout, got)
		}
	}
}

// noChan is a GoVPPChan that is never used.
type noChan struct{ GoVPPChan }

// TestAffinityPassDeletesOnlyEndedSessionsOfAffinityFrontends: the pass takes a
// session for one of a ClientIP Service's when its outside end is a cluster or
// external IP and port of it, or a node IP and its node port; it deletes it when it
// is idle for a second or more and timed out, or UDP.
func TestAffinityPassDeletesOnlyEndedSessionsOfAffinityFrontends(t *testing.T) {
	ip := func(s string) renderer.Address { return renderer.NewAddress(netip.MustParseAddr(s).AsSlice()) }
	svc := &renderer.FlatService{ID: renderer.ServiceID{Namespace: "default", Name: "web"}, SessionAffinityTimeout: 5,
		ClusterIPs: []renderer.Address{ip("10.96.0.50")}, ExternalIPs: []renderer.Address{ip("20.0.0.2")},
		Ports: []renderer.FlatPort{{Name: "http", Port: renderer.ServicePort{Protocol: renderer.TCP, Port: 80, NodePort: 30080},
			Backends: []renderer.BackendGroup{{TargetPort: 8080, Endpoints: []renderer.Endpoint{{Address: ip("10.1.1.3")}}}}}}}
	x := newAffinityIndex()
	x.set(svc.ID, affinityEntryOf(svc))
	x.setNode([]renderer.Address{ip("192.168.16.10")}, 1, 0)
	backends, m := x.snapshot()
	if len(backends) != 1 || backends[0] != netip.MustParseAddr("10.1.1.3") || len(m.vrfs) != 2 {
		t.Fatalf("backends %v, VRFs %v", backends, m.vrfs)
	}
	sess := func(outside string, proto uint8) natSession {
		return natSession{outside: netip.MustParseAddrPort(outside), proto: proto}
	}
	for _, tc := range []struct {
		s    natSession
		want bool
	}{
		{sess("10.96.0.50:80", protoTCP), true},
		{sess("20.0.0.2:80", protoTCP), true},
		{sess("192.168.16.10:30080", protoTCP), true},
		{sess("10.96.0.50:81", protoTCP), false},
		{sess("10.96.0.50:80", protoUDP), false},
		{sess("192.168.16.11:30080", protoTCP), false}, // not a node IP
		{sess("10.96.0.51:80", protoTCP), false},
	} {
		if got := m.has(tc.s); got != tc.want {
			t.Errorf("session to %s (proto %d): of the Service %v, want %v", tc.s.outside, tc.s.proto, got, tc.want)
		}
	}
	for _, tc := range []struct {
		s    natSession
		want bool
	}{
		{natSession{proto: protoTCP, idleFor: 1, timedOut: true}, true},
		{natSession{proto: protoTCP, idleFor: 0, timedOut: true}, false}, // is_timed_out may be early: VPP truncates
		{natSession{proto: protoTCP, idleFor: 100}, false},               // an idle open connection
		{natSession{proto: protoUDP, idleFor: 1}, true},
		{natSession{proto: protoUDP}, false},
	} {
		if got := ended(tc.s); got != tc.want {
			t.Errorf("%+v: ended %v, want %v", tc.s, got, tc.want)
		}
	}
	x.set(svc.ID, nil)
	if !x.empty() || len(x.backends) != 0 || len(x.frontends) != 0 {
		t.Errorf("after the Service went: %+v", x)
	}
}

// TestNATTimeoutsStagedOnlyWhileAClientIPServiceExists: a resync with a ClientIP
// Service stages tcp_transitory 1 s and VPP's affinity T - 2; a Service without
// affinity added next to it leaves nat44-global alone (the change costs the Service);
// deleting the last ClientIP Service stages nat44-global without timeouts.
func TestNATTimeoutsStagedOnlyWhileAClientIPServiceExists(t *testing.T) {
	web := st.Service("default", "web", "10.96.0.20", st.Port("http", "TCP", 80, 0))
	web.SessionAffinity, web.SessionAffinityTimeout = "ClientIP", 60
	kube := controller.NewKubeStateData(svcmodel.Keyword, epmodel.Keyword)
	kube[svcmodel.Keyword][svcmodel.Key("web", "default")] = web
	kube[epmodel.Keyword][epmodel.Key("web", "default")] = st.Endpoints("default", "web",
		st.Subset([]st.Addr{st.PodAddr(pod1IP, "default", "pod1"), st.PodAddr(pod2IP, "default", "pod2")}, st.EpPort("http", 8080, "")))
	e := newEnv(t, envOptions{})
	e.rndr.GoVPPChan = noChan{}
	e.resync(kube)
	global := func() *vpp_nat.Nat44Global { return e.dp.KVs[vpp_nat.GlobalNAT44Key].(*vpp_nat.Nat44Global) }
	if got := global().GetTimeouts(); got.GetTcpTransitory() != 1 || got.GetUdp() != 0 {
		t.Errorf("timeouts with a ClientIP Service: %v", got)
	}
	for _, m := range e.dp.KVs[vpp_nat.DNAT44Key("default/web")].(*vpp_nat.DNat44).GetStMappings() {
		if m.GetSessionAffinity() != 58 {
			t.Errorf("mapping %s: affinity %d, want 58", m.GetExternalIp(), m.GetSessionAffinity())
		}
	}

	api := st.Service("default", "api", "10.96.0.21", st.Port("http", "TCP", 80, 0))
	_, txn := e.update(&controller.KubeStateChange{Resource: svcmodel.Keyword, Key: svcmodel.Key("api", "default"), NewValue: api})
	if _, staged := txn.Values[vpp_nat.GlobalNAT44Key]; staged {
		t.Error("a Service without affinity re-staged nat44-global")
	}
	_, txn = e.deleteService("default", "web")
	if _, staged := txn.Values[vpp_nat.GlobalNAT44Key]; !staged || global().GetTimeouts() != nil {
		t.Errorf("after the last ClientIP Service: staged %v, timeouts %v", staged, global().GetTimeouts())
	}
}
