package healthcheck

import (
	"net"
	"strconv"

	"google.golang.org/protobuf/proto"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	controller "github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/service/renderer"
)

// MappingLabelPrefix starts the label of the DNat44 of a health check node port:
// "DNAT-healthcheck/<namespace>/<name>".
const MappingLabelPrefix = "DNAT-healthcheck/"

// Mappings stage, for each health check node port, a DNat44 that forwards TCP to
// that port of the node IP (owned by VPP, the Node's InternalIP that a load balancer
// probes) to the same port of the host (the Linux end of the VPP-host interconnect,
// reached in the main VRF), where the Server listens. The mapping twice-NATs: the
// host sees the probe coming from a twice-NAT address of VPP (in the pod network,
// routed to VPP through the interconnect), so its answer returns through VPP, which
// translates it back, whatever routes the host has towards the prober (a node whose
// NIC VPP owns may have none: the cluster lab's nodes have no default route). The
// server does not need the prober's address (kube-proxy's /healthz ignores it).
type Mappings struct {
	// NodeIP returns this node's IP (nil: none yet, nothing is mapped).
	NodeIP func() net.IP
	// HostIP returns the Linux end of the VPP-host interconnect (nil: nothing mapped).
	HostIP func() net.IP
	// VRF is the main VRF, where the host is reached.
	VRF uint32

	staged map[renderer.ServiceID]*vpp_nat.DNat44
}

// MappingLabel returns the DNat44 label of the health check of a service.
func MappingLabel(id renderer.ServiceID) string { return MappingLabelPrefix + id.String() }

// value returns the DNat44 of a health check port (nil: none).
func (m *Mappings) value(id renderer.ServiceID, port uint16) *vpp_nat.DNat44 {
	nodeIP, hostIP := m.NodeIP(), m.HostIP()
	if port == 0 || nodeIP.To4() == nil || hostIP.To4() == nil {
		return nil
	}
	return &vpp_nat.DNat44{Label: MappingLabel(id), StMappings: []*vpp_nat.DNat44_StaticMapping{{
		ExternalIp: nodeIP.To4().String(), ExternalPort: uint32(port), Protocol: vpp_nat.DNat44_TCP,
		LocalIps: []*vpp_nat.DNat44_StaticMapping_LocalIP{{VrfId: m.VRF, LocalIp: hostIP.To4().String(), LocalPort: uint32(port)}},
		TwiceNat: vpp_nat.DNat44_StaticMapping_ENABLED,
	}}}
}

// set stages the mapping of a service's health check port (0: none) and tells what
// it changed ("" for nothing).
func (m *Mappings) set(txn controller.UpdateOperations, id renderer.ServiceID, port uint16) string {
	next, cur := m.value(id, port), m.staged[id]
	switch {
	case next == nil && cur == nil, next != nil && cur != nil && proto.Equal(next, cur):
		return ""
	case next == nil:
		delete(m.staged, id)
		txn.Delete(vpp_nat.DNAT44Key(cur.Label))
		return "remove health check node port mapping of '" + id.String() + "'"
	}
	if m.staged == nil {
		m.staged = make(map[renderer.ServiceID]*vpp_nat.DNat44)
	}
	m.staged[id] = next
	txn.Put(vpp_nat.DNAT44Key(next.Label), next)
	return "map health check node port " + strconv.Itoa(int(port)) + " of '" + id.String() + "' to the host"
}

// resync stages the mappings of every health check port.
func (m *Mappings) resync(txn controller.ResyncOperations, ports map[renderer.ServiceID]uint16) {
	m.staged = make(map[renderer.ServiceID]*vpp_nat.DNat44, len(ports))
	for id, port := range ports {
		if v := m.value(id, port); v != nil {
			m.staged[id] = v
			txn.Put(vpp_nat.DNAT44Key(v.Label), v)
		}
	}
}
