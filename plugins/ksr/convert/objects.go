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
	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// Supported says whether Object (or, for EndpointSlices, Snapshot) converts objects of
// obj's type.
func Supported(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Pod, *corev1.Service, *corev1.Endpoints, *corev1.Node, *corev1.Namespace,
		*networkingv1.NetworkPolicy, *discoveryv1.EndpointSlice:
		return true
	}
	return false
}

// Object converts one object of a supported type other than EndpointSlice (which only
// makes sense together with the other slices of its service: see Snapshot) and returns
// the key of the value, relative to ksrkey.KsrPrefix.
func Object(obj runtime.Object) (key string, value proto.Message, err error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		v, err := Pod(o)
		if err != nil {
			return "", nil, err
		}
		return pod.Key(v.Name, v.Namespace), v, nil
	case *corev1.Service:
		v, err := Service(o)
		if err != nil {
			return "", nil, err
		}
		return service.Key(v.Name, v.Namespace), v, nil
	case *corev1.Endpoints:
		v, err := Endpoints(o)
		if err != nil {
			return "", nil, err
		}
		return endpoints.Key(v.Name, v.Namespace), v, nil
	case *corev1.Node:
		v, err := Node(o)
		if err != nil {
			return "", nil, err
		}
		return node.Key(v.Name), v, nil
	case *corev1.Namespace:
		v, err := Namespace(o)
		if err != nil {
			return "", nil, err
		}
		return namespace.Key(v.Name), v, nil
	case *networkingv1.NetworkPolicy:
		v, err := Policy(o)
		if err != nil {
			return "", nil, err
		}
		return policy.Key(v.Name, v.Namespace), v, nil
	case nil:
		return "", nil, errNil
	default:
		return "", nil, fmt.Errorf("objects of type %T are not reflected", obj)
	}
}

// Snapshot converts a complete set of objects (e.g. everything a cluster file holds)
// into the values contiv-ksr would keep in etcd for them, by key relative to
// ksrkey.KsrPrefix. EndpointSlices give the Endpoints value of their service when the
// set has no Endpoints object of that service. The error joins one error per object
// that could not be converted (naming it) and per key defined twice; the map then holds
// the values of the other objects.
func Snapshot(objs []runtime.Object) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(objs))
	var errs []error
	type svcID struct{ namespace, name string }
	slices := map[svcID][]*discoveryv1.EndpointSlice{}
	var sliceOrder []svcID
	for _, obj := range objs {
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			id := svcID{s.Namespace, SliceServiceName(s)}
			if id.name == "" {
				errs = append(errs, fmt.Errorf("endpoint slice %s/%s: no %s label", s.Namespace, s.Name, discoveryv1.LabelServiceName))
				continue
			}
			if _, seen := slices[id]; !seen {
				sliceOrder = append(sliceOrder, id)
			}
			slices[id] = append(slices[id], s)
			continue
		}
		key, v, err := Object(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := out[key]; dup {
			errs = append(errs, fmt.Errorf("%s: defined twice", key))
			continue
		}
		out[key] = v
	}
	for _, id := range sliceOrder {
		key := endpoints.Key(id.name, id.namespace)
		if _, ok := out[key]; ok {
			continue // the Endpoints object wins
		}
		v, err := EndpointsFromSlices(id.namespace, id.name, slices[id])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[key] = v
	}
	return out, errors.Join(errs...)
}
