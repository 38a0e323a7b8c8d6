// Package lbfirewall enforces the loadBalancerSourceRanges of Services: traffic from
// outside the ranges to a LoadBalancer ingress IP, on the Service's ports and
// protocols, is dropped on the node's uplinks, before NAT translates it (VPP runs input
// ACLs before NAT, spec/vpp-forwarding.md §8); every other packet passes.
//
//	Service (KubeStateChange, resync) ──> Firewall ──> ACL contiv-lb-ranges-<hash> per Service with ranges
//	                                         │          ACL contiv-lb-permit-rest (while one exists)
//	                                         └─ifacls.Lists (owner "service")──> input lists of the uplinks
//
// What kube-proxy does, and this package with it (pkg/proxy/iptables and nftables:
// the firewall chain of a Service): the ranges apply to the load balancer ingress IPs
// of mode VIP only, for the Service's ports and protocols; not to the node ports, the
// cluster IPs or the external IPs. Invalid ranges are skipped (logged); a Service
// whose ranges are all invalid is not filtered.
//
// The ACL of a Service: for each ingress IP and port, a PERMIT per range (source the
// range, destination the IP, the protocol and port), then a DENY of every other
// source to that IP, protocol and port. It ends without a catch-all, so a packet it
// does not decide reaches the next ACL of the list. The input list of an uplink is
// the ACLs of the Services in name order, then the ACLs of the network policies
// (ifacls merges them: the policy renderer's REFLECTION ends its part with a permit
// of everything), or, without them, contiv-lb-permit-rest (permit any): the list
// always ends with a permit of the rest. In-range packets are permitted without a
// reflective session: their replies leave the uplink with the ingress IP as source
// (NAT restores it), which no rule of the policies' output ACL names.
//
// Differences from kube-proxy: the filter sits on the uplinks (the main and other VPP
// interfaces), so traffic of pods and of the node to an ingress IP is not filtered
// (kube-proxy filters every source; there a node whose address is in a range may
// also reach the IP from the IP itself, which does not arise here).
//
// Costs: a change of one Service stages its ACL and, when it starts or stops being
// filtered, the uplinks' lists (O(filtered Services) names); a resync is O(Services).
// The Firewall is used from the controller's event loop only.
package lbfirewall

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	svcmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/service"
	vpp_acl "github.com/contiv-vpp/contiv-vpp/api/models/vpp/acl"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ifacls"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// Names of the ACLs.
const (
	// NamePrefix starts the name of the ACL of a Service.
	NamePrefix = "contiv-lb-ranges-"
	// PermitRestName is the ACL that permits everything, last in the list while no
	// policy ACL follows.
	PermitRestName = "contiv-lb-permit-rest"
)

// Deps lists what the firewall needs.
type Deps struct {
	// Log receives the skipped ranges.
	Log logrus.FieldLogger
	// Lists merges the uplinks' lists with the other plugins' ACLs.
	Lists *ifacls.Lists
	// Uplinks are the VPP interfaces towards the outside (the main and the other
	// VPP interfaces of the node).
	Uplinks []string
}

// Firewall keeps the ACLs of the Services with source ranges.
type Firewall struct {
	Deps
	acls map[renderer.ServiceID]*vpp_acl.ACL
}

// New returns a firewall without Services.
func New(deps Deps) *Firewall {
	return &Firewall{Deps: deps, acls: make(map[renderer.ServiceID]*vpp_acl.ACL)}
}

// ACLName returns the name of the ACL of a Service (a VPP tag: short, no slash).
func ACLName(id renderer.ServiceID) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id.String()))
	return fmt.Sprintf("%s%016x", NamePrefix, h.Sum64())
}

// protocols maps the Kubernetes protocol names to IP protocol numbers.
var protocols = map[string]uint32{"TCP": 6, "UDP": 17, "SCTP": 132}

// Rules returns the rules of the Service's ACL, nil when it is not filtered (not a
// LoadBalancer, left to another proxy by its labels, no ingress IP of mode VIP, no
// valid range). Skipped ranges and addresses are returned as errors naming field and
// value.
func Rules(svc *svcmodel.Service) (rules []*vpp_acl.ACL_Rule, skipped []error) {
	if svc.GetServiceType() != "LoadBalancer" || len(svc.GetLoadbalancerSourceRanges()) == 0 {
		return nil, nil
	}
	if _, other := svcmodel.OtherProxyLabel(svc); other {
		return nil, nil
	}
	var ranges []netip.Prefix
	for _, r := range svc.GetLoadbalancerSourceRanges() {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil || !p.Addr().Is4() {
			skipped = append(skipped, fmt.Errorf("loadBalancerSourceRanges %q: not an IPv4 CIDR", r))
			continue
		}
		ranges = append(ranges, p.Masked())
	}
	if len(ranges) == 0 {
		return nil, skipped
	}
	for _, text := range svc.GetLbIngressIps() {
		if slices.Contains(svc.GetLbIngressProxyIps(), text) {
			continue // ipMode Proxy: the traffic goes to the load balancer, not to the node
		}
		ip, err := netip.ParseAddr(text)
		if err != nil || !ip.Is4() {
			skipped = append(skipped, fmt.Errorf("status.loadBalancer.ingress ip %q: not an IPv4 address", text))
			continue
		}
		dst := netip.PrefixFrom(ip, 32).String()
		for _, port := range svc.GetPort() {
			proto, ok := protocols[port.GetProtocol()]
			if !ok || port.GetPort() <= 0 || port.GetPort() > 65535 {
				skipped = append(skipped, fmt.Errorf("port %q (%s %d): not filtered", port.GetName(), port.GetProtocol(), port.GetPort()))
				continue
			}
			ports := &vpp_acl.ACL_Rule_PortRange{LowerPort: uint32(port.GetPort()), UpperPort: uint32(port.GetPort())}
			for _, r := range ranges {
				rules = append(rules, &vpp_acl.ACL_Rule{Action: vpp_acl.ACL_Rule_PERMIT, SourceNetwork: r.String(),
					DestinationNetwork: dst, Protocol: proto, DestinationPortRange: ports})
			}
			rules = append(rules, &vpp_acl.ACL_Rule{Action: vpp_acl.ACL_Rule_DENY, DestinationNetwork: dst,
				Protocol: proto, DestinationPortRange: ports})
		}
	}
	return rules, skipped
}

// acl returns the ACL of a Service, nil when it is not filtered; skipped parts are
// logged.
func (f *Firewall) acl(svc *svcmodel.Service) *vpp_acl.ACL {
	id := renderer.ServiceID{Namespace: svc.GetNamespace(), Name: svc.GetName()}
	rules, skipped := Rules(svc)
	for _, err := range skipped {
		if f.Log != nil {
			f.Log.WithField("service", id.String()).WithError(err).Warn("LB source range filter: skipped")
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return &vpp_acl.ACL{Name: ACLName(id), Rules: rules}
}

// UpdateService takes a change of a Service object (prev nil: added; svc nil:
// deleted), stages what changed into txn and returns its description ("" for none).
func (f *Firewall) UpdateService(txn controller.UpdateOperations, prev, svc proto.Message) (string, error) {
	obj := svc
	if obj == nil {
		obj = prev
	}
	s, ok := obj.(*svcmodel.Service)
	if !ok || s == nil {
		return "", fmt.Errorf("LB source ranges: service change of type %T, want *service.Service", obj)
	}
	id := renderer.ServiceID{Namespace: s.GetNamespace(), Name: s.GetName()}
	var next *vpp_acl.ACL
	if svc != nil {
		next = f.acl(s)
	}
	cur := f.acls[id]
	switch {
	case cur == nil && next == nil:
		return "", nil
	case cur != nil && next != nil:
		if proto.Equal(cur, next) {
			return "", nil
		}
		f.acls[id] = next
		txn.Put(vpp_acl.ACLKey(next.Name), next) // replaced in place: the lists keep it
		return fmt.Sprintf("update LB source ranges of '%s'", id), nil
	case next != nil:
		if len(f.acls) == 0 {
			txn.Put(vpp_acl.ACLKey(PermitRestName), permitRest())
		}
		f.acls[id] = next
		txn.Put(vpp_acl.ACLKey(next.Name), next)
		f.setLists(txn)
		return fmt.Sprintf("add LB source ranges of '%s'", id), nil
	default:
		delete(f.acls, id)
		f.setLists(txn)
		txn.Delete(vpp_acl.ACLKey(cur.Name))
		if len(f.acls) == 0 {
			txn.Delete(vpp_acl.ACLKey(PermitRestName))
		}
		return fmt.Sprintf("remove LB source ranges of '%s'", id), nil
	}
}

// ResyncServices stages the ACLs of every Service with source ranges and the uplinks'
// lists.
func (f *Firewall) ResyncServices(txn controller.ResyncOperations, services controller.KeyValuePairs) {
	clear(f.acls)
	for _, v := range services {
		s, ok := v.(*svcmodel.Service)
		if !ok {
			continue
		}
		if acl := f.acl(s); acl != nil {
			f.acls[renderer.ServiceID{Namespace: s.GetNamespace(), Name: s.GetName()}] = acl
			txn.Put(vpp_acl.ACLKey(acl.Name), acl)
		}
	}
	if len(f.acls) > 0 {
		txn.Put(vpp_acl.ACLKey(PermitRestName), permitRest())
	}
	parts := make(map[string]ifacls.Part, len(f.Uplinks))
	if p := f.part(); !p.IsEmpty() {
		for _, iface := range f.Uplinks {
			parts[iface] = p
		}
	}
	f.Lists.Resync(txn, ifacls.ServiceOwner, parts)
}

// part returns the firewall's part of an uplink's lists.
func (f *Firewall) part() ifacls.Part {
	if len(f.acls) == 0 {
		return ifacls.Part{}
	}
	names := make([]string, 0, len(f.acls))
	for _, acl := range f.acls {
		names = append(names, acl.Name)
	}
	slices.Sort(names)
	return ifacls.Part{Input: names, InputTail: PermitRestName}
}

func (f *Firewall) setLists(txn controller.UpdateOperations) {
	p := f.part()
	for _, iface := range f.Uplinks {
		f.Lists.Set(txn, ifacls.ServiceOwner, iface, p)
	}
}

func permitRest() *vpp_acl.ACL {
	return &vpp_acl.ACL{Name: PermitRestName, Rules: []*vpp_acl.ACL_Rule{{Action: vpp_acl.ACL_Rule_PERMIT}}}
}
