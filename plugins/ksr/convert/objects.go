//lint:file-ignore SA1019 the agent's model is the Endpoints API, deprecated in Kubernetes 1.33 but still served.

package convert

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/servicecidr"
)

// Supported says whether Object converts objects of obj's type.
func Supported(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.Service, *corev1.Endpoints, *corev1.Node, *corev1.Namespace,
		*networkingv1.NetworkPolicy, *discoveryv1.EndpointSlice, *networkingv1.ServiceCIDR:
		return true
	}
	return false
}

// Object converts one object of a supported type and returns the key of the value,
// relative to ksrkey.KsrPrefix. An EndpointSlice without the kubernetes.io/service-name
// label is an error here (it belongs to no service, and contiv-ksr does not write it).
func Object(obj runtime.Object) (key string, value proto.Message, err error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return keyed(Pod(o))(func(v *pod.Pod) string { return pod.Key(v.Name, v.Namespace) })
	case *corev1.Service:
		return keyed(Service(o))(func(v *service.Service) string { return service.Key(v.Name, v.Namespace) })
	case *corev1.Endpoints:
		return keyed(Endpoints(o))(func(v *endpoints.Endpoints) string { return endpoints.Key(v.Name, v.Namespace) })
	case *corev1.Node:
		return keyed(Node(o))(func(v *node.Node) string { return node.Key(v.Name) })
	case *corev1.Namespace:
		return keyed(Namespace(o))(func(v *namespace.Namespace) string { return namespace.Key(v.Name) })
	case *networkingv1.NetworkPolicy:
		return keyed(Policy(o))(func(v *policy.Policy) string { return policy.Key(v.Name, v.Namespace) })
	case *networkingv1.ServiceCIDR:
		return keyed(ServiceCIDR(o))(func(v *servicecidr.ServiceCIDR) string { return servicecidr.Key(v.Name) })
	case *discoveryv1.EndpointSlice:
		if o != nil && SliceServiceName(o) == "" {
			return "", nil, fmt.Errorf("endpoint slice %s/%s: no %s label", o.Namespace, o.Name, discoveryv1.LabelServiceName)
		}
		return keyed(EndpointSlice(o))(func(v *endpointslice.EndpointSlice) string { return endpointslice.Key(v.Name, v.Namespace) })
	case nil:
		return "", nil, errNil
	default:
		return "", nil, fmt.Errorf("objects of type %T are not reflected", obj)
	}
}

// keyed pairs a conversion result with its key: keyed(conv(obj))(key).
func keyed[M proto.Message](v M, err error) func(func(M) string) (string, proto.Message, error) {
	return func(key func(M) string) (string, proto.Message, error) {
		if err != nil {
			return "", nil, err
		}
		return key(v), v, nil
	}
}

// Snapshot converts a complete set of objects (e.g. everything a cluster file holds)
// into the values contiv-ksr, with legacy Endpoints on, would keep in etcd for them, by
// key relative to ksrkey.KsrPrefix:
//   - every object by Object, each EndpointSlice under its own key;
//   - for each service with slices, the legacy Endpoints value derived from them
//     (LegacyEndpoints), unless the set holds an Endpoints object of that service;
//   - for each Endpoints object of a service without slices, the slices the
//     EndpointSlice mirroring controller would make of it (MirrorEndpoints), so that
//     a file written for agents that read Endpoints serves agents that read slices.
//
// The error joins one error per object that could not be converted (naming it) and per
// key defined twice; the map then holds the values of the other objects.
func Snapshot(objs []runtime.Object) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(objs))
	var errs []error
	put := func(key string, v proto.Message) {
		if _, dup := out[key]; dup {
			errs = append(errs, fmt.Errorf("%s: defined twice", key))
			return
		}
		out[key] = v
	}
	type svcID struct{ namespace, name string }
	slices := map[svcID][]*discoveryv1.EndpointSlice{}
	services := map[svcID]*corev1.Service{}
	var sliceOrder []svcID
	var legacy []*corev1.Endpoints
	for _, obj := range objs {
		key, v, err := Object(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		put(key, v)
		switch o := obj.(type) {
		case *discoveryv1.EndpointSlice:
			id := svcID{o.Namespace, SliceServiceName(o)}
			if _, seen := slices[id]; !seen {
				sliceOrder = append(sliceOrder, id)
			}
			slices[id] = append(slices[id], o)
		case *corev1.Service:
			services[svcID{o.Namespace, o.Name}] = o
		case *corev1.Endpoints:
			legacy = append(legacy, o)
		}
	}
	for _, id := range sliceOrder {
		key := endpoints.Key(id.name, id.namespace)
		if _, ok := out[key]; ok {
			continue // the Endpoints object wins
		}
		v, err := LegacyEndpoints(id.namespace, id.name, services[id], slices[id])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[key] = v
	}
	for _, e := range legacy {
		if _, ok := slices[svcID{e.Namespace, e.Name}]; ok {
			continue // the service has slices of its own
		}
		for _, s := range MirrorEndpoints(e) {
			key, v, err := Object(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("endpoints %s/%s: mirrored slice: %w", e.Namespace, e.Name, err))
				continue
			}
			put(key, v)
		}
	}
	return out, errors.Join(errs...)
}
