package pbjson_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/gofeaturespb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/nodeconfig"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	interfaces "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/pbjson"
)

func decoder(t *testing.T, m proto.Message) *pbjson.Decoder {
	t.Helper()
	d, err := pbjson.NewDecoder(m.ProtoReflect().Type())
	if err != nil {
		t.Fatalf("NewDecoder(%T): %v", m, err)
	}
	return d
}

// TestDecodeAccepts: inputs on the fast path decode to what protojson (DiscardUnknown)
// gives, which the table also states.
func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want proto.Message
	}{
		{"empty object", `{}`, &service.Service{}},
		{"whitespace everywhere", " \t\r\n{ \"name\" :\n\"web\" , \"namespace\":\"ns\"\t}\n ", &service.Service{Name: "web", Namespace: "ns"}},
		{"JSON and proto names", `{"clusterIp":"10.96.0.1","session_affinity":"None","lb_ingress_ips":["1.1.1.1"]}`,
			&service.Service{ClusterIp: "10.96.0.1", SessionAffinity: "None", LbIngressIps: []string{"1.1.1.1"}}},
		{"names with capitals", `{"podCIDR":"10.1.0.0/24","provider_ID":"p","nodeInfo":{"machineID":"m","system_UUID":"u"}}`,
			&node.Node{Pod_CIDR: "10.1.0.0/24", Provider_ID: "p", NodeInfo: &node.NodeSystemInfo{Machine_ID: "m", System_UUID: "u"}}},
		{"null fields are skipped", `{"name":null,"port":null,"selector":null,"externalIps":null,"sessionAffinityTimeout":null}`, &service.Service{}},
		{"empty message field is set", `{"nodeInfo":{}}`, &node.Node{NodeInfo: &node.NodeSystemInfo{}}},
		{"empty lists and maps", `{"port":[],"selector":{},"externalIps":[ ]}`, &service.Service{}},
		{"int32 range", `{"port":[{"port":2147483647,"nodePort":-2147483648},{"port":"-7","nodePort":"0"}]}`,
			&service.Service{Port: []*service.Service_ServicePort{{Port: 2147483647, NodePort: -2147483648}, {Port: -7}}}},
		{"int64 bare and quoted", `{"lastChangeTriggerTimeUnixNano":"-9223372036854775808"}`, &endpoints.Endpoints{LastChangeTriggerTimeUnixNano: -9223372036854775808}},
		{"int64 max", `{"lastChangeTriggerTimeUnixNano":9223372036854775807}`, &endpoints.Endpoints{LastChangeTriggerTimeUnixNano: 9223372036854775807}},
		{"uint32 max quoted", `{"id":"4294967295"}`, &vppnode.VppNode{Id: 4294967295}},
		{"minus zero", `{"id":-0,"name":"x"}`, &vppnode.VppNode{Name: "x"}},
		{"enum by name and number", `{"addresses":[{"type":"NodeInternalIP"},{"type":2},{"type":"NodeUnknownAddr"}]}`,
			&node.Node{Addresses: []*node.NodeAddress{{Type: node.NodeAddress_NodeInternalIP}, {Type: node.NodeAddress_NodeExternalIP}, {}}}},
		{"enum number outside the values (open enum)", `{"policyType":99}`, &policy.Policy{PolicyType: 99}},
		{"unknown enum name is dropped", `{"policyType":"SIDEWAYS","name":"p"}`, &policy.Policy{Name: "p"}},
		{"quoted enum number is a name", `{"policyType":"2"}`, &policy.Policy{}},
		{"bool", `{"natExternalTraffic":true}`, nodeconfigTrue()},
		{"unknown fields of every JSON kind", `{"x":{"a":[1,-2.5e+3,0.0,1E9,true,false,null,"s\"\u00e9"],"b":{}},"y":[],"name":"n","z":-0.5}`,
			&vppnode.VppNode{Name: "n"}},
		{"escapes", `{"name":"a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\u2603\ud83d\ude00\u0000"}`,
			&vppnode.VppNode{Name: "a\"b\\c/d\be\ff\ng\rh\ti\u00e9\u2603\U0001F600\x00"}},
		{"escaped field name", `{"n\u0061me":"x"}`, &vppnode.VppNode{Name: "x"}},
		{"UTF-8 and U+FFFD as is", "{\"name\":\"é☃\xef\xbf\xbd😀\"}", &vppnode.VppNode{Name: "é☃\uFFFD😀"}},
		{"map", `{"selector":{"app":"web","":"empty","k\"":"v\n"}}`, &service.Service{Selector: map[string]string{"app": "web", "": "empty", "k\"": "v\n"}}},
		{"nested lists", `{"endpointSubsets":[{"addresses":[{"ip":"1"},{"ip":"2","targetRef":{"kind":"Pod"}}],"ports":[{"port":80}]},{}]}`,
			&endpoints.Endpoints{EndpointSubsets: []*endpoints.EndpointSubset{
				{Addresses: []*endpoints.EndpointSubset_EndpointAddress{{Ip: "1"}, {Ip: "2", TargetRef: &endpoints.ObjectReference{Kind: "Pod"}}},
					Ports: []*endpoints.EndpointSubset_EndpointPort{{Port: 80}}},
				{}}}},
		{"repeated string in nested message", `{"pods":{"matchExpression":[{"key":"k","operator":"NOT_IN","value":["a","b"]}]}}`,
			&policy.Policy{Pods: &policy.Policy_LabelSelector{MatchExpression: []*policy.Policy_LabelSelector_LabelExpression{
				{Key: "k", Operator: policy.Policy_LabelSelector_LabelExpression_NOT_IN, Value: []string{"a", "b"}}}}}},
		{"oneof field absent", `{"name":"tap0","enabled":true,"mtu":1500}`, &interfaces.Interface{Name: "tap0", Enabled: true, Mtu: 1500}},
		{"proto2 message without fields given", `{}`, &gofeaturespb.GoFeatures{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decoder(t, tt.want).Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.in, err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("Decode(%s) = %v, want %v", tt.in, got, tt.want)
			}
			ref := tt.want.ProtoReflect().New().Interface()
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(tt.in), ref); err != nil || !proto.Equal(ref, tt.want) {
				t.Errorf("the table disagrees with protojson: %v, %v", ref, err)
			}
		})
	}
}

// TestDecodeRefuses: inputs outside the fast path (valid for protojson or not) make
// Decode refuse with ErrFallback, never return a value.
func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		msg  proto.Message
	}{
		{"empty input", ``, &service.Service{}},
		{"only whitespace", " \n", &service.Service{}},
		{"top-level null", `null`, &service.Service{}},
		{"top-level array", `[]`, &service.Service{}},
		{"trailing data", `{} {}`, &service.Service{}},
		{"trailing garbage", `{}x`, &service.Service{}},
		{"unterminated object", `{"name":"a"`, &service.Service{}},
		{"trailing comma", `{"name":"a",}`, &service.Service{}},
		{"missing colon", `{"name" "a"}`, &service.Service{}},
		{"single quotes", `{'name':'a'}`, &service.Service{}},
		{"byte order mark", "\ufeff{}", &service.Service{}},
		{"duplicate field", `{"name":"a","name":"b"}`, &service.Service{}},
		{"duplicate field by both names", `{"clusterIp":"a","cluster_ip":"b"}`, &service.Service{}},
		{"duplicate null field", `{"name":null,"name":"b"}`, &service.Service{}},
		{"extension name", `{"[foo.bar]":1}`, &service.Service{}},
		{"string for int", `{"port":[{"port":"eighty"}]}`, &service.Service{}},
		{"number for string", `{"name":1}`, &service.Service{}},
		{"int32 overflow", `{"port":[{"port":2147483648}]}`, &service.Service{}},
		{"int32 underflow", `{"port":[{"port":-2147483649}]}`, &service.Service{}},
		{"uint32 overflow", `{"id":4294967296}`, &vppnode.VppNode{}},
		{"negative uint", `{"id":-1}`, &vppnode.VppNode{}},
		{"int64 overflow", `{"lastChangeTriggerTimeUnixNano":9223372036854775808}`, &endpoints.Endpoints{}},
		{"uint64-sized overflow", `{"lastChangeTriggerTimeUnixNano":184467440737095516150}`, &endpoints.Endpoints{}},
		{"exponent (protojson takes it)", `{"id":1e2}`, &vppnode.VppNode{}},
		{"fraction (protojson takes it)", `{"id":1.0}`, &vppnode.VppNode{}},
		{"quoted exponent", `{"id":"1e2"}`, &vppnode.VppNode{}},
		{"leading zero", `{"id":01}`, &vppnode.VppNode{}},
		{"quoted leading zero", `{"id":"01"}`, &vppnode.VppNode{}},
		{"plus sign", `{"id":+1}`, &vppnode.VppNode{}},
		{"quoted with spaces", `{"id":" 1"}`, &vppnode.VppNode{}},
		{"quoted two numbers", `{"id":"1 2"}`, &vppnode.VppNode{}},
		{"hex", `{"id":0x10}`, &vppnode.VppNode{}},
		{"enum out of int32", `{"policyType":2147483648}`, &policy.Policy{}},
		{"enum as bool", `{"policyType":true}`, &policy.Policy{}},
		{"bool as string", `{"natExternalTraffic":"true"}`, nodeconfigTrue()},
		{"literal glued", `{"natExternalTraffic":truex}`, nodeconfigTrue()},
		{"null in a list", `{"externalIps":[null]}`, &service.Service{}},
		{"null message in a list", `{"port":[null]}`, &service.Service{}},
		{"null map value", `{"selector":{"a":null}}`, &service.Service{}},
		{"duplicate map key", `{"selector":{"a":"1","a":"2"}}`, &service.Service{}},
		{"list for a message", `{"nodeInfo":[]}`, &node.Node{}},
		{"object for a list", `{"externalIps":{}}`, &service.Service{}},
		{"string for a list", `{"externalIps":"a"}`, &service.Service{}},
		{"empty list element", `{"externalIps":["a",,"b"]}`, &service.Service{}},
		{"list trailing comma", `{"externalIps":["a",]}`, &service.Service{}},
		{"invalid UTF-8", "{\"name\":\"\x80\"}", &service.Service{}},
		{"UTF-8 surrogate", "{\"name\":\"\xed\xa0\x80\"}", &service.Service{}},
		{"invalid UTF-8 in a skipped field", "{\"zzz\":\"\xff\"}", &service.Service{}},
		{"control character", "{\"name\":\"a\x01\"}", &service.Service{}},
		{"raw newline", "{\"name\":\"a\nb\"}", &service.Service{}},
		{"unknown escape", `{"name":"\a"}`, &service.Service{}},
		{"short unicode escape", `{"name":"\u12"}`, &service.Service{}},
		{"lone high surrogate", `{"name":"\ud83d"}`, &service.Service{}},
		{"lone low surrogate", `{"name":"\ude00x"}`, &service.Service{}},
		{"high surrogate then letter escape", `{"name":"\ud83d\n"}`, &service.Service{}},
		{"unterminated string", `{"name":"abc`, &service.Service{}},
		{"skipped value not JSON", `{"zzz":nope}`, &service.Service{}},
		{"skipped number 1.", `{"zzz":1.}`, &service.Service{}},
		{"skipped number 1e (protojson takes 1e})", `{"zzz":1e}`, &service.Service{}},
		{"skipped number -", `{"zzz":-}`, &service.Service{}},
		{"skipped unbalanced", `{"zzz":[1,2}`, &service.Service{}},
		{"skipped object without colon", `{"zzz":{"a"}}`, &service.Service{}},
		{"nesting too deep", `{"zzz":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, &service.Service{}},
		{"oneof field", `{"name":"tap0","tap":{"version":2}}`, &interfaces.Interface{}},
		{"oneof field null", `{"tap":null}`, &interfaces.Interface{}},
		{"proto2 field with presence", `{"legacyUnmarshalJsonEnum":false}`, &gofeaturespb.GoFeatures{}},
		{"proto2 closed enum", `{"apiLevel":"API_OPAQUE"}`, &gofeaturespb.GoFeatures{}},
		{"google.protobuf message (refused whole)", `{}`, &descriptorpb.FileDescriptorProto{}},
		{"well-known type", `{"fields":{}}`, &structpb.Struct{}},
		{"well-known type, empty", `{}`, &structpb.Struct{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decoder(t, tt.msg).Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%q) = %v, want a refusal", tt.in, got)
			}
			if !errors.Is(err, pbjson.ErrFallback) {
				t.Errorf("error %v does not wrap ErrFallback", err)
			}
			if got != nil {
				t.Errorf("a value came with the refusal: %v", got)
			}
		})
	}
}

func TestDecodedRepeatedMessagesShareOneArray(t *testing.T) {
	in := `{"endpointSubsets":[{"addresses":[{"ip":"1"},{"ip":"2"},{"ip":"3"}]}]}`
	got, err := decoder(t, &endpoints.Endpoints{}).Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	addrs := got.(*endpoints.Endpoints).GetEndpointSubsets()[0].GetAddresses()
	if len(addrs) != 3 {
		t.Fatalf("%d addresses", len(addrs))
	}
	// Consecutive elements of one backing array: &a[1] - &a[0] == &a[2] - &a[1] == size.
	if !contiguous(addrs) {
		t.Errorf("the elements are not one array")
	}
	// The values are independent: changing one changes no other and no later decode.
	addrs[0].Ip = "changed"
	again, err := decoder(t, &endpoints.Endpoints{}).Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if ip := again.(*endpoints.Endpoints).GetEndpointSubsets()[0].GetAddresses()[0].GetIp(); ip != "1" {
		t.Errorf("a later decode sees %q", ip)
	}
}

func TestDecoderIsSafeForConcurrentUse(t *testing.T) {
	d := decoder(t, &pod.Pod{})
	in := []byte(`{"name":"p","label":[{"key":"a","value":"b"},{"key":"c","value":"d"}],"container":[{"name":"c","port":[{"containerPort":80}]}],"annotations":{"x":"y"}}`)
	want := &pod.Pod{Name: "p", Label: []*pod.Pod_Label{{Key: "a", Value: "b"}, {Key: "c", Value: "d"}},
		Container:   []*pod.Pod_Container{{Name: "c", Port: []*pod.Pod_Container_Port{{ContainerPort: 80}}}},
		Annotations: map[string]string{"x": "y"}}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 200 {
				got, err := d.Decode(in)
				if err != nil || !proto.Equal(got, want) {
					errs <- errors.New("wrong decode under concurrency")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestWellKnownTypesCompileAndRefuseEveryInput(t *testing.T) {
	d, err := pbjson.NewDecoder(structpb.NewNullValue().ProtoReflect().Type())
	if err != nil {
		t.Fatalf("a generated well-known type should compile: %v", err)
	}
	for _, in := range []string{`null`, `{}`, `1`} {
		if v, err := d.Decode([]byte(in)); err == nil {
			t.Errorf("google.protobuf.Value decoded %s to %v", in, v)
		}
	}
}

func TestNewDecoderRejectsNonGeneratedTypes(t *testing.T) {
	mt := dynamicpb.NewMessageType((&vppnode.VppNode{}).ProtoReflect().Descriptor())
	if _, err := pbjson.NewDecoder(mt); err == nil || !strings.Contains(err.Error(), "contiv.ksr.vppnode.VppNode") {
		t.Errorf("dynamicpb type: err %v, want one naming the message", err)
	}
}

func nodeconfigTrue() *nodeconfig.NodeConfig { return &nodeconfig.NodeConfig{NatExternalTraffic: true} }

// contiguous tells whether the elements pointed to are consecutive in memory.
func contiguous[T any](ptrs []*T) bool {
	size := reflect.TypeFor[T]().Size()
	for i := 1; i < len(ptrs); i++ {
		if reflect.ValueOf(ptrs[i]).Pointer()-reflect.ValueOf(ptrs[i-1]).Pointer() != size {
			return false
		}
	}
	return true
}
