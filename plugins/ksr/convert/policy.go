package convert

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/policy"
)

// selectorOperators maps the label selector operators onto the model's.
var selectorOperators = map[metav1.LabelSelectorOperator]policy.Policy_LabelSelector_LabelExpression_Operator{
	metav1.LabelSelectorOpIn:           policy.Policy_LabelSelector_LabelExpression_IN,
	metav1.LabelSelectorOpNotIn:        policy.Policy_LabelSelector_LabelExpression_NOT_IN,
	metav1.LabelSelectorOpExists:       policy.Policy_LabelSelector_LabelExpression_EXISTS,
	metav1.LabelSelectorOpDoesNotExist: policy.Policy_LabelSelector_LabelExpression_DOES_NOT_EXIST,
}

// Policy converts a NetworkPolicy: identity, labels (sorted by key), the pod selector,
// the policy type derived from policyTypes (none: DEFAULT), and the ingress and egress
// rules with their ports (protocol TCP, UDP or SCTP, TCP when unset; port by number or
// name; no port: all ports of the protocol; endPort: a range from the numbered port)
// and peers (pod selector and namespace selector, both kept when both are given, or an
// IP block with its exceptions). A peer selector that is not set stays unset, an empty
// one stays empty (it selects everything).
//
// A policy the model cannot represent, or that the API server would have refused, is
// refused with an error rather than converted into a policy that allows different
// traffic: unknown protocols, policy types and selector operators, an endPort without
// a numbered port or below it, and ports outside 1-65535.
func Policy(p *networkingv1.NetworkPolicy) (*policy.Policy, error) {
	if p == nil {
		return nil, fmt.Errorf("network policy: %w", errNil)
	}
	if err := checkNamespaced("network policy", p.Namespace, p.Name); err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (*policy.Policy, error) {
		return nil, fmt.Errorf("network policy %s/%s: %s", p.Namespace, p.Name, fmt.Sprintf(format, args...))
	}
	out := &policy.Policy{Name: p.Name, Namespace: p.Namespace}
	for _, k := range sortedKeys(p.Labels) {
		out.Label = append(out.Label, &policy.Policy_Label{Key: k, Value: p.Labels[k]})
	}
	var err error
	if out.Pods, err = labelSelector(&p.Spec.PodSelector); err != nil {
		return fail("podSelector: %v", err)
	}
	if out.PolicyType, err = policyType(p.Spec.PolicyTypes); err != nil {
		return fail("policyTypes: %v", err)
	}
	for i, r := range p.Spec.Ingress {
		rule := &policy.Policy_IngressRule{}
		if rule.Port, err = policyPorts(r.Ports); err != nil {
			return fail("ingress[%d]: %v", i, err)
		}
		if rule.From, err = policyPeers(r.From); err != nil {
			return fail("ingress[%d]: %v", i, err)
		}
		out.IngressRule = append(out.IngressRule, rule)
	}
	for i, r := range p.Spec.Egress {
		rule := &policy.Policy_EgressRule{}
		if rule.Port, err = policyPorts(r.Ports); err != nil {
			return fail("egress[%d]: %v", i, err)
		}
		if rule.To, err = policyPeers(r.To); err != nil {
			return fail("egress[%d]: %v", i, err)
		}
		out.EgressRule = append(out.EgressRule, rule)
	}
	return out, nil
}

// policyType derives the model's policy type from the policyTypes list.
func policyType(types []networkingv1.PolicyType) (policy.Policy_PolicyType, error) {
	var ingress, egress bool
	for _, t := range types {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		default:
			return 0, fmt.Errorf("unknown policy type %q", t)
		}
	}
	switch {
	case ingress && egress:
		return policy.Policy_INGRESS_AND_EGRESS, nil
	case ingress:
		return policy.Policy_INGRESS, nil
	case egress:
		return policy.Policy_EGRESS, nil
	default:
		return policy.Policy_DEFAULT, nil
	}
}

// maxPort is the largest TCP, UDP and SCTP port.
const maxPort = 65535

func policyPorts(in []networkingv1.NetworkPolicyPort) ([]*policy.Policy_Port, error) {
	var out []*policy.Policy_Port
	for i, p := range in {
		mp := &policy.Policy_Port{}
		if p.Protocol != nil {
			switch *p.Protocol {
			case corev1.ProtocolTCP, "":
			case corev1.ProtocolUDP:
				mp.Protocol = policy.Policy_Port_UDP
			case corev1.ProtocolSCTP:
				mp.Protocol = policy.Policy_Port_SCTP
			default:
				return nil, fmt.Errorf("ports[%d]: protocol %q is not supported", i, *p.Protocol)
			}
		}
		if p.Port != nil {
			if p.Port.Type == intstr.String {
				if p.Port.StrVal == "" {
					return nil, fmt.Errorf("ports[%d]: empty port name", i)
				}
				mp.Port = &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NAME, Name: p.Port.StrVal}
			} else {
				if p.Port.IntVal < 1 || p.Port.IntVal > maxPort {
					return nil, fmt.Errorf("ports[%d]: port %d is outside 1-%d", i, p.Port.IntVal, maxPort)
				}
				mp.Port = &policy.Policy_Port_PortNameOrNumber{Type: policy.Policy_Port_PortNameOrNumber_NUMBER, Number: p.Port.IntVal}
			}
		}
		if p.EndPort != nil {
			switch {
			case mp.Port == nil || mp.Port.Type != policy.Policy_Port_PortNameOrNumber_NUMBER:
				return nil, fmt.Errorf("ports[%d]: endPort %d needs a numbered port", i, *p.EndPort)
			case *p.EndPort < mp.Port.Number || *p.EndPort > maxPort:
				return nil, fmt.Errorf("ports[%d]: endPort %d is outside %d-%d", i, *p.EndPort, mp.Port.Number, maxPort)
			}
			mp.EndPort = *p.EndPort
		}
		out = append(out, mp)
	}
	return out, nil
}

func policyPeers(in []networkingv1.NetworkPolicyPeer) ([]*policy.Policy_Peer, error) {
	var out []*policy.Policy_Peer
	for i, p := range in {
		mp := &policy.Policy_Peer{}
		var err error
		if mp.Pods, err = labelSelector(p.PodSelector); err != nil {
			return nil, fmt.Errorf("peers[%d].podSelector: %w", i, err)
		}
		if mp.Namespaces, err = labelSelector(p.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("peers[%d].namespaceSelector: %w", i, err)
		}
		if b := p.IPBlock; b != nil {
			mp.IpBlock = &policy.Policy_Peer_IPBlock{Cidr: b.CIDR, Except: copyStrings(b.Except)}
		}
		out = append(out, mp)
	}
	return out, nil
}

// labelSelector converts a selector; nil stays nil.
func labelSelector(s *metav1.LabelSelector) (*policy.Policy_LabelSelector, error) {
	if s == nil {
		return nil, nil
	}
	out := &policy.Policy_LabelSelector{}
	for _, k := range sortedKeys(s.MatchLabels) {
		out.MatchLabel = append(out.MatchLabel, &policy.Policy_Label{Key: k, Value: s.MatchLabels[k]})
	}
	for i, e := range s.MatchExpressions {
		op, ok := selectorOperators[e.Operator]
		if !ok {
			return nil, fmt.Errorf("matchExpressions[%d]: unknown operator %q", i, e.Operator)
		}
		out.MatchExpression = append(out.MatchExpression, &policy.Policy_LabelSelector_LabelExpression{
			Key: e.Key, Operator: op, Value: copyStrings(e.Values),
		})
	}
	return out, nil
}
