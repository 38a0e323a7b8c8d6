package convert

import (
	"errors"
	"fmt"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
)

// errNil is returned for nil objects.
var errNil = errors.New("nil object")

// Pod converts a Pod: identity, labels (sorted by key), pod IPs (status.podIPs, every
// family, the primary first, and the primary alone in ip_address for agents of the
// previous release) and host IP from the status, the ports of its containers and the
// annotations that agents read (pod.AgentAnnotations; every other key is left out:
// see PodLimits for the bound on the values kept). The containers are the regular ones
// followed by the native sidecars (init containers with restartPolicy Always, which
// run beside the regular ones for the pod's whole life, so their named ports are
// NetworkPolicy targets like any other); other init containers have finished before
// the pod serves and are left out.
//
// The model knows TCP and UDP ports only. SCTP container ports are left out, because
// the agent uses container ports to resolve the named ports of TCP and UDP policy
// rules, and an SCTP port reported as TCP would make such a rule match the wrong port.
func Pod(p *corev1.Pod) (*pod.Pod, error) {
	if p == nil {
		return nil, fmt.Errorf("pod: %w", errNil)
	}
	if err := checkNamespaced("pod", p.Namespace, p.Name); err != nil {
		return nil, err
	}
	out := &pod.Pod{
		Name:          p.Name,
		Namespace:     p.Namespace,
		IpAddress:     p.Status.PodIP,
		HostIpAddress: p.Status.HostIP,
		Annotations:   AgentAnnotations(p.Annotations),
	}
	for _, ip := range p.Status.PodIPs {
		out.IpAddresses = append(out.IpAddresses, ip.IP)
	}
	if out.IpAddress == "" && len(out.IpAddresses) > 0 {
		out.IpAddress = out.IpAddresses[0] // status.podIP is podIPs[0] (API validation); a file may set only podIPs
	}
	for _, k := range sortedKeys(p.Labels) {
		out.Label = append(out.Label, &pod.Pod_Label{Key: k, Value: p.Labels[k]})
	}
	for _, c := range servingContainers(p) {
		mc := &pod.Pod_Container{Name: c.Name}
		for _, cp := range c.Ports {
			var proto pod.Pod_Container_Port_Protocol
			switch cp.Protocol {
			case corev1.ProtocolTCP, "":
				proto = pod.Pod_Container_Port_TCP
			case corev1.ProtocolUDP:
				proto = pod.Pod_Container_Port_UDP
			default:
				continue // SCTP (see the function comment)
			}
			mc.Port = append(mc.Port, &pod.Pod_Container_Port{
				Name:          cp.Name,
				HostPort:      cp.HostPort,
				ContainerPort: cp.ContainerPort,
				Protocol:      proto,
				HostIpAddress: cp.HostIP,
			})
		}
		out.Container = append(out.Container, mc)
	}
	return out, nil
}

// servingContainers returns the containers that run while the pod serves: the regular
// ones, then the native sidecars in the order of the spec.
func servingContainers(p *corev1.Pod) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(p.Spec.Containers)+len(p.Spec.InitContainers))
	for i := range p.Spec.Containers {
		out = append(out, &p.Spec.Containers[i])
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// checkNamespaced refuses objects without a name or namespace: they have no key.
func checkNamespaced(kind, namespace, name string) error {
	if name == "" {
		return fmt.Errorf("%s in namespace %q: no name", kind, namespace)
	}
	if namespace == "" {
		return fmt.Errorf("%s %s: no namespace", kind, name)
	}
	return nil
}

// checkName refuses cluster-scoped objects without a name.
func checkName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%s: no name", kind)
	}
	return nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// copyMap returns a copy of m, nil when m is empty (so empty and missing maps give equal
// values).
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// copyStrings returns a copy of s, nil when s is empty.
func copyStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}
