package tracer

import (
	"regexp"
	"strconv"
	"strings"

	vpp_nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/natplugin"
)

// snapshot is Names read from the agent's state once per trace (O(the node's
// interfaces, pods, nodes and Service frontends): a trace is rare, a scrape-like
// cost is acceptable and nothing is kept between traces).
type snapshot struct {
	vppIdx    map[string]uint32 // VPP interface name -> sw_if_index
	logical   map[uint32]string // sw_if_index -> logical name
	podOfIf   map[string]string
	podAt     map[string]string
	nodeAt    map[string]string
	services  map[string]string // "ip:port/proto" -> namespace/name
	ruleOwner func(acl string, rule int) (string, bool, bool)
}

// showInterfaceRow is a row of "show interface": name, index, state.
var showInterfaceRow = regexp.MustCompile(`^(\S+)\s+(\d+)\s+(up|down)\b`)

// takeSnapshot reads the names; showInterface is VPP's "show interface" output.
func (p *Plugin) takeSnapshot(showInterface string) *snapshot {
	s := &snapshot{vppIdx: map[string]uint32{}, logical: map[uint32]string{}, podOfIf: map[string]string{},
		podAt: map[string]string{}, nodeAt: map[string]string{}, services: map[string]string{}}
	for _, line := range strings.Split(showInterface, "\n") {
		if m := showInterfaceRow.FindStringSubmatch(line); m != nil {
			idx, _ := strconv.ParseUint(m[2], 10, 32)
			s.vppIdx[m[1]] = uint32(idx)
		}
	}
	if p.Interfaces != nil && p.Interfaces() != nil {
		ifs := p.Interfaces()
		idx := ifaceidx.New(ifs)
		for _, name := range ifs.ListAllNames() {
			if md, ok := idx.LookupByName(name); ok {
				s.logical[md.SwIfIndex] = name
			}
			if p.Pods != nil {
				if ns, pod, ok := p.Pods.GetPodByIf(name); ok {
					s.podOfIf[name] = ns + "/" + pod
				}
			}
		}
	}
	if p.LocalPods != nil {
		for id, lp := range p.LocalPods() {
			if lp.IPAddress != nil {
				s.podAt[lp.IPAddress.String()] = id.Namespace + "/" + id.Name
			}
		}
	}
	if p.Nodes != nil {
		for name, n := range p.Nodes.GetAllNodes() {
			for _, a := range n.VppIPAddresses {
				s.nodeAt[a.IP.String()] = name
			}
		}
	}
	if p.Values != nil {
		s.readServices(p.Values)
	}
	if p.Rules != nil {
		s.ruleOwner = func(acl string, rule int) (string, bool, bool) {
			owners := p.Rules.ACLRules(acl)
			if rule < 0 || rule >= len(owners) {
				return "", false, false
			}
			return owners[rule].Policy, owners[rule].Deny, true
		}
	}
	return s
}

// readServices maps the frontends of the service renderer's DNAT44 values (labelled
// with the Service's namespace/name) to their Service.
func (s *snapshot) readServices(values func(string, kvapi.View) ([]kvapi.KVWithMetadata, error)) {
	kvs, err := values(natplugin.DNAT44DescriptorName, kvapi.NBView)
	if err != nil {
		return
	}
	for _, kv := range kvs {
		d, ok := kv.Value.(*vpp_nat.DNat44)
		if !ok || !strings.Contains(d.GetLabel(), "/") {
			continue
		}
		for _, m := range d.GetStMappings() {
			proto := ProtoTCP
			if m.GetProtocol() == vpp_nat.DNat44_UDP {
				proto = ProtoUDP
			}
			if m.GetExternalIp() != "" {
				s.services[frontendKey(m.GetExternalIp(), uint16(m.GetExternalPort()), proto)] = d.GetLabel()
			}
		}
	}
}

func frontendKey(ip string, port uint16, proto string) string {
	return ip + ":" + strconv.Itoa(int(port)) + "/" + proto
}

func (s *snapshot) InterfaceByIndex(sw uint32) string { return s.logical[sw] }

func (s *snapshot) InterfaceByVPPName(n string) string {
	if idx, ok := s.vppIdx[n]; ok {
		return s.logical[idx]
	}
	return ""
}

func (s *snapshot) PodOfInterface(logical string) string { return s.podOfIf[logical] }
func (s *snapshot) PodAt(ip string) string               { return s.podAt[ip] }
func (s *snapshot) NodeAt(ip string) string              { return s.nodeAt[ip] }

func (s *snapshot) ServiceAt(ip string, port uint16, proto string) string {
	return s.services[frontendKey(ip, port, proto)]
}

func (s *snapshot) RuleOwner(acl string, rule int) (string, bool, bool) {
	if s.ruleOwner == nil {
		return "", false, false
	}
	return s.ruleOwner(acl, rule)
}
