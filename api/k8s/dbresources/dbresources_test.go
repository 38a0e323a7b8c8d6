package dbresources

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

func TestResourceTableMatchesUpstream(t *testing.T) {
	want := []struct {
		keyword, prefix, msg string
	}{
		{"vppnode", "allocatedIDs/", "contiv.ksr.vppnode.VppNode"},
		{"nodeconfig", "k8s/nodeconfig/", "contiv.ksr.nodeconfig.NodeConfig"},
		{"node", "k8s/node/", "contiv.ksr.node.Node"},
		{"pod", "k8s/pod/", "contiv.ksr.pod.Pod"},
		{"namespace", "k8s/namespace/", "contiv.ksr.namespace.Namespace"},
		{"policy", "k8s/policy/", "contiv.ksr.policy.Policy"},
		{"service", "k8s/service/", "contiv.ksr.service.Service"},
		{"endpoints", "k8s/endpoints/", "contiv.ksr.endpoints.Endpoints"},
		{"endpointslice", "k8s/endpointslice/", "contiv.ksr.endpointslice.EndpointSlice"},
		{"servicecidr", "k8s/servicecidr/", "contiv.ksr.servicecidr.ServiceCIDR"},
		{"ksrsync", "ksrsync/", "contiv.ksr.ksrsync.SyncMarker"},
	}
	got := GetDBResources()
	if len(got) != len(want) {
		t.Fatalf("%d resources, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Keyword != w.keyword || g.KeyPrefix != w.prefix || string(proto.MessageName(g.ValueType)) != w.msg {
			t.Errorf("resource %d = {%s %s %s}, want %v", i, g.Keyword, g.KeyPrefix, proto.MessageName(g.ValueType), w)
		}
	}
	if kw := Keywords(); !reflect.DeepEqual(kw, []string{"vppnode", "nodeconfig", "node", "pod", "namespace", "policy", "service", "endpoints", "endpointslice", "servicecidr", "ksrsync"}) {
		t.Errorf("Keywords = %v", kw)
	}
}

func TestGetDBResourcesReturnsIndependentCopies(t *testing.T) {
	a := GetDBResources()
	a[0].KeyPrefix = "changed/"
	if b := GetDBResources(); b[0].KeyPrefix != "allocatedIDs/" {
		t.Errorf("a caller's change leaked into the table: %q", b[0].KeyPrefix)
	}
}

func TestGetResourceByKey(t *testing.T) {
	tests := []struct {
		key     string
		keyword string // "" = not found
	}{
		{vppnode.Key(3), "vppnode"},
		{nodeconfig.Key("k8s-master"), "nodeconfig"},
		{node.Key("k8s-master"), "node"},
		{pod.Key("web", "default"), "pod"},
		{namespace.Key("default"), "namespace"},
		{policy.Key("deny-all", "default"), "policy"},
		{service.Key("web", "default"), "service"},
		{endpoints.Key("web", "default"), "endpoints"},
		{"k8s/nodes/x", ""},
		{"k8s/node/", ""},
		{"k8s/sfc/x", ""},
		{"/vnf-agent/contiv-ksr/k8s/pod/web/namespace/default", ""},
		{"", ""},
	}
	for _, tt := range tests {
		r, ok := GetResourceByKey(tt.key)
		switch {
		case tt.keyword == "" && ok:
			t.Errorf("%q: got resource %s, want none", tt.key, r.Keyword)
		case tt.keyword != "" && (!ok || r.Keyword != tt.keyword):
			t.Errorf("%q: got %v %v, want %s", tt.key, r, ok, tt.keyword)
		}
	}
}

func TestValuesRoundTripThroughTheEtcdEncoding(t *testing.T) {
	values := map[string]proto.Message{
		"vppnode":    &vppnode.VppNode{Id: 2, Name: "k8s-worker1", IpAddresses: []string{"192.168.16.2/24"}},
		"nodeconfig": &nodeconfig.NodeConfig{NodeName: "k8s-worker1", MainVppInterface: &nodeconfig.NodeConfig_InterfaceConfig{InterfaceName: "GigabitEthernet0/8/0", UseDhcp: true}},
		"node":       &node.Node{Name: "k8s-worker1", Addresses: []*node.NodeAddress{{Type: node.NodeAddress_NodeInternalIP, Address: "10.20.0.11"}}},
		"pod":        &pod.Pod{Name: "web", Namespace: "default", IpAddress: "10.1.1.3", Label: []*pod.Pod_Label{{Key: "app", Value: "web"}}},
		"namespace":  &namespace.Namespace{Name: "default"},
		"policy":     &policy.Policy{Name: "deny-all", Namespace: "default", PolicyType: policy.Policy_INGRESS},
		"service":    &service.Service{Name: "web", Namespace: "default", ClusterIp: "10.96.0.10", Selector: map[string]string{"app": "web"}},
		"endpoints":  &endpoints.Endpoints{Name: "web", Namespace: "default", EndpointSubsets: []*endpoints.EndpointSubset{{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "10.1.1.3"}}}}},
		"endpointslice": &endpointslice.EndpointSlice{Name: "web-x7k2p", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
			Endpoints: []*endpointslice.Endpoint{{Addresses: []string{"10.1.1.3"}, Ready: true, Serving: true}}},
		"servicecidr": &servicecidr.ServiceCIDR{Name: "kubernetes", Cidrs: []string{"10.96.0.0/12"}, Ready: true},
		"ksrsync":     &ksrsync.SyncMarker{Resource: "pod", ListedAfterUnixNano: 1700000000123456789, Leader: "ksr-0", Term: 42},
	}
	for _, r := range GetDBResources() {
		v := values[r.Keyword]
		data, err := Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", r.Keyword, err)
		}
		back, err := r.Unmarshal(data)
		if err != nil {
			t.Fatalf("%s: unmarshal %s: %v", r.Keyword, data, err)
		}
		if !proto.Equal(back, v) {
			t.Errorf("%s: got %v, want %v", r.Keyword, back, v)
		}
	}
}

func TestUnmarshalAcceptsUpstreamJSONAndUnknownFields(t *testing.T) {
	r, _ := GetResourceByKey(pod.Key("web", "default"))
	v, err := r.Unmarshal([]byte(`{"name":"web","namespace":"default","ip_address":"10.1.1.3","futureField":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := v.(*pod.Pod); p.GetIpAddress() != "10.1.1.3" {
		t.Errorf("got %v", p)
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	r, _ := GetResourceByKey(service.Key("web", "default"))
	for _, data := range []string{"", "not json", `{"port": "eighty"}`, "\x0a\x03web"} {
		if v, err := r.Unmarshal([]byte(data)); err == nil {
			t.Errorf("%q decoded to %v", data, v)
		}
	}
	if _, err := Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
}

func TestCheckKeyRejectsAValueNamedForAnotherKey(t *testing.T) {
	tests := []struct {
		keyword   string
		good, bad proto.Message
		key       string
		identity  string // of bad, as the error names it
	}{
		{"vppnode", &vppnode.VppNode{Id: 3, Name: "n"}, &vppnode.VppNode{Id: 4, Name: "n"}, vppnode.Key(3), "id 4"},
		{"nodeconfig", &nodeconfig.NodeConfig{NodeName: "n1"}, &nodeconfig.NodeConfig{NodeName: "n2"}, nodeconfig.Key("n1"), `node "n2"`},
		{"node", &node.Node{Name: "n1"}, &node.Node{Name: "n2"}, node.Key("n1"), `name "n2"`},
		{"pod", &pod.Pod{Name: "a", Namespace: "ns"}, &pod.Pod{Name: "a", Namespace: "other"}, pod.Key("a", "ns"), `name "a" in namespace "other"`},
		{"namespace", &namespace.Namespace{Name: "ns"}, &namespace.Namespace{Name: "ns2"}, namespace.Key("ns"), `name "ns2"`},
		{"policy", &policy.Policy{Name: "p", Namespace: "ns"}, &policy.Policy{Name: "q", Namespace: "ns"}, policy.Key("p", "ns"), `name "q" in namespace "ns"`},
		{"service", &service.Service{Name: "web", Namespace: "default"}, &service.Service{Name: "db", Namespace: "default"}, service.Key("web", "default"), `name "db" in namespace "default"`},
		{"endpoints", &endpoints.Endpoints{Name: "web", Namespace: "default"}, &endpoints.Endpoints{Namespace: "default"}, endpoints.Key("web", "default"), `name "" in namespace "default"`},
	}
	for _, tc := range tests {
		t.Run(tc.keyword, func(t *testing.T) {
			res, ok := GetResourceByKey(tc.key)
			if !ok || res.Keyword != tc.keyword {
				t.Fatalf("key %s: resource %v", tc.key, res)
			}
			if err := res.CheckKey(tc.key, tc.good); err != nil {
				t.Errorf("good value rejected: %v", err)
			}
			err := res.CheckKey(tc.key, tc.bad)
			if !errors.Is(err, ErrIdentityMismatch) {
				t.Fatalf("bad value: err %v, want ErrIdentityMismatch", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.identity) {
				t.Errorf("error %q does not name the key %s and the identity %s", msg, tc.key, tc.identity)
			}
			if err := res.CheckKey(tc.key, &emptypb.Empty{}); err == nil {
				t.Error("a value of another type was accepted")
			}
		})
	}
}

func TestCheckKeyOfAHandBuiltResourceUsesKeyOf(t *testing.T) {
	r := &DBResource{Keyword: "node", KeyPrefix: "k8s/node/", ValueType: &node.Node{},
		KeyOf: func(v proto.Message) (string, string, bool) {
			n, ok := v.(*node.Node)
			return node.Key(n.GetName()), "the node " + n.GetName(), ok
		}}
	if err := r.CheckKey(node.Key("a"), &node.Node{Name: "a"}); err != nil {
		t.Errorf("matching value: %v", err)
	}
	if err := r.CheckKey(node.Key("a"), &node.Node{Name: "b"}); !errors.Is(err, ErrIdentityMismatch) || !strings.Contains(err.Error(), "the node b") {
		t.Errorf("mismatching value: %v", err)
	}
}
