package nat44

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	esmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
)

// The scenarios' conversions of what contiv-ksr's converters (plugins/ksr/convert) do
// not convert yet in this branch: EndpointSlices into the endpointslice model, with
// the conditions normalised as contiv-ksr writes them (unset ready is true, unset
// serving is ready, unset terminating is false), and the Service fields of v1.34.
// They follow the models' documentation; once contiv-ksr converts both, the
// scenarios use its converters instead.

// sliceModel returns the endpointslice model of a slice.
func sliceModel(es *discoveryv1.EndpointSlice) *esmodel.EndpointSlice {
	m := &esmodel.EndpointSlice{
		Name: es.Name, Namespace: es.Namespace, ServiceName: es.Labels[discoveryv1.LabelServiceName],
		AddressType: string(es.AddressType), ManagedBy: es.Labels[discoveryv1.LabelManagedBy],
	}
	for _, e := range es.Endpoints {
		ready := e.Conditions.Ready == nil || *e.Conditions.Ready
		serving := ready
		if e.Conditions.Serving != nil {
			serving = *e.Conditions.Serving
		}
		ep := &esmodel.Endpoint{
			Addresses: e.Addresses, Ready: ready, Serving: serving,
			Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
		}
		if e.NodeName != nil {
			ep.NodeName = *e.NodeName
		}
		if e.Zone != nil {
			ep.Zone = *e.Zone
		}
		if r := e.TargetRef; r != nil {
			ep.TargetRef = &esmodel.ObjectReference{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Uid: string(r.UID)}
		}
		if h := e.Hints; h != nil {
			for _, z := range h.ForZones {
				ep.HintsForZones = append(ep.HintsForZones, z.Name)
			}
			for _, n := range h.ForNodes {
				ep.HintsForNodes = append(ep.HintsForNodes, n.Name)
			}
		}
		m.Endpoints = append(m.Endpoints, ep)
	}
	for _, p := range es.Ports {
		port := &esmodel.Port{Protocol: "TCP"}
		if p.Name != nil {
			port.Name = *p.Name
		}
		if p.Protocol != nil {
			port.Protocol = string(*p.Protocol)
		}
		if p.Port != nil {
			port.Port = *p.Port
		}
		m.Ports = append(m.Ports, port)
	}
	return m
}

// addV134Fields fills the Service fields of v1.34 into the model, if the converter
// left them empty.
func addV134Fields(svc *corev1.Service, m *svcmodel.Service) {
	if m.Labels == nil && len(svc.Labels) > 0 {
		m.Labels = svc.Labels
	}
	if m.InternalTrafficPolicy == "" && svc.Spec.InternalTrafficPolicy != nil {
		m.InternalTrafficPolicy = string(*svc.Spec.InternalTrafficPolicy)
	}
	if m.TrafficDistribution == "" && svc.Spec.TrafficDistribution != nil {
		m.TrafficDistribution = *svc.Spec.TrafficDistribution
	}
	if len(m.ClusterIps) == 0 {
		m.ClusterIps = svc.Spec.ClusterIPs
	}
	if m.PublishNotReadyAddresses == false {
		m.PublishNotReadyAddresses = svc.Spec.PublishNotReadyAddresses
	}
}
