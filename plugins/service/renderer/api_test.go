package renderer

import (
	"net"
	"strings"
	"testing"
)

func TestIPAddressesIsAnOrderedSet(t *testing.T) {
	a := NewIPAddresses(net.ParseIP("10.0.0.2"), net.ParseIP("10.0.0.1"), net.ParseIP("10.0.0.2").To4())
	if got := a.String(); got != "{10.0.0.2, 10.0.0.1}" {
		t.Errorf("set %s: duplicates (4- and 16-byte forms) must be one address", got)
	}
	c := a.Copy()
	c.Add(net.ParseIP("10.0.0.3"))
	c.Del(net.ParseIP("10.0.0.2"))
	c.Add(nil)
	if a.String() != "{10.0.0.2, 10.0.0.1}" || c.String() != "{10.0.0.1, 10.0.0.3}" {
		t.Errorf("copy not independent: %s %s", a, c)
	}
	if !a.Has(net.ParseIP("10.0.0.1")) || a.Has(net.ParseIP("10.0.0.3")) || a.Len() != 2 {
		t.Error("Has/Len wrong")
	}
	if a.Equal(c) || !a.Equal(a.Copy()) || !NewIPAddresses().Equal(nil) {
		t.Error("Equal wrong")
	}
	var nilSet *IPAddresses
	if nilSet.Len() != 0 || nilSet.Has(net.ParseIP("1.1.1.1")) || len(nilSet.List()) != 0 || nilSet.Copy().Len() != 0 {
		t.Error("nil set must behave as empty")
	}
}

func TestInterfacesSet(t *testing.T) {
	ifs := NewInterfaces("b", "a")
	c := ifs.Copy()
	c.Add("c")
	c.Del("a")
	if ifs.String() != "{a, b}" || c.String() != "{b, c}" || !c.Has("c") || c.Has("a") {
		t.Errorf("sets %s %s", ifs, c)
	}
}

func TestContivServiceDescribesItself(t *testing.T) {
	cs := NewContivService()
	cs.ID = ServiceID{Name: "nginx", Namespace: "default"}
	cs.ClusterIPs.Add(net.ParseIP("10.96.0.10"))
	cs.Ports["http"] = &ServicePort{Protocol: TCP, Port: 80, NodePort: 30080}
	cs.Ports["dns"] = &ServicePort{Protocol: UDP, Port: 53}
	cs.Backends["http"] = []*ServiceBackend{{IP: net.ParseIP("10.1.1.3"), Port: 8080, Local: true}, {IP: net.ParseIP("192.168.16.20"), Port: 8080, HostNetwork: true}}
	cs.TrafficPolicy, cs.SessionAffinityTimeout = NodeLocal, 60
	want := `ContivService default/nginx <TrafficPolicy:node-local SessionAffinityTimeout:60 ClusterIPs:{10.96.0.10} ExternalIPs:{} ` +
		`Ports:{"dns":53/UDP->[], "http":80:30080/TCP->[10.1.1.3:8080 local, 192.168.16.20:8080 host-network]}>`
	if got := cs.String(); got != want {
		t.Errorf("String()\n got  %s\n want %s", got, want)
	}
	if !cs.HasNodePort() {
		t.Error("HasNodePort false")
	}
	delete(cs.Ports, "http")
	if cs.HasNodePort() {
		t.Error("HasNodePort true without node ports")
	}
	if ClusterWide.String() != "cluster-wide" || TrafficPolicyType(7).String() != "TrafficPolicyType(7)" || ProtocolType(132).String() != "ProtocolType(132)" {
		t.Error("enum strings")
	}
	red := NewResyncEventData()
	red.Services = append(red.Services, cs)
	if s := red.String(); !strings.HasPrefix(s, "ResyncEventData <NodeIPs:{} FrontendIfs:{} BackendIfs:{} Services:1>\n * ContivService default/nginx") {
		t.Errorf("ResyncEventData.String() = %s", s)
	}
}
