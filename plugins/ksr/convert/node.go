package convert

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/namespace"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
)

// nodeAddressTypes maps the Kubernetes node address types onto the model's; other
// types become NodeUnknownAddr.
var nodeAddressTypes = map[corev1.NodeAddressType]node.NodeAddress_NodeAddressType{
	corev1.NodeHostName:    node.NodeAddress_NodeHostName,
	corev1.NodeExternalIP:  node.NodeAddress_NodeExternalIP,
	corev1.NodeInternalIP:  node.NodeAddress_NodeInternalIP,
	corev1.NodeExternalDNS: node.NodeAddress_NodeExternalDNS,
	corev1.NodeInternalDNS: node.NodeAddress_NodeInternalDNS,
}

// Node converts a Node: name, pod CIDR and pod CIDRs (one per IP family), provider ID,
// addresses of every family with their type (in the order of the status), the system information and the zone (the
// topology.kubernetes.io/zone label, which topology-aware routing compares with the
// hints of endpoints).
func Node(n *corev1.Node) (*node.Node, error) {
	if n == nil {
		return nil, fmt.Errorf("node: %w", errNil)
	}
	if err := checkName("node", n.Name); err != nil {
		return nil, err
	}
	info := n.Status.NodeInfo
	out := &node.Node{
		Name:        n.Name,
		Pod_CIDR:    n.Spec.PodCIDR,
		Pod_CIDRs:   copyStrings(n.Spec.PodCIDRs),
		Provider_ID: n.Spec.ProviderID,
		Zone:        n.Labels[corev1.LabelTopologyZone],
		NodeInfo: &node.NodeSystemInfo{
			Machine_ID:              info.MachineID,
			System_UUID:             info.SystemUUID,
			Boot_ID:                 info.BootID,
			KernelVersion:           info.KernelVersion,
			OsImage:                 info.OSImage,
			ContainerRuntimeVersion: info.ContainerRuntimeVersion,
			KubeletVersion:          info.KubeletVersion,
			OperatingSystem:         info.OperatingSystem,
			Architecture:            info.Architecture,
		},
	}
	if out.Pod_CIDR == "" && len(out.Pod_CIDRs) > 0 {
		out.Pod_CIDR = out.Pod_CIDRs[0] // spec.podCIDR is podCIDRs[0] (API validation); a file may set only podCIDRs
	}
	//lint:ignore SA1019 the model keeps kube_proxy_version; kubelets of Kubernetes 1.31+ leave it empty.
	out.NodeInfo.KubeProxyVersion = info.KubeProxyVersion
	for _, a := range n.Status.Addresses {
		out.Addresses = append(out.Addresses, &node.NodeAddress{
			Type:    nodeAddressTypes[a.Type], // unknown types: the zero value, NodeUnknownAddr
			Address: a.Address,
		})
	}
	return out, nil
}

// Namespace converts a Namespace: its name and labels (sorted by key).
func Namespace(n *corev1.Namespace) (*namespace.Namespace, error) {
	if n == nil {
		return nil, fmt.Errorf("namespace: %w", errNil)
	}
	if err := checkName("namespace", n.Name); err != nil {
		return nil, err
	}
	out := &namespace.Namespace{Name: n.Name}
	for _, k := range sortedKeys(n.Labels) {
		out.Label = append(out.Label, &namespace.Namespace_Label{Key: k, Value: n.Labels[k]})
	}
	return out, nil
}
