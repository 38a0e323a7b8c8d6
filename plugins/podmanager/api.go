package podmanager

import (
	"errors"
	"fmt"
	"net"
	"strings"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// API is what other plugins may ask the pod manager (from the event loop).
type API interface {
	// GetLocalPods returns the pods that CNI connected on this node, by pod ID.
	GetLocalPods() LocalPods
}

// LocalPod is a pod running on this node, as CNI announced it.
type LocalPod struct {
	// ID is the pod's name and namespace.
	ID podmodel.ID
	// ContainerID is the ID of the pod's sandbox container.
	ContainerID string
	// NetworkNamespace is the path of the pod's network namespace.
	NetworkNamespace string
	// IPAddress is the pod's IP once its CNI ADD succeeded (nil before): the primary
	// one, IPAddresses[0].
	IPAddress net.IP
	// IPAddresses are the pod's IPs of every family once its CNI ADD succeeded, the
	// primary first ([IPv4, IPv6] on a dual-stack node; nil before).
	IPAddresses []net.IP
	// IfName is the name of the pod's interface inside the pod (CNI_IFNAME).
	IfName string
}

// LocalPods maps pod IDs to local pods.
type LocalPods map[podmodel.ID]*LocalPod

// AddPod is the blocking event of a CNI ADD: the handlers wire the pod (RevertOnFailure,
// Forward) and fill in the interfaces and routes that the CNI reply reports.
type AddPod struct {
	api.Result

	// Pod is the pod being added.
	Pod podmodel.ID
	// ContainerID is the ID of the pod's sandbox container.
	ContainerID string
	// NetworkNamespace is the path of the pod's network namespace.
	NetworkNamespace string
	// IfName is the name to give the pod's interface inside the pod (CNI_IFNAME).
	IfName string
	// IPAMType is the type of the external IPAM plugin that chose the IP ("" = ours).
	IPAMType string
	// IPAMData is the external IPAM plugin's result (JSON).
	IPAMData string

	// Interfaces is filled by the handlers: the pod's interfaces as the CNI result
	// reports them.
	Interfaces []PodInterface
	// Routes is filled by the handlers: the pod's routes.
	Routes []Route
}

// PodInterface is one interface of a pod in the CNI reply.
type PodInterface struct {
	// HostName is the interface name inside the pod (e.g. "eth0").
	HostName string
	// MAC is the interface's hardware address ("" when unknown).
	MAC string
	// IPAddresses are the interface's addresses with their gateways.
	IPAddresses []*IPWithGateway
}

// IPWithGateway is an address of a pod interface with its gateway.
type IPWithGateway struct {
	// Address is the address and its prefix (e.g. 10.1.1.2/32).
	Address *net.IPNet
	// Gateway is the next hop for the pod's default route (nil when none).
	Gateway net.IP
}

// Route is a route of a pod in the CNI reply.
type Route struct {
	// Network is the destination.
	Network *net.IPNet
	// Gateway is the next hop.
	Gateway net.IP
}

// DefaultIfName is the name of the pod's interface when CNI_IFNAME is not given (and
// that of the pods an agent recorded before it honoured CNI_IFNAME).
const DefaultIfName = "eth0"

// ValidateIfName reports why Linux would refuse name as an interface name: it must be 1
// to 15 bytes (IFNAMSIZ - 1), hold no '/', ':', whitespace or NUL, and be neither "."
// nor "..".
func ValidateIfName(name string) error {
	switch {
	case name == "":
		return errors.New("interface name is empty")
	case len(name) > maxIfNameLen:
		return fmt.Errorf("interface name %q is longer than %d bytes", name, maxIfNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is not allowed", name)
	case strings.ContainsAny(name, "/: \t\n\v\f\r\x00"):
		return fmt.Errorf("interface name %q holds '/', ':', whitespace or NUL", name)
	}
	return nil
}

// maxIfNameLen is the longest Linux interface name (IFNAMSIZ - 1).
const maxIfNameLen = 15

// MaxNetnsPathLen is the longest network-namespace path the agent accepts: VPP creates a
// pod's TAP with tap_create_v3, whose host_namespace is a fixed 64-byte string (63 bytes
// and the terminating NUL). A longer path would be cut and the TAP's Linux side created
// in another (usually no) namespace, so it is refused instead.
const MaxNetnsPathLen = 63

// ValidateNetnsPath reports why the agent cannot wire a pod into the network namespace at
// path: it must not be empty nor longer than MaxNetnsPathLen bytes. It never shortens it.
func ValidateNetnsPath(path string) error {
	switch {
	case path == "":
		return errors.New("no network namespace")
	case len(path) > MaxNetnsPathLen:
		return fmt.Errorf("network namespace path %q is %d bytes, longer than the %d bytes VPP takes (tap_create_v3 host_namespace)",
			path, len(path), MaxNetnsPathLen)
	}
	return nil
}

// NewAddPod returns an AddPod event ready to be waited for; the pod's interface is
// DefaultIfName.
func NewAddPod(pod podmodel.ID, containerID, netns string) *AddPod {
	return &AddPod{Result: api.NewResult(), Pod: pod, ContainerID: containerID, NetworkNamespace: netns,
		IfName: DefaultIfName}
}

// GetName returns "Add Pod".
func (ev *AddPod) GetName() string { return "Add Pod" }

// String describes the pod and its sandbox.
func (ev *AddPod) String() string {
	s := fmt.Sprintf("Add Pod %s (container %s, netns %s", ev.Pod, ev.ContainerID, ev.NetworkNamespace)
	if ev.IfName != DefaultIfName {
		s += ", interface " + ev.IfName
	}
	if ev.IPAMType != "" {
		s += ", IPAM " + ev.IPAMType
	}
	return s + ")"
}

// Method is Update.
func (ev *AddPod) Method() api.EventMethodType { return api.Update }

// TransactionType is RevertOnFailure: a pod is wired completely or not at all.
func (ev *AddPod) TransactionType() api.UpdateTransactionType { return api.RevertOnFailure }

// Direction is Forward.
func (ev *AddPod) Direction() api.UpdateDirectionType { return api.Forward }

// IsBlocking is true: the CNI request waits for the result.
func (ev *AddPod) IsBlocking() bool { return true }

// DeletePod is the blocking event of a CNI DEL: the handlers unwire the pod in reverse
// order, ignoring partial errors (a CNI DEL must not fail because of them).
type DeletePod struct {
	api.Result

	// Pod is the pod being deleted.
	Pod podmodel.ID
}

// NewDeletePod returns a DeletePod event ready to be waited for.
func NewDeletePod(pod podmodel.ID) *DeletePod {
	return &DeletePod{Result: api.NewResult(), Pod: pod}
}

// GetName returns "Delete Pod".
func (ev *DeletePod) GetName() string { return "Delete Pod" }

// String names the pod.
func (ev *DeletePod) String() string { return "Delete Pod " + ev.Pod.String() }

// Method is Update.
func (ev *DeletePod) Method() api.EventMethodType { return api.Update }

// TransactionType is BestEffortIgnoreErrors.
func (ev *DeletePod) TransactionType() api.UpdateTransactionType { return api.BestEffortIgnoreErrors }

// Direction is Reverse: dependents (services) let go of the pod before its wiring goes.
func (ev *DeletePod) Direction() api.UpdateDirectionType { return api.Reverse }

// IsBlocking is true: the CNI request waits for the result.
func (ev *DeletePod) IsBlocking() bool { return true }

// String lists the interfaces of a CNI reply, for logs.
func (i PodInterface) String() string {
	addrs := make([]string, len(i.IPAddresses))
	for k, a := range i.IPAddresses {
		addrs[k] = a.Address.String()
		if a.Gateway != nil {
			addrs[k] += " gw " + a.Gateway.String()
		}
	}
	return i.HostName + "[" + strings.Join(addrs, ", ") + "]"
}
