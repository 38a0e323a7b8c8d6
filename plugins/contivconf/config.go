package contivconf

import (
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// ConfigName is the name under which the agent loads contiv.conf: flag -contiv-config,
// environment variable CONTIV_CONFIG, default file contiv.conf.
const ConfigName = "contiv"

// Code defaults of contiv.conf (applied for keys the file does not set).
const (
	DefaultTAPInterfaceVersion      = 2
	DefaultPodVRFID                 = 1
	DefaultMainVRFID                = 0
	DefaultIPNeighborScanInterval   = 1
	DefaultIPNeighborStaleThreshold = 4

	DefaultServiceCIDR                   = "10.96.0.0/12"
	DefaultPodSubnetCIDR                 = "10.1.0.0/16"
	DefaultPodSubnetOneNodePrefixLen     = 24
	DefaultVPPHostSubnetCIDR             = "172.30.0.0/16"
	DefaultVPPHostSubnetOneNodePrefixLen = 24
	DefaultVxlanCIDR                     = "192.168.30.0/24"

	// Per-node prefix lengths of ipamConfig.ipv6 when it leaves them out: upstream
	// Contiv-VPP's IPv6 example (a /64 of pods and a /112 of VPP-host interconnect
	// per node).
	DefaultIPv6PodSubnetOneNodePrefixLen     = 64
	DefaultIPv6VPPHostSubnetOneNodePrefixLen = 112

	DefaultServicePolicyBSIDSubnetCIDR       = "5555::/16"
	DefaultServicePodLocalSIDSubnetCIDR      = "6666::/16"
	DefaultServiceHostLocalSIDSubnetCIDR     = "6655::/16"
	DefaultServiceNodeLocalSIDSubnetCIDR     = "7766::/16"
	DefaultNodeToNodePodLocalSIDSubnetCIDR   = "7777::/16"
	DefaultNodeToNodeHostLocalSIDSubnetCIDR  = "7799::/16"
	DefaultNodeToNodePodPolicySIDSubnetCIDR  = "8888::/16"
	DefaultNodeToNodeHostPolicySIDSubnetCIDR = "9999::/16"
)

// Values of interfaceRxMode besides "" (the VPP default).
const (
	RxModePolling   = "polling"
	RxModeInterrupt = "interrupt"
	RxModeAdaptive  = "adaptive"
)

// Values of serviceRenderer.
const (
	// ServiceRendererNAT44 renders IPv4 Services with NAT44-ED (IPv6 ones with cnat).
	ServiceRendererNAT44 = "nat44"
	// ServiceRendererCNAT renders the Services of both families with cnat.
	ServiceRendererCNAT = "cnat"
)

// ReservedVRFID is the VRF ID that VPP reserves (~0); neither VRF may use it.
const ReservedVRFID = 4294967295

// Config is the whole of contiv.conf. The embedded structs are flattened: their keys sit at
// the top level of the file. Start from DefaultConfig and unmarshal the file onto it.
type Config struct {
	InterfaceConfig
	RoutingConfig
	IPNeighborScanConfig
	STNConfig

	// NatExternalTraffic enables dynamic SNAT of traffic leaving the cluster (default true);
	// a node may turn it on for itself only (nodeConfig[].natExternalTraffic).
	NatExternalTraffic bool `json:"natExternalTraffic"`
	// EnablePacketTrace makes VPP trace packets arriving on DPDK and virtio interfaces.
	EnablePacketTrace bool `json:"enablePacketTrace"`
	// CRDNodeConfigurationDisabled ignores the NodeConfig CRD (default true).
	CRDNodeConfigurationDisabled bool `json:"crdNodeConfigurationDisabled"`
	// ServiceRenderer chooses how IPv4 Services are rendered into VPP:
	// ServiceRendererNAT44 (default, NAT44-ED static mappings) or ServiceRendererCNAT
	// (cnat translations, as Calico-VPP). IPv6 Services are always rendered by cnat.
	ServiceRenderer string `json:"serviceRenderer"`

	// IPAMConfig is the address plan of the cluster.
	IPAMConfig IPAMConfigForJSON `json:"ipamConfig"`
	// NodeConfig holds settings for individual nodes, selected by node name.
	NodeConfig []NodeConfig `json:"nodeConfig,omitempty"`
}

// InterfaceConfig is how pods and the host are attached to VPP.
type InterfaceConfig struct {
	// UseTAPInterfaces chooses virtio TAPs (true, default) over VETH + AF_PACKET pairs.
	UseTAPInterfaces bool `json:"useTAPInterfaces"`
	// TAPInterfaceVersion must be 2 (virtio TAP); 0 in the file means the default.
	TAPInterfaceVersion uint8 `json:"tapInterfaceVersion"`
	// TAPv2RxRingSize and TAPv2TxRingSize are the TAP ring sizes (0 = VPP default).
	TAPv2RxRingSize uint16 `json:"tapv2RxRingSize"`
	TAPv2TxRingSize uint16 `json:"tapv2TxRingSize"`
	// Vmxnet3RxRingSize and Vmxnet3TxRingSize are the vmxnet3 queue sizes of the main
	// interface; they are used only when both are set.
	Vmxnet3RxRingSize uint16 `json:"vmxnet3RxRingSize"`
	Vmxnet3TxRingSize uint16 `json:"vmxnet3TxRingSize"`
	// InterfaceRxMode is "", "polling", "interrupt" or "adaptive" (lower case after
	// parsing; "" = VPP default).
	InterfaceRxMode string `json:"interfaceRxMode"`
	// TCPChecksumOffloadDisabled turns TCP checksum offload off on VETHs (default true).
	TCPChecksumOffloadDisabled bool `json:"tcpChecksumOffloadDisabled"`
	// MTUSize applies to TAPs, VETHs and AF_PACKETs (0 = VPP default).
	MTUSize uint32 `json:"mtuSize"`
}

// RoutingConfig is how traffic is routed inside VPP and between nodes.
type RoutingConfig struct {
	// MainVRFID is the VRF of the node interconnect (default 0).
	MainVRFID uint32 `json:"mainVRFID"`
	// PodVRFID is the VRF of the pods (default 1).
	PodVRFID uint32 `json:"podVRFID"`
	// UseNoOverlay routes between nodes without VXLAN.
	UseNoOverlay bool `json:"useNoOverlay"`
	// UseSRv6Interconnect connects nodes with SRv6 (IPv6 only).
	UseSRv6Interconnect bool `json:"useSRv6Interconnect"`
	// RouteServiceCIDRToVPP routes the host's traffic to Services through VPP: Linux
	// routes for the service CIDR and for every node's IP (their NodePorts) via VPP. For
	// nodes without kube-proxy; with kube-proxy it is not needed (and harmless).
	RouteServiceCIDRToVPP bool `json:"routeServiceCIDRToVPP"`
}

// IPNeighborScanConfig is VPP's scanning of stale IP neighbours.
type IPNeighborScanConfig struct {
	// ScanIPNeighbors turns the scan on (default true).
	ScanIPNeighbors bool `json:"scanIPNeighbors"`
	// IPNeighborScanInterval is the scan period in minutes (default 1).
	IPNeighborScanInterval uint8 `json:"ipNeighborScanInterval"`
	// IPNeighborStaleThreshold is the age in minutes after which a neighbour is stale
	// (default 4).
	IPNeighborStaleThreshold uint8 `json:"ipNeighborStaleThreshold"`
}

// STNConfig is the "steal the NIC" mode, in which VPP takes over a host NIC.
type STNConfig struct {
	// StealFirstNIC steals the first NIC of the host; a stealInterface (global or the
	// node's) wins over it.
	StealFirstNIC bool `json:"stealFirstNIC"`
	// StealInterface names the host NIC to steal on every node: a Linux link name.
	StealInterface string `json:"stealInterface"`
	// STNSocketFile was upstream's gRPC socket of the STN daemon; deprecated and
	// ignored (a warning when set): contiv-stn shares STNRecordFile instead.
	STNSocketFile string `json:"stnSocketFile"`
	// STNVersion selects how traffic is handed back to the host: 0 or 1 = VPP STN rule;
	// upstream's 2 (ip-punt-redirect) is refused with STN mode on.
	STNVersion uint8 `json:"stnVersion"`
	// STNRecordFile is the record contiv-stn keeps of the stolen NIC (its -state-file),
	// from which the agent learns the NIC's addresses and gateway; an absolute path
	// (default DefaultSTNRecordFile).
	STNRecordFile string `json:"stnRecordFile"`
}

// IPAMConfigForJSON is ipamConfig as written in contiv.conf (and as shown under "config"
// by GET /contiv/v1/ipam, there with contivCIDR already dissected).
type IPAMConfigForJSON struct {
	UseExternalIPAM               bool              `json:"useExternalIPAM"`
	ContivCIDR                    string            `json:"contivCIDR"`
	ServiceCIDR                   string            `json:"serviceCIDR"`
	NodeInterconnectDHCP          bool              `json:"nodeInterconnectDHCP"`
	PodSubnetCIDR                 string            `json:"podSubnetCIDR"`
	PodSubnetOneNodePrefixLen     uint8             `json:"podSubnetOneNodePrefixLen"`
	VPPHostSubnetCIDR             string            `json:"vppHostSubnetCIDR"`
	VPPHostSubnetOneNodePrefixLen uint8             `json:"vppHostSubnetOneNodePrefixLen"`
	NodeInterconnectCIDR          string            `json:"nodeInterconnectCIDR"`
	VxlanCIDR                     string            `json:"vxlanCIDR"`
	DefaultGateway                string            `json:"defaultGateway"`
	SRv6                          SRv6ConfigForJSON `json:"srv6"`
	// IPv6 is the IPv6 half of a dual-stack plan; nil: none. When the file sets it and
	// none of the address-plan keys above (contivCIDR, serviceCIDR, podSubnetCIDR,
	// podSubnetOneNodePrefixLen, vppHostSubnetCIDR, vppHostSubnetOneNodePrefixLen,
	// nodeInterconnectCIDR, vxlanCIDR), the cluster is single-stack IPv6 and those keys
	// lose their IPv4 defaults (they show empty).
	IPv6 *IPv6ConfigForJSON `json:"ipv6,omitempty"`
}

// IPv6ConfigForJSON is ipamConfig.ipv6: the IPv6 ranges of the address plan, with the
// names the top-level keys have (upstream Contiv-VPP took IPv6 ranges in those keys for
// a single-stack IPv6 cluster, and still may here). Every value must be IPv6.
type IPv6ConfigForJSON struct {
	// ServiceCIDR is the IPv6 service range (optional; kube-apiserver's second
	// --service-cluster-ip-range).
	ServiceCIDR string `json:"serviceCIDR"`
	// PodSubnetCIDR is the IPv6 pod range of the cluster (required).
	PodSubnetCIDR string `json:"podSubnetCIDR"`
	// PodSubnetOneNodePrefixLen is the IPv6 pod subnet of one node (0: 64).
	PodSubnetOneNodePrefixLen uint8 `json:"podSubnetOneNodePrefixLen"`
	// VPPHostSubnetCIDR is the IPv6 range of the VPP-host interconnects (required).
	VPPHostSubnetCIDR string `json:"vppHostSubnetCIDR"`
	// VPPHostSubnetOneNodePrefixLen is the IPv6 interconnect of one node (0: 112).
	VPPHostSubnetOneNodePrefixLen uint8 `json:"vppHostSubnetOneNodePrefixLen"`
	// NodeInterconnectCIDR gives node N the IPv6 host #N (optional).
	NodeInterconnectCIDR string `json:"nodeInterconnectCIDR"`
	// VxlanCIDR gives node N's VXLAN BVI the IPv6 host #N (required with the VXLAN
	// overlay).
	VxlanCIDR string `json:"vxlanCIDR"`
}

// SRv6ConfigForJSON holds the IPv6 prefixes from which SRv6 SIDs and BSIDs are made.
type SRv6ConfigForJSON struct {
	ServicePolicyBSIDSubnetCIDR       string `json:"servicePolicyBSIDSubnetCIDR"`
	ServicePodLocalSIDSubnetCIDR      string `json:"servicePodLocalSIDSubnetCIDR"`
	ServiceHostLocalSIDSubnetCIDR     string `json:"serviceHostLocalSIDSubnetCIDR"`
	ServiceNodeLocalSIDSubnetCIDR     string `json:"serviceNodeLocalSIDSubnetCIDR"`
	NodeToNodePodLocalSIDSubnetCIDR   string `json:"nodeToNodePodLocalSIDSubnetCIDR"`
	NodeToNodeHostLocalSIDSubnetCIDR  string `json:"nodeToNodeHostLocalSIDSubnetCIDR"`
	NodeToNodePodPolicySIDSubnetCIDR  string `json:"nodeToNodePodPolicySIDSubnetCIDR"`
	NodeToNodeHostPolicySIDSubnetCIDR string `json:"nodeToNodeHostPolicySIDSubnetCIDR"`
}

// NodeConfig is one entry of nodeConfig: settings of the node called NodeName.
type NodeConfig struct {
	NodeName string `json:"nodeName"`
	NodeConfigSpec
}

// NodeConfigSpec is what can be set for one node (the same fields as the NodeConfig CRD).
type NodeConfigSpec struct {
	// MainVPPInterface is the NIC connecting the node to the other nodes.
	MainVPPInterface InterfaceWithIP `json:"mainVPPInterface"`
	// OtherVPPInterfaces are further NICs handed to VPP.
	OtherVPPInterfaces []InterfaceWithIP `json:"otherVPPInterfaces,omitempty"`
	// StealInterface names the host NIC to steal on this node (STN mode).
	StealInterface string `json:"stealInterface,omitempty"`
	// Gateway is this node's static default gateway.
	Gateway string `json:"gateway,omitempty"`
	// NatExternalTraffic enables SNAT of cluster-outbound traffic on this node even when
	// the global natExternalTraffic is off.
	NatExternalTraffic bool `json:"natExternalTraffic,omitempty"`
}

// InterfaceWithIP names a VPP interface and how it gets its address.
type InterfaceWithIP struct {
	InterfaceName string `json:"interfaceName"`
	// IP is the interface address with its prefix length, e.g. "192.168.16.5/24".
	IP      string `json:"ip"`
	UseDHCP bool   `json:"useDHCP"`
}

// DefaultConfig returns contiv.conf with every key at its code default.
func DefaultConfig() *Config {
	return &Config{
		InterfaceConfig: InterfaceConfig{
			UseTAPInterfaces:           true,
			TAPInterfaceVersion:        DefaultTAPInterfaceVersion,
			TCPChecksumOffloadDisabled: true,
		},
		RoutingConfig: RoutingConfig{
			MainVRFID: DefaultMainVRFID,
			PodVRFID:  DefaultPodVRFID,
		},
		IPNeighborScanConfig: IPNeighborScanConfig{
			ScanIPNeighbors:          true,
			IPNeighborScanInterval:   DefaultIPNeighborScanInterval,
			IPNeighborStaleThreshold: DefaultIPNeighborStaleThreshold,
		},
		STNConfig: STNConfig{
			STNRecordFile: DefaultSTNRecordFile,
		},
		NatExternalTraffic:           true,
		CRDNodeConfigurationDisabled: true,
		ServiceRenderer:              ServiceRendererNAT44,
		IPAMConfig: IPAMConfigForJSON{
			ServiceCIDR:                   DefaultServiceCIDR,
			PodSubnetCIDR:                 DefaultPodSubnetCIDR,
			PodSubnetOneNodePrefixLen:     DefaultPodSubnetOneNodePrefixLen,
			VPPHostSubnetCIDR:             DefaultVPPHostSubnetCIDR,
			VPPHostSubnetOneNodePrefixLen: DefaultVPPHostSubnetOneNodePrefixLen,
			VxlanCIDR:                     DefaultVxlanCIDR,
			SRv6: SRv6ConfigForJSON{
				ServicePolicyBSIDSubnetCIDR:       DefaultServicePolicyBSIDSubnetCIDR,
				ServicePodLocalSIDSubnetCIDR:      DefaultServicePodLocalSIDSubnetCIDR,
				ServiceHostLocalSIDSubnetCIDR:     DefaultServiceHostLocalSIDSubnetCIDR,
				ServiceNodeLocalSIDSubnetCIDR:     DefaultServiceNodeLocalSIDSubnetCIDR,
				NodeToNodePodLocalSIDSubnetCIDR:   DefaultNodeToNodePodLocalSIDSubnetCIDR,
				NodeToNodeHostLocalSIDSubnetCIDR:  DefaultNodeToNodeHostLocalSIDSubnetCIDR,
				NodeToNodePodPolicySIDSubnetCIDR:  DefaultNodeToNodePodPolicySIDSubnetCIDR,
				NodeToNodeHostPolicySIDSubnetCIDR: DefaultNodeToNodeHostPolicySIDSubnetCIDR,
			},
		},
	}
}

// Parse reads contiv.conf from data (YAML or JSON) onto the code defaults, normalises it
// and validates it. Unknown keys are an error when strict is set and a warning on log
// otherwise. A validation failure returns every problem joined (see FieldError).
func Parse(data []byte, strict bool, log logrus.FieldLogger) (*Config, error) {
	cfg := DefaultConfig()
	if err := infra.ParseConfig(data, cfg, strict, log); err != nil {
		return nil, fmt.Errorf("contiv.conf: %w", err)
	}
	cfg.normalize()
	if err := cfg.dropIPv4DefaultsIfIPv6Only(func(out *Config) error { return infra.ParseConfig(data, out, false, nil) }); err != nil {
		return nil, fmt.Errorf("contiv.conf: %w", err)
	}
	if _, warnings, err := cfg.compile(); err != nil {
		return nil, err
	} else if log != nil {
		for _, w := range warnings {
			log.Warn(w)
		}
	}
	return cfg, nil
}

// Validate checks every value of the configuration and returns all problems joined, each
// a FieldError. It does not change c.
func (c *Config) Validate() error {
	_, _, err := c.compile()
	return err
}

// normalize turns equivalent spellings into one: tapInterfaceVersion 0 becomes the default
// 2 and interfaceRxMode becomes lower case.
func (c *Config) normalize() {
	if c.TAPInterfaceVersion == 0 {
		c.TAPInterfaceVersion = DefaultTAPInterfaceVersion
	}
	c.InterfaceRxMode = strings.ToLower(strings.TrimSpace(c.InterfaceRxMode))
}

// nodeConfigFor returns the nodeConfig entry of the named node, or nil.
func (c *Config) nodeConfigFor(nodeName string) *NodeConfig {
	if nodeName == "" {
		return nil
	}
	for i := range c.NodeConfig {
		if c.NodeConfig[i].NodeName == nodeName {
			return &c.NodeConfig[i]
		}
	}
	return nil
}

// clone returns a deep copy of c.
func (c *Config) clone() *Config {
	out := *c
	out.IPAMConfig = c.IPAMConfig.clone()
	if c.NodeConfig != nil {
		out.NodeConfig = make([]NodeConfig, len(c.NodeConfig))
		for i, nc := range c.NodeConfig {
			out.NodeConfig[i] = nc
			if nc.OtherVPPInterfaces != nil {
				out.NodeConfig[i].OtherVPPInterfaces = append([]InterfaceWithIP(nil), nc.OtherVPPInterfaces...)
			}
		}
	}
	return &out
}
