package convert

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
)

// EndpointSlice converts one EndpointSlice: identity, the service it belongs to (its
// kubernetes.io/service-name label), address type, the endpointslice.kubernetes.io/
// managed-by label, the last-change trigger time, ports (protocol TCP when unset) and
// every endpoint with its addresses, conditions, host name, target reference, node,
// zone and hints. Nothing is capped: a slice holds what the API server accepted.
//
// The conditions are normalised as the discovery.k8s.io/v1 API tells consumers to read
// them, so that readers never see "unknown": ready unset is true, serving unset is
// true, terminating unset is false (kube-proxy reads them the same way).
//
// A slice without the service-name label belongs to no service; it still converts
// (service_name empty), and contiv-ksr decides not to write it.
func EndpointSlice(s *discoveryv1.EndpointSlice) (*endpointslice.EndpointSlice, error) {
	if s == nil {
		return nil, fmt.Errorf("endpoint slice: %w", errNil)
	}
	if err := checkNamespaced("endpoint slice", s.Namespace, s.Name); err != nil {
		return nil, err
	}
	out := &endpointslice.EndpointSlice{
		Name:                          s.Name,
		Namespace:                     s.Namespace,
		ServiceName:                   SliceServiceName(s),
		AddressType:                   string(s.AddressType),
		ManagedBy:                     s.Labels[discoveryv1.LabelManagedBy],
		LastChangeTriggerTimeUnixNano: triggerTime(s.Annotations),
	}
	for _, p := range s.Ports {
		mp := &endpointslice.Port{Protocol: string(corev1.ProtocolTCP)}
		if p.Name != nil {
			mp.Name = *p.Name
		}
		if p.Protocol != nil && *p.Protocol != "" {
			mp.Protocol = string(*p.Protocol)
		}
		if p.Port != nil {
			mp.Port = *p.Port
		}
		if p.AppProtocol != nil {
			mp.AppProtocol = *p.AppProtocol
		}
		out.Ports = append(out.Ports, mp)
	}
	for _, ep := range s.Endpoints {
		out.Endpoints = append(out.Endpoints, sliceEndpoint(ep))
	}
	return out, nil
}

// sliceEndpoint converts one endpoint of a slice.
func sliceEndpoint(ep discoveryv1.Endpoint) *endpointslice.Endpoint {
	c := EndpointConditions(ep.Conditions)
	out := &endpointslice.Endpoint{
		Addresses:   copyStrings(ep.Addresses),
		Ready:       c.Ready,
		Serving:     c.Serving,
		Terminating: c.Terminating,
		Hostname:    deref(ep.Hostname),
		NodeName:    deref(ep.NodeName),
		Zone:        deref(ep.Zone),
	}
	if r := ep.TargetRef; r != nil {
		out.TargetRef = &endpointslice.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Uid: string(r.UID)}
	}
	if h := ep.Hints; h != nil {
		for _, z := range h.ForZones {
			out.HintsForZones = append(out.HintsForZones, z.Name)
		}
		for _, n := range h.ForNodes {
			out.HintsForNodes = append(out.HintsForNodes, n.Name)
		}
	}
	return out
}

// Conditions are the conditions of an endpoint with the API's defaults applied.
type Conditions struct {
	// Ready: the endpoint takes new connections.
	Ready bool
	// Serving: the endpoint answers, whether or not it is terminating.
	Serving bool
	// Terminating: the endpoint's pod is being deleted.
	Terminating bool
}

// EndpointConditions reads the conditions of an endpoint as the API says consumers
// must: ready and serving are true unless set to false, terminating is false unless
// set to true.
func EndpointConditions(c discoveryv1.EndpointConditions) Conditions {
	return Conditions{
		Ready:       c.Ready == nil || *c.Ready,
		Serving:     c.Serving == nil || *c.Serving,
		Terminating: c.Terminating != nil && *c.Terminating,
	}
}

// deref returns *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
