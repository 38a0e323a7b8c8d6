package healthcheck

import (
	"net"
	"strconv"

	"google.golang.org/protobuf/proto"

	vpp_cnat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
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
//
// With CNAT (serviceRenderer: cnat, where nothing of NAT44 is configured) the
// mapping is a cnat translation instead, in a translation set labelled as the DNat44
// would be (MappingLabel: the services' sets are "<namespace>/<name>", so the two
// never share a key): the node IP is a real address (is_real_ip) and the probe's
// source becomes VPP's end of the interconnect (VPPIP), for the same reason.
type Mappings struct {
	// NodeIP returns this node's IP (nil: none yet, nothing is mapped).
	NodeIP func() net.IP
	// HostIP returns the Linux end of the VPP-host interconnect (nil: nothing mapped).
	HostIP func() net.IP
	// VRF is the main VRF, where the host is reached.
	VRF uint32
	// CNAT maps with cnat translations; VPPIP then returns VPP's end of the
	// VPP-host interconnect (nil: nothing mapped).
	CNAT  bool
	VPPIP func() net.IP

	staged map[renderer.ServiceID]mapping
}

// mapping is a staged value and its key.
type mapping struct {
	key   string
	value proto.Message
}

// MappingLabel returns the DNat44 (or cnat TranslationSet) label of the health check
// of a service.
func MappingLabel(id renderer.ServiceID) string { return MappingLabelPrefix + id.String() }

// value returns the mapping of a health check port (value nil: none).
func (m *Mappings) value(id renderer.ServiceID, port uint16) mapping {
	nodeIP, hostIP := m.NodeIP().To4(), m.HostIP().To4()
	if port == 0 || nodeIP == nil || hostIP == nil {
		return mapping{}
	}
	if m.CNAT {
		vppIP := m.VPPIP().To4()
		if vppIP == nil {
			return mapping{}
		}
		t := &vpp_cnat.Translation{
			VipAddress: nodeIP.String(), VipPort: uint32(port), Protocol: vpp_cnat.Protocol_TCP, IsRealIp: true,
			AllocPort: true, Paths: []*vpp_cnat.Path{{
				Dst: &vpp_cnat.Endpoint{Address: hostIP.String(), Port: uint32(port)},
				Src: &vpp_cnat.Endpoint{Address: vppIP.String()},
			}},
		}
		set := &vpp_cnat.TranslationSet{Label: MappingLabel(id), Translations: []*vpp_cnat.Translation{t}}
		return mapping{key: vpp_cnat.TranslationSetKey(set.Label), value: set}
	}
	d := &vpp_nat.DNat44{Label: MappingLabel(id), StMappings: []*vpp_nat.DNat44_StaticMapping{{
		ExternalIp: nodeIP.String(), ExternalPort: uint32(port), Protocol: vpp_nat.DNat44_TCP,
		LocalIps: []*vpp_nat.DNat44_StaticMapping_LocalIP{{VrfId: m.VRF, LocalIp: hostIP.String(), LocalPort: uint32(port)}},
		TwiceNat: vpp_nat.DNat44_StaticMapping_ENABLED,
	}}}
	return mapping{key: vpp_nat.DNAT44Key(d.Label), value: d}
}

// set stages the mapping of a service's health check port (0: none) and tells what
// it changed ("" for nothing).
func (m *Mappings) set(txn controller.UpdateOperations, id renderer.ServiceID, port uint16) string {
	next := m.value(id, port)
	cur, staged := m.staged[id]
	switch {
	case next.value == nil && !staged, next.value != nil && staged && next.key == cur.key && proto.Equal(next.value, cur.value):
		return ""
	case next.value == nil:
		delete(m.staged, id)
		txn.Delete(cur.key)
		return "remove health check node port mapping of '" + id.String() + "'"
	}
	if m.staged == nil {
		m.staged = make(map[renderer.ServiceID]mapping)
	}
	if staged && cur.key != next.key {
		txn.Delete(cur.key)
	}
	m.staged[id] = next
	txn.Put(next.key, next.value)
	return "map health check node port " + strconv.Itoa(int(port)) + " of '" + id.String() + "' to the host"
}

// resync stages the mappings of every health check port.
func (m *Mappings) resync(txn controller.ResyncOperations, ports map[renderer.ServiceID]uint16) {
	m.staged = make(map[renderer.ServiceID]mapping, len(ports))
	for id, port := range ports {
		if v := m.value(id, port); v.value != nil {
			m.staged[id] = v
			txn.Put(v.key, v.value)
		}
	}
}
