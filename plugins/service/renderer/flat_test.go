package renderer

import (
	"net"
	"testing"
)

func flatTestService() *ContivService {
	cs := NewContivService()
	cs.ID = ServiceID{Namespace: "default", Name: "web"}
	cs.TrafficPolicy, cs.SessionAffinityTimeout = NodeLocal, 30
	cs.ClusterIPs.Add(net.ParseIP("10.96.0.10"))
	cs.ExternalIPs.Add(net.ParseIP("192.0.2.1"))
	cs.Ports["http"] = &ServicePort{Protocol: TCP, Port: 80, NodePort: 30080}
	cs.Ports["dns"] = &ServicePort{Protocol: UDP, Port: 53}
	cs.Ports["idle"] = &ServicePort{Protocol: TCP, Port: 9000}
	cs.Backends["http"] = []*ServiceBackend{
		{IP: net.ParseIP("10.1.1.3"), Port: 8080, Local: true},
		{IP: net.ParseIP("10.1.2.3"), Port: 8080},
		{IP: net.ParseIP("192.168.16.20"), Port: 8443, HostNetwork: true},
	}
	cs.Backends["dns"] = []*ServiceBackend{{IP: net.ParseIP("10.1.2.4"), Port: 5353}}
	return cs
}

func TestFlatServiceConvertsToAndFromContivService(t *testing.T) {
	cs := flatTestService()
	fs := NewFlatService(cs)
	// A seed value (no ExternalBackends, no HasEndpoints) reads as upstream did:
	// external traffic of a NodeLocal service uses the local backends; a port has
	// endpoints when it has backends. The converted value then round-trips.
	back := fs.ContivService()
	if !NewFlatService(back).Equal(fs) || NewFlatService(back).ContivService().String() != back.String() {
		t.Fatalf("round trip:\n%s\nof\n%s", back, cs)
	}
	if ext := back.ExternalBackends["http"]; len(ext) != 1 || !ext[0].Local {
		t.Errorf("external backends of a NodeLocal seed service: %v, want the local one", ext)
	}
	if back.HasEndpoints["idle"] || !back.HasEndpoints["http"] {
		t.Errorf("HasEndpoints %v, want http but not idle", back.HasEndpoints)
	}
	// Ports in name order; backends grouped by consecutive target ports.
	if len(fs.Ports) != 3 || fs.Ports[0].Name != "dns" || fs.Ports[1].Name != "http" || fs.Ports[2].Name != "idle" {
		t.Fatalf("ports %+v, want dns, http, idle", fs.Ports)
	}
	http := fs.Ports[1].Backends
	if len(http) != 2 || http[0].TargetPort != 8080 || len(http[0].Endpoints) != 2 || http[1].TargetPort != 8443 {
		t.Errorf("http backends %+v, want 2 on 8080 then 1 on 8443", http)
	}
	if http[1].Endpoints[0].Text != "192.168.16.20" || !http[1].Endpoints[0].HostNetwork {
		t.Errorf("host-network backend %+v", http[1].Endpoints[0])
	}
	if fs.Ports[2].Backends != nil {
		t.Errorf("a port without backends has %+v", fs.Ports[2].Backends)
	}
	if !fs.HasNodePort() || !cs.HasNodePort() {
		t.Error("node port not seen")
	}
}

func TestFlatServiceEqualComparesEverythingRendered(t *testing.T) {
	base := NewFlatService(flatTestService())
	if !base.Equal(NewFlatService(flatTestService())) || !(*FlatService)(nil).Equal(nil) || base.Equal(nil) {
		t.Fatal("Equal of equal services (or nils) is false")
	}
	changes := map[string]func(cs *ContivService){
		"policy":       func(cs *ContivService) { cs.TrafficPolicy = ClusterWide },
		"affinity":     func(cs *ContivService) { cs.SessionAffinityTimeout = 0 },
		"cluster IP":   func(cs *ContivService) { cs.ClusterIPs = NewIPAddresses(net.ParseIP("10.96.0.11")) },
		"external IP":  func(cs *ContivService) { cs.ExternalIPs = NewIPAddresses() },
		"node port":    func(cs *ContivService) { cs.Ports["http"].NodePort = 0 },
		"target port":  func(cs *ContivService) { cs.Backends["dns"][0].Port = 53 },
		"backend IP":   func(cs *ContivService) { cs.Backends["dns"][0].IP = net.ParseIP("10.1.2.5") },
		"locality":     func(cs *ContivService) { cs.Backends["http"][1].Local = true },
		"host network": func(cs *ContivService) { cs.Backends["http"][0].HostNetwork = true },
		"backend gone": func(cs *ContivService) { cs.Backends["http"] = cs.Backends["http"][:2] },
		"port gone":    func(cs *ContivService) { delete(cs.Ports, "idle") },
	}
	for name, change := range changes {
		cs := flatTestService()
		change(cs)
		if base.Equal(NewFlatService(cs)) {
			t.Errorf("a change of %s is not seen", name)
		}
	}
}
