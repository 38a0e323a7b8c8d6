package ipnet

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/sirupsen/logrus"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// Deps lists what the plugin needs; it is the one place its dependencies are declared.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// NodeName is this node's name (env MICROSERVICE_LABEL); NodeUpdates of this node
	// are not handled, and its entry of GetAllNodes is not a peer.
	NodeName string
	// EventLoop receives NodeIPv4Change events (DHCP only).
	EventLoop api.EventLoop
	// ContivConf provides the configuration as resolved for this node.
	ContivConf contivconf.API
	// IPAM provides the address plan and allocates the pod IPs. With HTTPHandlers set
	// it must also serve GET /contiv/v1/ipam (see IPAMDataServer): the ipam plugin does.
	IPAM ipam.API
	// NodeSync provides this node's ID and the other nodes, and publishes this node's
	// VPP IPs.
	NodeSync nodesync.API
	// PodManager lists the local pods, to wire them again on resync.
	PodManager podmanager.API
	// VPPIfPlugin provides the DHCP leases; needed only when the main interface uses
	// DHCP.
	VPPIfPlugin VPPIfPlugin
	// HTTPHandlers, when set, gets GET /contiv/v1/ipam registered at Init.
	HTTPHandlers infra.HandlerRegistrar
	// GetHostLinkIPs lists the addresses of the host's own links (nil: read them with
	// netlink, see DumpHostLinkIPs).
	GetHostLinkIPs HostLinkIPsDumpClb
	// EnablePodIPv6 turns IPv6 on in a pod's network namespace (given by its path)
	// before the pod's loopback gets ::1; failures are logged and ignored (nil: write
	// the sysctl inside the namespace, see EnableIPv6InNetns).
	EnablePodIPv6 func(netnsPath string) error
	// ValueStatus returns the scheduler's state of a key ("CONFIGURED", "PENDING", ...)
	// and its last error; optional. With it, CheckPodWiring also checks that the pod's
	// interfaces are configured.
	ValueStatus func(key string) (state, lastError string)
}

// IPAMDataServer is what ipnet needs of the IPAM to serve GET /contiv/v1/ipam: the
// handler that reports the address plan for the node IP that ipnet knows.
type IPAMDataServer interface {
	IPAMDataHandler(nodeIP func() net.IP) func(http.ResponseWriter, *http.Request)
}

// IPNet builds the VPP and Linux configuration connecting the pods of this node, the
// host stack and the other nodes (see the package documentation). It is an event
// handler of the controller and implements API.
type IPNet struct {
	Deps

	// State owned by the event loop.
	settings *settings // of the last resync
	hostIPs  []net.IP
	pods     map[podmodel.ID]*localPod
	peers    map[string]*nodesync.Node // other nodes by name, as last seen

	// shared holds what other goroutines read; a pointer, so that IPNet stays
	// copyable (StateToString has a value receiver).
	shared *sharedState
}

// sharedState is the part of the state read outside the event loop (REST, DHCP
// watcher, the plugins calling GetPodByIf).
type sharedState struct {
	mu        sync.RWMutex
	nodeIP    net.IP
	nodeIPNet *net.IPNet // the network of nodeIP (host bits cleared)
	ifToPod   map[string]podmodel.ID
	podIfs    map[podmodel.ID][2]string // pod -> its VPP and Linux interface names
	dhcpIf    string                    // the interface whose lease gives the node IP ("" = no DHCP)
	dhcpAddr  string                    // the leased address in use or last pushed, "" for none
	watching  bool
}

var (
	_ API              = (*IPNet)(nil)
	_ api.EventHandler = (*IPNet)(nil)
)

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *IPNet {
	n := &IPNet{Deps: deps}
	n.initState()
	return n
}

func (n *IPNet) initState() {
	if n.shared == nil {
		n.shared = &sharedState{ifToPod: make(map[string]podmodel.ID), podIfs: make(map[podmodel.ID][2]string)}
	}
	if n.pods == nil {
		n.pods = make(map[podmodel.ID]*localPod)
	}
	if n.peers == nil {
		n.peers = make(map[string]*nodesync.Node)
	}
}

// String names the plugin.
func (n *IPNet) String() string { return "ipnet" }

// Init checks the dependencies, fills in the default host I/O callbacks and registers
// GET /contiv/v1/ipam when HTTPHandlers is set. The configuration is built by the
// first resync.
func (n *IPNet) Init() error {
	n.initState()
	n.Log = infra.LoggerOr(n.Log, n.String())
	var missing []error
	if n.ContivConf == nil {
		missing = append(missing, errors.New("Deps.ContivConf is required"))
	}
	if n.IPAM == nil {
		missing = append(missing, errors.New("Deps.IPAM is required"))
	}
	if n.NodeSync == nil {
		missing = append(missing, errors.New("Deps.NodeSync is required"))
	}
	if n.PodManager == nil {
		missing = append(missing, errors.New("Deps.PodManager is required"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("ipnet: %w", errors.Join(missing...))
	}
	if n.GetHostLinkIPs == nil {
		n.GetHostLinkIPs = DumpHostLinkIPs
	}
	if n.EnablePodIPv6 == nil {
		n.EnablePodIPv6 = EnableIPv6InNetns
	}
	if n.HTTPHandlers != nil {
		srv, ok := n.IPAM.(IPAMDataServer)
		if !ok {
			return fmt.Errorf("ipnet: Deps.IPAM (%T) cannot serve %s (no IPAMDataHandler)", n.IPAM, ipam.IPAMPath)
		}
		n.HTTPHandlers.HandleFunc("GET "+ipam.IPAMPath, srv.IPAMDataHandler(func() net.IP {
			ip, _ := n.GetNodeIP()
			return ip
		}))
	}
	return nil
}

// Close releases nothing: the plugin holds no resources (the DHCP watch ends with the
// VPP interface plugin).
func (n *IPNet) Close() error { return nil }

// GetPodIfNames implements API.
func (n *IPNet) GetPodIfNames(podNamespace string, podName string) (vppIfName, linuxIfName, loopIfName string, exists bool) {
	p, ok := n.pods[podmodel.ID{Name: podName, Namespace: podNamespace}]
	if !ok || n.settings == nil {
		return "", "", "", false
	}
	vppIfName, linuxIfName = n.settings.podIfNames(p.containerID)
	return vppIfName, linuxIfName, podLoopName(p.containerID), true
}

// CheckPodWiring reports why a pod's network is not in place, nil when it is: ipnet must
// have wired the pod and, when ValueStatus is set, its VPP and Linux interfaces must be
// configured. It may be called from any goroutine (CNI CHECK does).
func (n *IPNet) CheckPodWiring(pod podmodel.ID) error {
	n.shared.mu.RLock()
	ifs, wired := n.shared.podIfs[pod]
	n.shared.mu.RUnlock()
	if !wired {
		return errors.New("the pod is not wired (no IP, or its ADD did not complete)")
	}
	if n.ValueStatus == nil {
		return nil
	}
	for _, key := range []string{vppif.InterfaceKey(ifs[0]), linuxif.InterfaceKey(ifs[1])} {
		state, lastErr := n.ValueStatus(key)
		if state == "CONFIGURED" {
			continue
		}
		if lastErr != "" {
			return fmt.Errorf("%s is %s: %s", key, state, lastErr)
		}
		return fmt.Errorf("%s is %s", key, state)
	}
	return nil
}

// GetPodByIf implements API.
func (n *IPNet) GetPodByIf(ifName string) (podNamespace string, podName string, exists bool) {
	if n.shared == nil {
		return "", "", false
	}
	n.shared.mu.RLock()
	defer n.shared.mu.RUnlock()
	id, ok := n.shared.ifToPod[ifName]
	return id.Namespace, id.Name, ok
}

// GetNodeIP implements API. It may be called from any goroutine (the REST handler
// does).
func (n *IPNet) GetNodeIP() (ip net.IP, network *net.IPNet) {
	if n.shared == nil {
		return nil, nil
	}
	n.shared.mu.RLock()
	defer n.shared.mu.RUnlock()
	if n.shared.nodeIP == nil {
		return nil, nil
	}
	ip = append(net.IP(nil), n.shared.nodeIP...)
	network = &net.IPNet{
		IP:   append(net.IP(nil), n.shared.nodeIPNet.IP...),
		Mask: append(net.IPMask(nil), n.shared.nodeIPNet.Mask...),
	}
	return ip, network
}

// nodeAddress returns the node IP with the prefix length of its network, nil while
// there is none.
func (n *IPNet) nodeAddress() *net.IPNet {
	ip, network := n.GetNodeIP()
	if ip == nil {
		return nil
	}
	return &net.IPNet{IP: ip, Mask: network.Mask}
}

// setNodeIP records the node IP (nil: none) with its network.
func (n *IPNet) setNodeIP(addr *net.IPNet) {
	n.shared.mu.Lock()
	defer n.shared.mu.Unlock()
	if addr == nil {
		n.shared.nodeIP, n.shared.nodeIPNet = nil, nil
		return
	}
	n.shared.nodeIP = addr.IP
	n.shared.nodeIPNet = &net.IPNet{IP: addr.IP.Mask(addr.Mask), Mask: addr.Mask}
}

// GetHostIPs implements API.
func (n *IPNet) GetHostIPs() []net.IP {
	out := make([]net.IP, len(n.hostIPs))
	copy(out, n.hostIPs)
	return out
}

// GetHostInterconnectIfName implements API.
func (n *IPNet) GetHostInterconnectIfName() string {
	if ifc := n.ContivConf.GetInterfaceConfig(); ifc != nil && !ifc.UseTAPInterfaces {
		return hostAfPacketName
	}
	return HostInterconnectTAPinVPPLogicalName
}

// GetVxlanBVIIfName implements API.
func (n *IPNet) GetVxlanBVIIfName() string {
	if rc := n.ContivConf.GetRoutingConfig(); rc != nil && rc.UseNoOverlay {
		return ""
	}
	return VxlanBVIInterfaceName
}
