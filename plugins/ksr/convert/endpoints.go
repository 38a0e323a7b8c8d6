//lint:file-ignore SA1019 the agent's model is the Endpoints API, deprecated in Kubernetes 1.33 but still served; EndpointSlices are merged into it.

package convert

import (
	"fmt"
	"net"
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
// EndpointSlices: the legacy value that agents of the previous release read. Slices of
// another service or namespace and FQDN slices are ignored. Nothing is truncated (the
// Endpoints API caps an object at 1,000 addresses; this value has all of them).
//
// Endpoints with the same set of ports form one subset. Each endpoint contributes its
// first address (the API declares the addresses of one endpoint fungible); it goes to
// the addresses when ready (EndpointConditions), else to the not-ready addresses. An IP
// present in several slices of one subset appears once, ready if any slice says so.
// Subsets are ordered by their ports and addresses by IP, so the result does not depend
// on how the addresses are spread over slices. A service whose slices hold no endpoint
// gets an Endpoints value without subsets.
//
// It costs O(endpoints of the service): contiv-ksr calls it on every change of one of
// the service's slices.
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
			ready := EndpointConditions(ep.Conditions).Ready
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

// PrimaryAddressType returns the address type of the slices whose endpoints the legacy
// Endpoints value of svc holds: the family of its first IP family (spec.ipFamilies[0]),
// else of its cluster IP, as the Endpoints controller of Kubernetes writes only the
// addresses of that family. "" when svc is nil or says neither (all families count).
func PrimaryAddressType(svc *corev1.Service) discoveryv1.AddressType {
	if svc == nil {
		return ""
	}
	if len(svc.Spec.IPFamilies) > 0 {
		switch svc.Spec.IPFamilies[0] {
		case corev1.IPv4Protocol:
			return discoveryv1.AddressTypeIPv4
		case corev1.IPv6Protocol:
			return discoveryv1.AddressTypeIPv6
		}
	}
	return addressType(svc.Spec.ClusterIP)
}

// addressType returns the address type of an IP, "" for anything else.
func addressType(ip string) discoveryv1.AddressType {
	switch a := net.ParseIP(ip); {
	case a == nil:
		return ""
	case a.To4() != nil:
		return discoveryv1.AddressTypeIPv4
	default:
		return discoveryv1.AddressTypeIPv6
	}
}

// LegacyEndpoints is the legacy Endpoints value of the service namespace/name (svc, nil
// when unknown) made of its slices: EndpointsFromSlices over the slices of the
// service's PrimaryAddressType.
func LegacyEndpoints(namespace, name string, svc *corev1.Service, slices []*discoveryv1.EndpointSlice) (*endpoints.Endpoints, error) {
	if family := PrimaryAddressType(svc); family != "" {
		kept := make([]*discoveryv1.EndpointSlice, 0, len(slices))
		for _, s := range slices {
			if s != nil && s.AddressType == family {
				kept = append(kept, s)
			}
		}
		slices = kept
	}
	return EndpointsFromSlices(namespace, name, slices)
}

// MirrorManagedBy is the endpointslice.kubernetes.io/managed-by label of the slices
// MirrorEndpoints makes: the one of Kubernetes' EndpointSlice mirroring controller.
const MirrorManagedBy = "endpointslicemirroring-controller.k8s.io"

// MirrorEndpoints returns the EndpointSlices that stand for an Endpoints object, as
// Kubernetes' EndpointSlice mirroring controller makes them for Endpoints that no
// selector manages: one slice per subset and address family, named
// "<name>-mirror-<subset index>" (IPv6: "-ipv6" appended), labelled with the service
// name and MirrorManagedBy, with the subset's ports; ready addresses are ready, the
// not-ready ones are not (the other conditions unset, as the controller leaves them).
// Addresses that are not IPs are left out. The trigger-time annotation is kept.
func MirrorEndpoints(e *corev1.Endpoints) []*discoveryv1.EndpointSlice {
	if e == nil {
		return nil
	}
	var out []*discoveryv1.EndpointSlice
	for i, sub := range e.Subsets {
		var ports []discoveryv1.EndpointPort
		for _, p := range sub.Ports {
			proto := corev1.Protocol(protocolName(p.Protocol))
			ports = append(ports, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &proto, AppProtocol: p.AppProtocol})
		}
		byType := map[discoveryv1.AddressType]*discoveryv1.EndpointSlice{}
		add := func(a corev1.EndpointAddress, ready bool) {
			t := addressType(a.IP)
			if t == "" {
				return
			}
			s := byType[t]
			if s == nil {
				name := fmt.Sprintf("%s-mirror-%d", e.Name, i)
				if t == discoveryv1.AddressTypeIPv6 {
					name += "-ipv6"
				}
				s = &discoveryv1.EndpointSlice{AddressType: t, Ports: ports}
				s.Namespace, s.Name = e.Namespace, name
				s.Labels = map[string]string{discoveryv1.LabelServiceName: e.Name, discoveryv1.LabelManagedBy: MirrorManagedBy}
				if v, ok := e.Annotations[corev1.EndpointsLastChangeTriggerTime]; ok {
					s.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: v}
				}
				byType[t] = s
			}
			ep := discoveryv1.Endpoint{Addresses: []string{a.IP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
				NodeName: a.NodeName, TargetRef: a.TargetRef}
			if a.Hostname != "" {
				ep.Hostname = &a.Hostname
			}
			s.Endpoints = append(s.Endpoints, ep)
		}
		for _, a := range sub.Addresses {
			add(a, true)
		}
		for _, a := range sub.NotReadyAddresses {
			add(a, false)
		}
		for _, t := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			if s := byType[t]; s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}
