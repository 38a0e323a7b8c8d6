package nodesync

import (
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// cluster is the node map and the records it derives from. It does no I/O and is not
// safe for concurrent use (the plugin guards it). The Nodes it stores are never changed
// once stored; every change stores new ones.
type cluster struct {
	log      logrus.FieldLogger
	thisNode string
	// thisID is this node's ID once known; it wins over the records for this node.
	thisID uint32

	vppNodes  map[uint32]*vppnode.VppNode    // allocatedIDs/<id>, by ID
	idsByName map[string]map[uint32]struct{} // the IDs of vppNodes, by node name
	k8sNodes  map[string]*node.Node          // k8s/node/<name>, by name
	nodes     map[string]*Node               // derived, by name
}

// nodeChange is the state of one node before and after a change (nil: unknown node).
type nodeChange struct {
	name      string
	prev, new *Node
}

func newCluster(thisNode string, log logrus.FieldLogger) *cluster {
	return &cluster{
		log:       log,
		thisNode:  thisNode,
		vppNodes:  make(map[uint32]*vppnode.VppNode),
		idsByName: make(map[string]map[uint32]struct{}),
		k8sNodes:  make(map[string]*node.Node),
		nodes:     make(map[string]*Node),
	}
}

// buildCluster loads the "vppnode" and "node" resources of a Kubernetes state snapshot.
// Records that cannot be used are logged and skipped. thisID stays 0: the caller picks
// it (ownID) and calls setThisID, which derives the node map.
func buildCluster(thisNode string, vppKVs, nodeKVs api.KeyValuePairs, log logrus.FieldLogger) *cluster {
	c := newCluster(thisNode, log)
	for _, key := range sortedKeys(vppKVs) {
		if id, rec, ok := c.vppNodeRecord(key, vppKVs[key]); ok && rec != nil {
			c.storeVppNode(id, rec)
		}
	}
	for _, key := range sortedKeys(nodeKVs) {
		if name, rec, ok := c.k8sNodeRecord(key, nodeKVs[key]); ok && rec != nil {
			c.k8sNodes[name] = rec
		}
	}
	return c
}

// vppNodeRecord checks one vppnode key and value. ok is false for a key that is not a
// VppNode key; rec is nil when the value is missing or unusable (no name), which counts
// as no record.
func (c *cluster) vppNodeRecord(key string, value proto.Message) (id uint32, rec *vppnode.VppNode, ok bool) {
	id, err := vppnode.ParseVppNodeFromKey(key)
	if err != nil || id == 0 {
		c.log.WithField("key", key).Warn("ignoring a VppNode under a key that is not allocatedIDs/<positive ID>")
		return 0, nil, false
	}
	rec, isVppNode := value.(*vppnode.VppNode)
	switch {
	case value == nil:
		return id, nil, true
	case !isVppNode:
		c.log.WithField("key", key).Warnf("ignoring a value of type %T under a VppNode key", value)
		return id, nil, true
	case rec == nil:
		return id, nil, true
	case rec.GetName() == "":
		c.log.WithField("key", key).Warn("ignoring a VppNode without a node name")
		return id, nil, true
	case rec.GetId() != id:
		c.log.WithFields(logrus.Fields{"key": key, "valueID": rec.GetId()}).Warn("VppNode ID differs from its key: the key wins")
	}
	return id, rec, true
}

// k8sNodeRecord checks one node key and value, like vppNodeRecord.
func (c *cluster) k8sNodeRecord(key string, value proto.Message) (name string, rec *node.Node, ok bool) {
	name, err := node.ParseNodeFromKey(key)
	if err != nil {
		c.log.WithField("key", key).Warn("ignoring a Kubernetes node under a key that is not k8s/node/<name>")
		return "", nil, false
	}
	rec, isNode := value.(*node.Node)
	switch {
	case value == nil:
		return name, nil, true
	case !isNode:
		c.log.WithField("key", key).Warnf("ignoring a value of type %T under a Kubernetes node key", value)
		return name, nil, true
	case rec != nil && rec.GetName() != "" && rec.GetName() != name:
		c.log.WithFields(logrus.Fields{"key": key, "valueName": rec.GetName()}).Warn("Kubernetes node name differs from its key: the key wins")
	}
	return name, rec, true
}

// storeVppNode records a VppNode under id (replacing any previous one) and returns the
// names whose state may have changed.
func (c *cluster) storeVppNode(id uint32, rec *vppnode.VppNode) []string {
	affected := c.dropVppNode(id)
	c.vppNodes[id] = rec
	ids := c.idsByName[rec.GetName()]
	if ids == nil {
		ids = make(map[uint32]struct{})
		c.idsByName[rec.GetName()] = ids
	}
	ids[id] = struct{}{}
	if len(ids) > 1 {
		c.log.WithFields(logrus.Fields{"node": rec.GetName(), "ids": sortedIDs(ids)}).Warn("node holds several IDs: the lowest is used")
	}
	if len(affected) == 0 || affected[0] != rec.GetName() {
		affected = append(affected, rec.GetName())
	}
	return affected
}

// dropVppNode removes the VppNode under id and returns the name it belonged to.
func (c *cluster) dropVppNode(id uint32) []string {
	old := c.vppNodes[id]
	if old == nil {
		return nil
	}
	delete(c.vppNodes, id)
	if ids := c.idsByName[old.GetName()]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(c.idsByName, old.GetName())
		}
	}
	return []string{old.GetName()}
}

// ownID picks this node's ID from the records: prev when this node still holds it,
// else its lowest ID, 0 when it holds none.
func (c *cluster) ownID(prev uint32) uint32 {
	ids := c.idsByName[c.thisNode]
	if _, holds := ids[prev]; holds && prev != 0 {
		return prev
	}
	if len(ids) == 0 {
		return 0
	}
	return sortedIDs(ids)[0]
}

// setThisID fixes this node's ID and derives the whole node map.
func (c *cluster) setThisID(id uint32) {
	c.thisID = id
	c.nodes = make(map[string]*Node)
	names := make(map[string]struct{})
	for name := range c.idsByName {
		names[name] = struct{}{}
	}
	for name := range c.k8sNodes {
		names[name] = struct{}{}
	}
	names[c.thisNode] = struct{}{}
	for name := range names {
		if n := c.derive(name); n != nil {
			c.nodes[name] = n
		}
	}
}

// applyVppNode applies a change of allocatedIDs/<id> (rec nil: deleted) and returns
// the state changes of the nodes involved.
func (c *cluster) applyVppNode(id uint32, rec *vppnode.VppNode) []nodeChange {
	var affected []string
	if rec == nil {
		affected = c.dropVppNode(id)
	} else {
		affected = c.storeVppNode(id, rec)
	}
	return c.refresh(affected)
}

// applyK8sNode applies a change of k8s/node/<name> (rec nil: deleted).
func (c *cluster) applyK8sNode(name string, rec *node.Node) []nodeChange {
	if rec == nil {
		delete(c.k8sNodes, name)
	} else {
		c.k8sNodes[name] = rec
	}
	return c.refresh([]string{name})
}

// refresh derives the named nodes again and returns their changes (unchanged ones
// included; the caller decides what to report).
func (c *cluster) refresh(names []string) []nodeChange {
	changes := make([]nodeChange, 0, len(names))
	for _, name := range names {
		prev, cur := c.nodes[name], c.derive(name)
		if cur == nil {
			delete(c.nodes, name)
		} else {
			c.nodes[name] = cur
		}
		changes = append(changes, nodeChange{name: name, prev: prev, new: cur})
	}
	return changes
}

// derive computes a node's state from the records; nil when nothing is known about it.
func (c *cluster) derive(name string) *Node {
	var id uint32
	if name == c.thisNode && c.thisID != 0 {
		id = c.thisID
	} else if ids := c.idsByName[name]; len(ids) > 0 {
		id = sortedIDs(ids)[0]
	}
	k8s := c.k8sNodes[name]
	if id == 0 && k8s == nil {
		return nil
	}
	n := &Node{ID: id, Name: name}
	if rec := c.vppNodes[id]; id != 0 && rec != nil && rec.GetName() == name {
		n.VppIPAddresses = c.vppIPs(rec)
	}
	if k8s != nil {
		n.MgmtIPAddresses = c.mgmtIPs(name, k8s)
		n.PodCIDR = k8s.GetPod_CIDR()
	}
	return n
}

// ownRecord returns the VppNode of this node under its ID (nil when there is none).
func (c *cluster) ownRecord() *vppnode.VppNode {
	if rec := c.vppNodes[c.thisID]; c.thisID != 0 && rec != nil && rec.GetName() == c.thisNode {
		return rec
	}
	return nil
}

// vppIPs parses the published VPP addresses of a node, skipping bad ones.
func (c *cluster) vppIPs(rec *vppnode.VppNode) []*net.IPNet {
	addrs := rec.GetIpAddresses()
	if len(addrs) == 0 && rec.GetIpAddress() != "" {
		addrs = []string{rec.GetIpAddress()} // written by old agents
	}
	var out []*net.IPNet
	for _, a := range addrs {
		ipNet, ok := parseIPWithPrefix(a)
		if !ok {
			c.log.WithFields(logrus.Fields{"node": rec.GetName(), "address": a}).Warn("ignoring a VPP address that is not an IP address")
			continue
		}
		out = append(out, ipNet)
	}
	return out
}

// mgmtIPs returns the InternalIP and ExternalIP addresses of a Kubernetes node, in
// their order, without duplicates.
func (c *cluster) mgmtIPs(name string, k8s *node.Node) []net.IP {
	var out []net.IP
	for _, a := range k8s.GetAddresses() {
		if a.GetType() != node.NodeAddress_NodeInternalIP && a.GetType() != node.NodeAddress_NodeExternalIP {
			continue
		}
		ip := net.ParseIP(strings.TrimSpace(a.GetAddress()))
		if ip == nil {
			c.log.WithFields(logrus.Fields{"node": name, "address": a.GetAddress()}).Warn("ignoring a node address that is not an IP address")
			continue
		}
		ip = normalizeIP(ip)
		if slices.ContainsFunc(out, ip.Equal) {
			continue
		}
		out = append(out, ip)
	}
	return out
}

// parseIPWithPrefix parses "ip/prefix" keeping the address itself (not the network);
// a plain IP gets a full-length prefix.
func parseIPWithPrefix(s string) (*net.IPNet, bool) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, false
		}
		ip = normalizeIP(ip)
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(len(ip)*8, len(ip)*8)}, true
	}
	ip, ipNet, err := net.ParseCIDR(s)
	if err != nil {
		return nil, false
	}
	return &net.IPNet{IP: normalizeIP(ip), Mask: ipNet.Mask}, true
}

// normalizeIP returns IPv4 addresses in their 4-byte form.
func normalizeIP(ip net.IP) net.IP {
	if v4 := ip.To4(); v4 != nil {
		return v4
	}
	return ip
}

// sameNode reports whether two node states are equal (nil equals only nil).
func sameNode(a, b *Node) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.ID == b.ID && a.Name == b.Name && a.PodCIDR == b.PodCIDR &&
		sameIPNets(a.VppIPAddresses, b.VppIPAddresses) && sameIPs(a.MgmtIPAddresses, b.MgmtIPAddresses)
}

// sameHostView reports whether the parts of two states that concern this node's own
// reports (management IPs and pod CIDR) are equal; nil has none of them.
func sameHostView(a, b *Node) bool {
	var aMgmt, bMgmt []net.IP
	var aCIDR, bCIDR string
	if a != nil {
		aMgmt, aCIDR = a.MgmtIPAddresses, a.PodCIDR
	}
	if b != nil {
		bMgmt, bCIDR = b.MgmtIPAddresses, b.PodCIDR
	}
	return aCIDR == bCIDR && sameIPs(aMgmt, bMgmt)
}

func sameIPs(a, b []net.IP) bool {
	return slices.EqualFunc(a, b, func(x, y net.IP) bool { return x.Equal(y) })
}

func sameIPNets(a, b []*net.IPNet) bool {
	return slices.EqualFunc(a, b, func(x, y *net.IPNet) bool { return x.String() == y.String() })
}

// nodeUpdateFor applies the reporting rules to one node's change: other nodes are
// reported on any change of their state, this node only when its management IPs or
// pod CIDR changed; states without an ID count as nil and two nil states are never
// reported. It returns nil when nothing is to be reported.
func nodeUpdateFor(ch nodeChange, thisNode string) *NodeUpdate {
	prev, cur := withID(ch.prev), withID(ch.new)
	if prev == nil && cur == nil {
		return nil
	}
	if ch.name == thisNode {
		if sameHostView(prev, cur) {
			return nil
		}
	} else if sameNode(prev, cur) {
		return nil
	}
	return &NodeUpdate{NodeName: ch.name, PrevState: prev.clone(), NewState: cur.clone()}
}

// withID returns n when it has an ID, else nil.
func withID(n *Node) *Node {
	if n == nil || n.ID == 0 {
		return nil
	}
	return n
}

func sortedIDs(ids map[uint32]struct{}) []uint32 {
	out := make([]uint32, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func sortedKeys(kvs api.KeyValuePairs) []string {
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
