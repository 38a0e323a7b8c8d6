package nodesync

import (
	"fmt"
	"net"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// API is what nodesync offers to the other plugins. Every method is safe to call from
// any goroutine.
type API interface {
	// GetNodeID returns this node's ID, 0 until the first resync gave it one.
	GetNodeID() uint32
	// GetAllNodes returns copies of the cluster's nodes that have an ID, by name.
	GetAllNodes() map[string]*Node
	// PublishNodeIPs makes addresses (each an IP with its prefix length) this node's
	// VPP addresses of the given IP version in its VppNode in etcd; the addresses of the
	// other version are kept. Nothing is written when they are already published.
	// Errors (no ID yet, etcd unreachable, a conflicting record) are returned; callers
	// log them as warnings and publish again later.
	PublishNodeIPs(addresses []*net.IPNet, version IPVersion) error
}

// IPVersion selects the address family PublishNodeIPs replaces.
type IPVersion int

const (
	// IPv4 selects IPv4 addresses.
	IPv4 IPVersion = 4
	// IPv6 selects IPv6 addresses.
	IPv6 IPVersion = 6
)

// String returns "IPv4" or "IPv6".
func (v IPVersion) String() string {
	switch v {
	case IPv4:
		return "IPv4"
	case IPv6:
		return "IPv6"
	}
	return fmt.Sprintf("IPVersion(%d)", int(v))
}

// matches reports whether ip is of the version.
func (v IPVersion) matches(ip net.IP) bool {
	if ip.To4() != nil {
		return v == IPv4
	}
	return v == IPv6 && len(ip) == net.IPv6len
}

// Node is what nodesync knows about one node of the cluster.
type Node struct {
	// ID is the node ID, 0 when the node has none (yet).
	ID uint32
	// Name is the Kubernetes node name.
	Name string
	// VppIPAddresses are the node's VPP addresses as published in its VppNode: the IP
	// of each is the interface address (not the network address), the mask its prefix.
	VppIPAddresses []*net.IPNet
	// MgmtIPAddresses are the node's InternalIP and ExternalIP addresses in Kubernetes.
	MgmtIPAddresses []net.IP
	// PodCIDR is the node's Kubernetes spec.podCIDR ("" when not assigned).
	PodCIDR string
}

// String describes the node in one line.
func (n *Node) String() string {
	if n == nil {
		return "<none>"
	}
	vpp := make([]string, len(n.VppIPAddresses))
	for i, a := range n.VppIPAddresses {
		vpp[i] = a.String()
	}
	mgmt := make([]string, len(n.MgmtIPAddresses))
	for i, ip := range n.MgmtIPAddresses {
		mgmt[i] = ip.String()
	}
	return fmt.Sprintf("ID=%d name=%s vpp-ips=[%s] mgmt-ips=[%s] pod-cidr=%q",
		n.ID, n.Name, strings.Join(vpp, ","), strings.Join(mgmt, ","), n.PodCIDR)
}

// clone returns a deep copy (nil for nil).
func (n *Node) clone() *Node {
	if n == nil {
		return nil
	}
	c := &Node{ID: n.ID, Name: n.Name, PodCIDR: n.PodCIDR}
	if n.VppIPAddresses != nil {
		c.VppIPAddresses = make([]*net.IPNet, len(n.VppIPAddresses))
		for i, a := range n.VppIPAddresses {
			c.VppIPAddresses[i] = &net.IPNet{IP: cloneIP(a.IP), Mask: append(net.IPMask(nil), a.Mask...)}
		}
	}
	if n.MgmtIPAddresses != nil {
		c.MgmtIPAddresses = make([]net.IP, len(n.MgmtIPAddresses))
		for i, ip := range n.MgmtIPAddresses {
			c.MgmtIPAddresses[i] = cloneIP(ip)
		}
	}
	return c
}

func cloneIP(ip net.IP) net.IP { return append(net.IP(nil), ip...) }

// NodeUpdateName is the GetName of NodeUpdate. The service plugin matches events by it
// (so that a NodeUpdate of another type, e.g. in tests, is handled too); ipam, which does
// not import nodesync (cmd/contiv-agent adapts nodesync to ipam.NodeSync), keeps its own
// copy, ipam.NodeUpdateEventName, which must stay equal to it.
const NodeUpdateName = "Node Update"

// NodeUpdate reports that another node joined, left or changed, or that this node's
// management IPs or pod CIDR changed. States without an ID are nil: PrevState is nil
// when the node just got its ID, NewState is nil when it lost it (or was removed). The
// states are copies that handlers may keep.
type NodeUpdate struct {
	// NodeName is the name of the node that changed.
	NodeName string
	// PrevState is the node before the change, nil when it had no ID.
	PrevState *Node
	// NewState is the node after the change, nil when it has no ID.
	NewState *Node
}

// GetName returns "Node Update".
func (ev *NodeUpdate) GetName() string { return NodeUpdateName }

// String says what happened to which node and shows both states.
func (ev *NodeUpdate) String() string {
	return fmt.Sprintf("%s: %s\n * previous: %s\n * new: %s", ev.GetName(), ev.describe(), ev.PrevState, ev.NewState)
}

// describe summarises the change: "node worker1 (ID 2) updated".
func (ev *NodeUpdate) describe() string {
	switch {
	case ev.PrevState == nil && ev.NewState != nil:
		return fmt.Sprintf("node %s (ID %d) added", ev.NodeName, ev.NewState.ID)
	case ev.PrevState != nil && ev.NewState == nil:
		return fmt.Sprintf("node %s (ID %d) removed", ev.NodeName, ev.PrevState.ID)
	case ev.NewState != nil:
		return fmt.Sprintf("node %s (ID %d) updated", ev.NodeName, ev.NewState.ID)
	}
	return fmt.Sprintf("node %s unchanged", ev.NodeName)
}

// Method is Update.
func (ev *NodeUpdate) Method() api.EventMethodType { return api.Update }

// TransactionType is BestEffort.
func (ev *NodeUpdate) TransactionType() api.UpdateTransactionType { return api.BestEffort }

// Direction is Forward.
func (ev *NodeUpdate) Direction() api.UpdateDirectionType { return api.Forward }

// IsBlocking is false: nobody waits for a NodeUpdate.
func (ev *NodeUpdate) IsBlocking() bool { return false }

// Done does nothing.
func (ev *NodeUpdate) Done(error) {}
