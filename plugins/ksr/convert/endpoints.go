//lint:file-ignore SA1019 the agent's model is the Endpoints API, deprecated in Kubernetes 1.33 but still served; EndpointSlices are merged into it.

package convert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpoints"
)

// Endpoints converts an Endpoints object subset by subset: ready and not-ready
// addresses (IP, host name, node name, target reference) and ports (name, port,
// protocol, TCP when empty). The order of subsets and addresses is kept.
func Endpoints(e *corev1.Endpoints) (*endpoints.Endpoints, error) {
	if e == nil {
		return nil, fmt.Errorf("endpoints: %w", errNil)
	}
	if err := checkNamespaced("endpoints", e.Namespace, e.Name); err != nil {
		return nil, err
	}
	out := &endpoints.Endpoints{Name: e.Name, Namespace: e.Namespace,
		LastChangeTriggerTimeUnixNano: triggerTime(e.Annotations)}
	for _, s := range e.Subsets {
		ms := &endpoints.EndpointSubset{}
		for _, a := range s.Addresses {
			ms.Addresses = append(ms.Addresses, endpointAddress(a))
		}
		for _, a := range s.NotReadyAddresses {
			ms.NotReadyAddresses = append(ms.NotReadyAddresses, endpointAddress(a))
		}
		for _, p := range s.Ports {
			ms.Ports = append(ms.Ports, &endpoints.EndpointSubset_EndpointPort{
				Name: p.Name, Port: p.Port, Protocol: protocolName(p.Protocol),
			})
		}
		out.EndpointSubsets = append(out.EndpointSubsets, ms)
	}
	return out, nil
}

func endpointAddress(a corev1.EndpointAddress) *endpoints.EndpointSubset_EndpointAddress {
	out := &endpoints.EndpointSubset_EndpointAddress{Ip: a.IP, HostName: a.Hostname}
	if a.NodeName != nil {
		out.NodeName = *a.NodeName
	}
	if r := a.TargetRef; r != nil {
		out.TargetRef = objectReference(*r)
	}
	return out
}

func objectReference(r corev1.ObjectReference) *endpoints.ObjectReference {
	return &endpoints.ObjectReference{
		Kind:            r.Kind,
		Namespace:       r.Namespace,
		Name:            r.Name,
		Uid:             string(r.UID),
		ApiVersion:      r.APIVersion,
		ResourceVersion: r.ResourceVersion,
	}
}

// protocolName returns the protocol as the models write it, TCP when unset.
func protocolName(p corev1.Protocol) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(p)
}

// SliceServiceName returns the name of the service an EndpointSlice belongs to (its
// kubernetes.io/service-name label), "" when it has none.
func SliceServiceName(s *discoveryv1.EndpointSlice) string {
	if s == nil {
		return ""
	}
	return s.Labels[discoveryv1.LabelServiceName]
}

// EndpointsFromSlices builds the Endpoints model of the service namespace/name from its
// EndpointSlices, for services that have slices but no Endpoints object. Slices of
// another service or namespace and FQDN slices are ignored.
//
// Endpoints with the same set of ports form one subset. Each endpoint contributes its
// first address (the API declares the addresses of one endpoint fungible); it is ready
// unless its ready condition is false. An IP present in several slices of one subset
// appears once, ready if any slice says so. Subsets are ordered by their ports and
// addresses by IP, so the result does not depend on how the addresses are spread over
// slices. A service whose slices hold no endpoint gets an Endpoints value without
// subsets.
func EndpointsFromSlices(namespace, name string, slices []*discoveryv1.EndpointSlice) (*endpoints.Endpoints, error) {
	if err := checkNamespaced("endpoints", namespace, name); err != nil {
		return nil, err
	}
	type subset struct {
		ports []*endpoints.EndpointSubset_EndpointPort
		addrs map[string]*endpoints.EndpointSubset_EndpointAddress
		ready map[string]bool
	}
	groups := map[string]*subset{}
	var trigger int64
	for _, s := range slices {
		if s == nil || s.Namespace != namespace || SliceServiceName(s) != name {
			continue
		}
		trigger = max(trigger, triggerTime(s.Annotations))
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		ports := slicePorts(s.Ports)
		sig := portsSignature(ports)
		g := groups[sig]
		if g == nil {
			g = &subset{ports: ports, addrs: map[string]*endpoints.EndpointSubset_EndpointAddress{}, ready: map[string]bool{}}
			groups[sig] = g
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 {
				continue
			}
			ip := ep.Addresses[0]
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if _, seen := g.addrs[ip]; seen && !ready {
				continue // keep what another slice said; ready wins
			}
			a := &endpoints.EndpointSubset_EndpointAddress{Ip: ip}
			if ep.Hostname != nil {
				a.HostName = *ep.Hostname
			}
			if ep.NodeName != nil {
				a.NodeName = *ep.NodeName
			}
			if ep.TargetRef != nil {
				a.TargetRef = objectReference(*ep.TargetRef)
			}
			g.addrs[ip] = a
			g.ready[ip] = g.ready[ip] || ready
		}
	}
	out := &endpoints.Endpoints{Name: name, Namespace: namespace, LastChangeTriggerTimeUnixNano: trigger}
	sigs := make([]string, 0, len(groups))
	for sig, g := range groups {
		if len(g.addrs) > 0 {
			sigs = append(sigs, sig)
		}
	}
	sort.Strings(sigs)
	for _, sig := range sigs {
		g := groups[sig]
		ips := make([]string, 0, len(g.addrs))
		for ip := range g.addrs {
			ips = append(ips, ip)
		}
		sort.Strings(ips)
		ms := &endpoints.EndpointSubset{Ports: g.ports}
		for _, ip := range ips {
			if g.ready[ip] {
				ms.Addresses = append(ms.Addresses, g.addrs[ip])
			} else {
				ms.NotReadyAddresses = append(ms.NotReadyAddresses, g.addrs[ip])
			}
		}
		out.EndpointSubsets = append(out.EndpointSubsets, ms)
	}
	return out, nil
}

// triggerTime reads the endpoints.kubernetes.io/last-change-trigger-time annotation
// (RFC 3339) in nanoseconds since the Unix epoch; 0 when it is absent or unreadable
// (it only feeds a latency metric).
func triggerTime(annotations map[string]string) int64 {
	v, ok := annotations[corev1.EndpointsLastChangeTriggerTime]
	if !ok {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil || t.UnixNano() <= 0 {
		return 0
	}
	return t.UnixNano()
}

// slicePorts converts the ports of a slice, sorted by name, port and protocol.
func slicePorts(in []discoveryv1.EndpointPort) []*endpoints.EndpointSubset_EndpointPort {
	var out []*endpoints.EndpointSubset_EndpointPort
	for _, p := range in {
		mp := &endpoints.EndpointSubset_EndpointPort{Protocol: string(corev1.ProtocolTCP)}
		if p.Name != nil {
			mp.Name = *p.Name
		}
		if p.Port != nil {
			mp.Port = *p.Port
		}
		if p.Protocol != nil && *p.Protocol != "" {
			mp.Protocol = string(*p.Protocol)
		}
		out = append(out, mp)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Protocol < b.Protocol
	})
	return out
}

// portsSignature identifies a sorted port list.
func portsSignature(ports []*endpoints.EndpointSubset_EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.Name)
		b.WriteByte('\x00')
		b.WriteString(strconv.Itoa(int(p.Port)))
		b.WriteByte('\x00')
		b.WriteString(p.Protocol)
		b.WriteByte('\x01')
	}
	return b.String()
}
