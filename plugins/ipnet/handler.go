package ipnet

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"

	"github.com/sirupsen/logrus"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// Change descriptions reported to the controller.
const (
	changeAddPod    = "configure IP connectivity"
	changeDeletePod = "un-configure IP connectivity"
	changeShutdown  = "delete VETH interfaces"
)

// HandlesEvent selects every resync (NodeIPv4Change included), AddPod and DeletePod,
// NodeUpdate of the other nodes and Shutdown.
func (n *IPNet) HandlesEvent(event api.Event) bool {
	switch ev := event.(type) {
	case *podmanager.AddPod, *podmanager.DeletePod, *api.Shutdown:
		return true
	case *nodesync.NodeUpdate:
		return ev.NodeName != n.NodeName
	}
	return event.Method().IsResync()
}

// Resync builds the whole configuration from contivconf, the IPAM, nodesync and the
// local pods, and puts all of it (the scheduler removes what is not put again). It
// also publishes this node's VPP IPs through nodesync and, with DHCP, starts watching
// the leases. The SRv6 interconnect is refused with a FatalError naming the key (STN's
// stnVersion 2 is refused earlier, by contivconf's validation). When this node's own configuration cannot be built (no node ID, no address
// plan) it returns an AbortEventError: nothing is committed, so a resync that cannot
// build anything never makes the scheduler delete what is configured, and the
// controller resyncs again soon. Problems that concern single pods or nodes are
// returned after everything else was staged, so the controller applies the rest and
// schedules a healing resync.
func (n *IPNet) Resync(event api.Event, _ api.KubeStateData, resyncCount int, txn api.ResyncOperations) error {
	n.initState()
	if err := unsupported(n.ContivConf); err != nil {
		return api.NewFatalError(fmt.Errorf("ipnet: %w", err))
	}
	s, err := readSettings(n.ContivConf)
	if err != nil {
		return api.NewAbortEventError(fmt.Errorf("ipnet resync: %w", err))
	}
	nodeID := n.NodeSync.GetNodeID()
	if nodeID == 0 {
		return api.NewAbortEventError(fmt.Errorf("ipnet resync: node %q has no node ID yet", n.NodeName))
	}
	var problems []error
	hostIPs, err := n.GetHostLinkIPs()
	if err != nil {
		problems = append(problems, fmt.Errorf("list the IPs of the host's links: %w", err))
	}
	nodeIP, err := n.resolveNodeIP(event, s, nodeID)
	if err != nil {
		return api.NewAbortEventError(fmt.Errorf("ipnet resync: node %q (ID=%d): %w", n.NodeName, nodeID, err))
	}
	second, err := secondFamily(n.IPAM)
	if err != nil {
		return api.NewAbortEventError(fmt.Errorf("ipnet resync: node %q (ID=%d): %w", n.NodeName, nodeID, err))
	}
	b := &builder{s: s, ipam: n.IPAM, nodeID: nodeID, nodeIP: nodeIP, second: second}

	kvs, err := b.nodeLocal(hostIPs)
	if err != nil {
		return api.NewAbortEventError(fmt.Errorf("ipnet resync: node %q (ID=%d): %w", n.NodeName, nodeID, err))
	}

	// Other nodes.
	peers := make(map[string]*nodesync.Node)
	for name, node := range n.NodeSync.GetAllNodes() {
		if name != n.NodeName && node != nil && node.ID != nodeID {
			peers[name] = node
		}
	}
	peerIDs := b.connectedPeerIDs(peers)
	for _, name := range sortedNames(peers) {
		node := peers[name]
		if b.nodeIP == nil || !s.connectable(node) {
			continue
		}
		pkvs, err := b.peer(node)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		merge(kvs, pkvs)
	}
	if !s.noOverlay {
		addBD(kvs, b.vxlanBD(peerIDs))
	}

	// Local pods that have an IP.
	pods := make(map[podmodel.ID]*localPod)
	for id, lp := range n.PodManager.GetLocalPods() {
		ips := n.IPAM.GetPodIPs(id)
		if len(ips) == 0 || lp == nil {
			n.Log.WithField("pod", id.String()).Debug("local pod without IP: not wired")
			continue
		}
		p := &localPod{id: id, containerID: lp.ContainerID, netns: lp.NetworkNamespace, ips: ips, ifName: lp.IfName}
		pkvs, err := b.pod(p)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		merge(kvs, pkvs)
		pods[id] = p
	}

	api.PutAll(txn, kvs)

	// The new state.
	n.settings, n.hostIPs, n.pods, n.peers = s, slices.Concat(hostIPs, b.stnHostAddrs()), pods, peers
	n.setNodeIP(nodeIP)
	n.shared.mu.Lock()
	n.shared.ifToPod = make(map[string]podmodel.ID, len(pods))
	n.shared.podIfs = make(map[podmodel.ID][2]string, len(pods))
	for id, p := range pods {
		vppSide, linuxSide := s.podIfNames(p.containerID)
		n.shared.ifToPod[vppSide] = id
		n.shared.podIfs[id] = [2]string{vppSide, linuxSide}
	}
	n.shared.mu.Unlock()
	n.watchDHCP(s, nodeIP)
	n.publishNodeIPs(b)

	n.Log.WithFields(logrus.Fields{
		"event": event.GetName(), "resyncCount": resyncCount, "nodeID": nodeID,
		"nodeIP": netString(nodeIP), "peers": len(peerIDs), "pods": len(pods), "keys": len(kvs),
	}).Info("ipnet resynced")
	if len(problems) > 0 {
		return fmt.Errorf("ipnet resync: %w", errors.Join(problems...))
	}
	return nil
}

// resolveNodeIP returns this node's IP with the prefix length of its network: with
// DHCP from the NodeIPv4Change being handled or from the current lease (nil while
// there is none), else the configured main interface IP, else the IPAM's node IP.
func (n *IPNet) resolveNodeIP(event api.Event, s *settings, nodeID uint32) (*net.IPNet, error) {
	if s.useDHCP {
		if ev, ok := event.(*NodeIPv4Change); ok {
			if ev.NodeIP == nil || ev.NodeIPNet == nil {
				return nil, nil
			}
			return &net.IPNet{IP: ev.NodeIP, Mask: ev.NodeIPNet.Mask}, nil
		}
		if n.VPPIfPlugin == nil {
			return nil, errors.New("the main interface uses DHCP, but Deps.VPPIfPlugin is not set")
		}
		if s.mainIfName == "" {
			return nil, nil
		}
		lease, found := n.VPPIfPlugin.GetDHCPLease(s.mainIfName)
		if !found {
			return nil, nil
		}
		addr, _, err := parseLease(lease)
		if err != nil {
			return nil, fmt.Errorf("DHCP lease of %s: %w", s.mainIfName, err)
		}
		return addr, nil
	}
	if len(s.configuredIPs) > 0 {
		ip := s.configuredIPs[0]
		return &net.IPNet{IP: ip.Address, Mask: ip.Network.Mask}, nil
	}
	ip, network, err := n.IPAM.NodeIPAddress(nodeID)
	if err != nil {
		return nil, fmt.Errorf("node IP: %w", err)
	}
	return &net.IPNet{IP: ip, Mask: network.Mask}, nil
}

// publishNodeIPs publishes the addresses of the main interface as this node's VPP IPs;
// failures are warnings (nodesync publishes again at the next resync).
func (n *IPNet) publishNodeIPs(b *builder) {
	if b.nodeIP == nil {
		return // nothing yet (DHCP); the addresses published before stay until there is one
	}
	// The configured addresses (an STN node's: every family of the stolen NIC) are
	// published by family: the plan's family, and the other one on a dual-stack node.
	var addrs, other []*net.IPNet
	switch {
	case !b.s.useDHCP && len(b.s.configuredIPs) > 0:
		for _, ip := range b.s.configuredIPs {
			a := &net.IPNet{IP: ip.Address, Mask: ip.Network.Mask}
			if (ip.Address.To4() == nil) == b.s.ipv6 {
				addrs = append(addrs, a)
			} else {
				other = append(other, a)
			}
		}
	default:
		addrs = []*net.IPNet{b.nodeIP}
	}
	version := nodesync.IPv4
	if b.s.ipv6 {
		version = nodesync.IPv6
	}
	if err := n.NodeSync.PublishNodeIPs(addrs, version); err != nil {
		n.Log.WithError(err).WithField("node", n.NodeName).Warn("publishing the node IPs failed")
	}
	// Dual-stack: the node's IPv6 on its NIC too, the next hop of the other nodes'
	// IPv6 routes without the overlay.
	f := b.second
	switch {
	case f == nil || b.s.useDHCP:
		return
	case len(b.s.configuredIPs) == 0 && f.NodeIP != nil && f.NodeNetwork != nil:
		other = []*net.IPNet{{IP: f.NodeIP, Mask: f.NodeNetwork.Mask}}
	case len(other) == 0:
		return
	}
	if err := n.NodeSync.PublishNodeIPs(other, nodesync.IPv6); err != nil {
		n.Log.WithError(err).WithField("node", n.NodeName).Warn("publishing the node's IPv6 failed")
	}
}

// builder returns a builder for an update event: the settings of the last resync and
// the current node IP.
func (n *IPNet) builder() (*builder, error) {
	if n.settings == nil {
		return nil, errors.New("no resync has run yet")
	}
	second, err := secondFamily(n.IPAM)
	if err != nil {
		return nil, err
	}
	return &builder{s: n.settings, ipam: n.IPAM, nodeID: n.NodeSync.GetNodeID(), nodeIP: n.nodeAddress(), second: second}, nil
}

// Update handles AddPod, DeletePod, NodeUpdate of another node and Shutdown.
func (n *IPNet) Update(event api.Event, txn api.UpdateOperations) (change string, err error) {
	n.initState()
	switch ev := event.(type) {
	case *podmanager.AddPod:
		return n.addPod(ev, txn)
	case *podmanager.DeletePod:
		return n.deletePod(ev, txn)
	case *nodesync.NodeUpdate:
		if ev.NodeName == n.NodeName {
			return "", nil
		}
		return n.updateNode(ev, txn)
	case *api.Shutdown:
		return n.shutdown(txn)
	}
	return "", nil
}

// addPod allocates the pod's IP, stages its wiring and fills in the CNI reply data.
func (n *IPNet) addPod(ev *podmanager.AddPod, txn api.UpdateOperations) (string, error) {
	b, err := n.builder()
	if err != nil {
		return "", fmt.Errorf("pod %s: %w", ev.Pod, err)
	}
	ips, err := n.IPAM.AllocatePodIPs(ev.Pod, ev.IPAMType, ev.IPAMData)
	if err != nil {
		return "", fmt.Errorf("pod %s: allocate IP: %w", ev.Pod, err)
	}
	p := &localPod{id: ev.Pod, containerID: ev.ContainerID, netns: ev.NetworkNamespace, ips: ips, ifName: ev.IfName}
	kvs, err := b.pod(p)
	if err != nil {
		// Revert is not called on the handler that failed: undo the allocation here.
		if relErr := n.IPAM.ReleasePodIPs(ev.Pod); relErr != nil {
			err = errors.Join(err, fmt.Errorf("pod %s: release IP: %w", ev.Pod, relErr))
		}
		return "", err
	}
	if old, ok := n.pods[ev.Pod]; ok && old.containerID != ev.ContainerID {
		// A new sandbox of a pod that was not deleted: drop the old wiring.
		if okvs, err := b.pod(old); err == nil {
			for k := range okvs {
				if _, keep := kvs[k]; !keep {
					txn.Delete(k)
				}
			}
		}
		n.forgetPodIf(old)
	}
	if n.EnablePodIPv6 != nil {
		if err := n.EnablePodIPv6(ev.NetworkNamespace); err != nil {
			n.Log.WithError(err).WithField("pod", ev.Pod.String()).Warn("enabling IPv6 in the pod's namespace failed")
		}
	}
	api.PutAll(txn, kvs)

	n.pods[ev.Pod] = p
	vppSide, linuxSide := b.s.podIfNames(p.containerID)
	n.shared.mu.Lock()
	n.shared.ifToPod[vppSide] = ev.Pod
	n.shared.podIfs[ev.Pod] = [2]string{vppSide, linuxSide}
	n.shared.mu.Unlock()

	// The CNI reply: the pod's interface with an address of every family and its
	// gateway, and a default route of every family.
	iface := podmanager.PodInterface{HostName: p.hostIfName(), MAC: podMAC(p.containerID, false)}
	for _, ip := range ips {
		gw := b.podGateway(ip.IP) // known: pod() checked it
		_, anyDst, _ := net.ParseCIDR(anyNet(gw))
		iface.IPAddresses = append(iface.IPAddresses, &podmanager.IPWithGateway{Address: ip, Gateway: gw})
		ev.Routes = append(ev.Routes, podmanager.Route{Network: anyDst, Gateway: gw})
	}
	ev.Interfaces = append(ev.Interfaces, iface)
	n.Log.WithFields(logrus.Fields{"pod": ev.Pod.String(), "ips": ipsString(ips), "container": ev.ContainerID}).
		Info("pod wired")
	return changeAddPod, nil
}

// forgetPodIf drops the pod's entry of the interface-to-pod map.
func (n *IPNet) forgetPodIf(p *localPod) {
	if n.settings == nil {
		return
	}
	vppSide, linuxSide := n.settings.podIfNames(p.containerID)
	n.shared.mu.Lock()
	if n.shared.ifToPod[vppSide] == p.id {
		delete(n.shared.ifToPod, vppSide)
	}
	if n.shared.podIfs[p.id] == [2]string{vppSide, linuxSide} {
		delete(n.shared.podIfs, p.id)
	}
	n.shared.mu.Unlock()
}

// deletePod removes the pod's wiring and releases its IP.
func (n *IPNet) deletePod(ev *podmanager.DeletePod, txn api.UpdateOperations) (string, error) {
	p, ok := n.pods[ev.Pod]
	change := ""
	if ok {
		b, err := n.builder()
		if err != nil {
			return "", fmt.Errorf("pod %s: %w", ev.Pod, err)
		}
		kvs, err := b.pod(p)
		if err != nil {
			return "", err
		}
		api.DeleteAll(txn, kvs)
		delete(n.pods, ev.Pod)
		n.forgetPodIf(p)
		change = changeDeletePod
	}
	if err := n.IPAM.ReleasePodIPs(ev.Pod); err != nil {
		return change, fmt.Errorf("pod %s: release IP: %w", ev.Pod, err)
	}
	return change, nil
}

// updateNode reconfigures the connectivity to one other node: the keys of its old state
// that its new state does not have are deleted, those of the new state put, and the
// VXLAN bridge domain is put again with the current set of tunnels.
func (n *IPNet) updateNode(ev *nodesync.NodeUpdate, txn api.UpdateOperations) (string, error) {
	b, err := n.builder()
	if err != nil {
		return "", fmt.Errorf("node %s: %w", ev.NodeName, err)
	}
	if ev.NewState != nil {
		n.peers[ev.NodeName] = ev.NewState
	} else {
		delete(n.peers, ev.NodeName)
	}
	if b.nodeIP == nil {
		return "", nil // no connectivity to any node while this node has no IP
	}
	prevOK, nextOK := b.s.connectable(ev.PrevState), b.s.connectable(ev.NewState)
	if !prevOK && !nextOK {
		return "", nil
	}
	var oldKVs, newKVs api.KeyValuePairs
	if prevOK {
		if oldKVs, err = b.peer(ev.PrevState); err != nil {
			return "", err
		}
	}
	if nextOK {
		if newKVs, err = b.peer(ev.NewState); err != nil {
			return "", err
		}
	}
	for k := range oldKVs {
		if _, keep := newKVs[k]; !keep {
			txn.Delete(k)
		}
	}
	api.PutAll(txn, newKVs)
	if !b.s.noOverlay {
		bd := b.vxlanBD(b.connectedPeerIDs(n.peers))
		txn.Put(vppl2.BridgeDomainKey(bd.GetName()), bd)
	}
	switch {
	case !prevOK:
		return fmt.Sprintf("connect node ID=%d", ev.NewState.ID), nil
	case !nextOK:
		return fmt.Sprintf("disconnect node ID=%d", ev.PrevState.ID), nil
	}
	return fmt.Sprintf("update connectivity to node ID=%d", ev.NewState.ID), nil
}

// shutdown deletes the VETH interfaces (VPP-host interconnect and pods), which would
// outlive VPP; TAPs disappear with VPP.
func (n *IPNet) shutdown(txn api.UpdateOperations) (string, error) {
	if n.settings == nil || n.settings.useTAP {
		return "", nil
	}
	txn.Delete(linuxif.InterfaceKey(hostVeth1Name))
	txn.Delete(linuxif.InterfaceKey(hostVeth2Name))
	for _, p := range n.pods {
		txn.Delete(linuxif.InterfaceKey(podVeth1Name(p.containerID)))
		txn.Delete(linuxif.InterfaceKey(podVeth2Name(p.containerID)))
	}
	return changeShutdown, nil
}

// Revert undoes the internal effects of AddPod: the IP is released and the pod
// forgotten.
func (n *IPNet) Revert(event api.Event) error {
	ev, ok := event.(*podmanager.AddPod)
	if !ok {
		return nil
	}
	n.initState()
	if p, ok := n.pods[ev.Pod]; ok {
		n.forgetPodIf(p)
		delete(n.pods, ev.Pod)
	}
	if err := n.IPAM.ReleasePodIPs(ev.Pod); err != nil {
		return fmt.Errorf("pod %s: release IP: %w", ev.Pod, err)
	}
	return nil
}

// merge copies src into dst.
func merge(dst, src api.KeyValuePairs) {
	for k, v := range src {
		dst[k] = v
	}
}

// sortedNames returns the keys of nodes in order, so that logs and errors are stable.
func sortedNames(nodes map[string]*nodesync.Node) []string {
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
