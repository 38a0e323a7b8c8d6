//lint:file-ignore SA1019 MirrorEndpoints reads the deprecated Endpoints objects of cluster files.

package convert

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
)

func TestEndpointSliceKeepsEveryEndpointField(t *testing.T) {
	in := slice("default", "web-abc", "web", discoveryv1.AddressTypeIPv4,
		[]discoveryv1.EndpointPort{
			{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP), AppProtocol: ptr("kubernetes.io/h2c")},
			{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolUDP)},
			{}, // all ports, protocol defaulted
		},
		discoveryv1.Endpoint{
			Addresses:  []string{"10.1.1.2", "10.1.1.3"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)},
			Hostname:   ptr("web-0"), NodeName: ptr("k8s-worker1"), Zone: ptr("zone-a"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", UID: "u0", ResourceVersion: "7"},
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}, {Name: "zone-b"}},
				ForNodes: []discoveryv1.ForNode{{Name: "k8s-worker1"}}},
		})
	in.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	in.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "2026-11-28T21:00:00Z"}
	want := &endpointslice.EndpointSlice{
		Name: "web-abc", Namespace: "default", ServiceName: "web", AddressType: "IPv4",
		ManagedBy: "endpointslice-controller.k8s.io", LastChangeTriggerTimeUnixNano: 1795899600000000000,
		Ports: []*endpointslice.Port{
			{Name: "http", Protocol: "TCP", Port: 8080, AppProtocol: "kubernetes.io/h2c"},
			{Name: "dns", Protocol: "UDP", Port: 53},
			{Protocol: "TCP"},
		},
		Endpoints: []*endpointslice.Endpoint{{
			Addresses: []string{"10.1.1.2", "10.1.1.3"}, Ready: true, Serving: true,
			Hostname: "web-0", NodeName: "k8s-worker1", Zone: "zone-a",
			TargetRef:     &endpointslice.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", Uid: "u0"},
			HintsForZones: []string{"zone-a", "zone-b"}, HintsForNodes: []string{"k8s-worker1"},
		}},
	}
	got, err := EndpointSlice(in)
	checkProto(t, got, want, err, "")

	_, err = EndpointSlice(slice("", "x", "web", discoveryv1.AddressTypeIPv4, nil))
	checkProto(t, nil, nil, err, "endpoint slice x: no namespace")
	_, err = EndpointSlice(nil)
	checkProto(t, nil, nil, err, "nil object")
}

// TestEndpointConditionsFollowTheAPIDefaults: "ready: a nil value should be
// interpreted as true; serving: a nil value should be interpreted as true;
// terminating: a nil value should be interpreted as false" (discovery.k8s.io/v1).
func TestEndpointConditionsFollowTheAPIDefaults(t *testing.T) {
	T, F := ptr(true), ptr(false)
	for _, tc := range []struct {
		name string
		in   discoveryv1.EndpointConditions
		want Conditions
	}{
		{"all unset", discoveryv1.EndpointConditions{}, Conditions{Ready: true, Serving: true}},
		{"not ready, rest unset", discoveryv1.EndpointConditions{Ready: F}, Conditions{Serving: true}},
		{"terminating and serving", discoveryv1.EndpointConditions{Ready: F, Serving: T, Terminating: T}, Conditions{Serving: true, Terminating: true}},
		{"terminating, serving unset", discoveryv1.EndpointConditions{Ready: F, Terminating: T}, Conditions{Serving: true, Terminating: true}},
		{"terminating, not serving", discoveryv1.EndpointConditions{Ready: F, Serving: F, Terminating: T}, Conditions{Terminating: true}},
		{"ready, explicit", discoveryv1.EndpointConditions{Ready: T, Serving: T, Terminating: F}, Conditions{Ready: true, Serving: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EndpointConditions(tc.in); got != tc.want {
				t.Errorf("EndpointConditions = %+v, want %+v", got, tc.want)
			}
			s, err := EndpointSlice(slice("default", "s", "web", discoveryv1.AddressTypeIPv4, nil,
				discoveryv1.Endpoint{Addresses: []string{"10.1.1.2"}, Conditions: tc.in}))
			if err != nil {
				t.Fatal(err)
			}
			ep := s.GetEndpoints()[0]
			if got := (Conditions{ep.GetReady(), ep.GetServing(), ep.GetTerminating()}); got != tc.want {
				t.Errorf("written conditions = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestServiceCIDR(t *testing.T) {
	cond := func(status metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: status}}
	}
	cidr := func(name string, conds []metav1.Condition, cidrs ...string) *networkingv1.ServiceCIDR {
		return &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}, Status: networkingv1.ServiceCIDRStatus{Conditions: conds}}
	}
	for _, tc := range []struct {
		name    string
		in      *networkingv1.ServiceCIDR
		want    *servicecidr.ServiceCIDR
		wantErr string
	}{
		{"dual stack, ready", cidr("kubernetes", cond(metav1.ConditionTrue), "10.96.0.0/12", "fd00::/108"),
			&servicecidr.ServiceCIDR{Name: "kubernetes", Cidrs: []string{"10.96.0.0/12", "fd00::/108"}, Ready: true}, ""},
		{"no condition yet: ready, as the API server allocates from it", cidr("extra", nil, "10.200.0.0/16"),
			&servicecidr.ServiceCIDR{Name: "extra", Cidrs: []string{"10.200.0.0/16"}, Ready: true}, ""},
		{"terminating", cidr("old", cond(metav1.ConditionFalse), "10.100.0.0/16"),
			&servicecidr.ServiceCIDR{Name: "old", Cidrs: []string{"10.100.0.0/16"}}, ""},
		{"bad CIDR", cidr("bad", nil, "10.0.0.0/8", "10.300.0.0/16"), nil, `service CIDR bad: spec.cidrs[1]: "10.300.0.0/16" is not a CIDR`},
		{"no name", cidr("", nil), nil, "service CIDR: no name"},
		{"nil", nil, nil, "nil object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ServiceCIDR(tc.in)
			checkProto(t, got, tc.want, err, tc.wantErr)
		})
	}
}

func TestMirrorEndpointsSplitsSubsetsByFamily(t *testing.T) {
	e := &corev1.Endpoints{ObjectMeta: meta("default", "ext"), Subsets: []corev1.EndpointSubset{
		{
			Addresses:         []corev1.EndpointAddress{{IP: "192.0.2.1", Hostname: "a", NodeName: ptr("n1")}, {IP: "2001:db8::1"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.0.2.2"}, {IP: "not-an-ip"}},
			Ports:             []corev1.EndpointPort{{Name: "http", Port: 80}},
		},
		{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.3"}}, Ports: []corev1.EndpointPort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
	}}
	var got []string
	for _, s := range MirrorEndpoints(e) {
		v, err := EndpointSlice(s)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(v.GetName() + " " + v.GetAddressType() + " svc=" + v.GetServiceName() + " by=" + v.GetManagedBy())
		for _, p := range v.GetPorts() {
			b.WriteString(" " + p.GetName() + "/" + p.GetProtocol())
		}
		for _, ep := range v.GetEndpoints() {
			b.WriteString(" " + ep.GetAddresses()[0])
			if !ep.GetReady() {
				b.WriteString("(not ready)")
			}
		}
		got = append(got, b.String())
	}
	want := []string{
		"ext-mirror-0 IPv4 svc=ext by=" + MirrorManagedBy + " http/TCP 192.0.2.1 192.0.2.2(not ready)",
		"ext-mirror-0-ipv6 IPv6 svc=ext by=" + MirrorManagedBy + " http/TCP 2001:db8::1",
		"ext-mirror-1 IPv4 svc=ext by=" + MirrorManagedBy + " dns/UDP 192.0.2.3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("mirrored slices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if MirrorEndpoints(nil) != nil {
		t.Error("slices for a nil Endpoints")
	}
}

func TestLegacyEndpointsTakeThePrimaryFamilyOfTheService(t *testing.T) {
	port := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(80))}}
	v4 := slice("default", "web-4", "web", discoveryv1.AddressTypeIPv4, port, discoveryv1.Endpoint{Addresses: []string{"10.1.1.2"}})
	v6 := slice("default", "web-6", "web", discoveryv1.AddressTypeIPv6, port, discoveryv1.Endpoint{Addresses: []string{"fd00::2"}})
	svc := func(clusterIP string, families ...corev1.IPFamily) *corev1.Service {
		return &corev1.Service{ObjectMeta: meta("default", "web"), Spec: corev1.ServiceSpec{ClusterIP: clusterIP, IPFamilies: families}}
	}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{"IPv4 first", svc("10.96.0.10", corev1.IPv4Protocol, corev1.IPv6Protocol), []string{"10.1.1.2"}},
		{"IPv6 first", svc("fd00::10", corev1.IPv6Protocol, corev1.IPv4Protocol), []string{"fd00::2"}},
		{"families unset: the cluster IP's", svc("fd00::10"), []string{"fd00::2"}},
		{"headless without families: all", svc("None"), []string{"10.1.1.2", "fd00::2"}},
		{"service unknown: all", nil, []string{"10.1.1.2", "fd00::2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := LegacyEndpoints("default", "web", tc.svc, []*discoveryv1.EndpointSlice{v4, v6})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sub := range e.GetEndpointSubsets() {
				for _, a := range sub.GetAddresses() {
					got = append(got, a.GetIp())
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("addresses %v, want %v", got, tc.want)
			}
		})
	}
}
