package contivconf

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// Deps lists what the plugin needs.
type Deps struct {
	// Log receives the plugin's messages (nil: infra.LoggerOr's default).
	Log logrus.FieldLogger
	// Config loads contiv.conf; nil, or a file that is not found, means the code defaults.
	Config infra.ConfigLoader
	// NodeName is this node's name (env MICROSERVICE_LABEL), which selects its
	// nodeConfig entry.
	NodeName string
	// DumpDPDKInterfaces returns the names of the DPDK NICs in VPP ordered by
	// sw_if_index; nil means none are known.
	DumpDPDKInterfaces func() ([]string, error)
	// GetSTNInfo asks the STN daemon about the host NIC to steal ("" = the first NIC).
	// nil: STNSource makes it; both nil means no daemon, and STN mode then fails Init.
	GetSTNInfo func(ifName string) (*StolenInterfaceInfo, error)
	// STNSource makes a GetSTNInfo reading contiv-stn's record at contiv.conf's
	// stnRecordFile (the cell: STNRecordSource); used when GetSTNInfo is nil.
	STNSource func(recordFile string) func(ifName string) (*StolenInterfaceInfo, error)
}

// Plugin is ContivConf: it loads and validates contiv.conf and resolves this node's
// settings. It implements API; its getters may be called from any goroutine.
type Plugin struct {
	Deps

	mu       sync.RWMutex
	config   *Config
	ipam     *IPAMConfig
	ipamJSON *IPAMConfigForJSON
	node     *nodeState
}

var _ API = (*Plugin)(nil)

// String names the plugin.
func (p *Plugin) String() string { return "contivconf" }

// Init loads contiv.conf (code defaults when there is no file), validates every value,
// failing with all problems at once, and resolves this node's settings.
func (p *Plugin) Init() error {
	p.Log = infra.LoggerOr(p.Log, p.String())
	cfg := DefaultConfig()
	found := false
	if p.Config != nil {
		var err error
		if found, err = p.Config.LoadConfig(cfg); err != nil {
			return fmt.Errorf("load contiv.conf: %w", err)
		}
	}
	if !found {
		cfg = DefaultConfig()
		p.Log.Info("no contiv.conf found: using the code defaults")
	}
	cfg.normalize()
	if err := cfg.dropIPv4DefaultsIfIPv6Only(func(out *Config) error {
		_, err := p.Config.LoadConfig(out)
		return err
	}); err != nil {
		return fmt.Errorf("load contiv.conf: %w", err)
	}
	comp, warnings, err := cfg.compile()
	if err != nil {
		return fmt.Errorf("invalid contiv.conf:\n%w", err)
	}
	for _, w := range warnings {
		p.Log.Warn(w)
	}
	if err := cfg.checkNodeIPSource(p.NodeName, comp.ipam); err != nil {
		// contiv-init refuses to start with such a file (ValidateForNode); the agent
		// alone starts, for its unit tests and the pieces that need no node IP, but
		// says at once what the node will lack.
		p.Log.WithError(err).Error("contiv.conf gives this node no IP address: pod networking fails until it is fixed")
	}
	if !cfg.CRDNodeConfigurationDisabled {
		p.Log.Warn("crdNodeConfigurationDisabled is false, but the NodeConfig CRD is not supported yet: only nodeConfig of contiv.conf is used")
	}

	p.Log.WithFields(logrus.Fields{
		"podSubnet":        ipNetString(comp.ipam.PodSubnetCIDR),
		"vppHostSubnet":    ipNetString(comp.ipam.VPPHostSubnetCIDR),
		"serviceCIDR":      ipNetString(comp.ipam.ServiceCIDR),
		"nodeInterconnect": ipNetString(comp.ipam.NodeInterconnectCIDR),
		"vxlanCIDR":        ipNetString(comp.ipam.VxlanCIDR),
		"ipv6":             family(comp.ipam.PodSubnetCIDR) == "IPv6",
		"dualStackIPv6Pods": func() string {
			if v6 := comp.ipam.DualStackIPv6; v6 != nil {
				return ipNetString(v6.PodSubnetCIDR)
			}
			return ""
		}(),
	}).Info("contiv.conf loaded")

	// VPP is not asked for its NICs yet (it may not be connected before the agent
	// starts): the main interface found in VPP is resolved at the first resync.
	st, err := p.resolveNode(cfg, comp.ipam, false)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.config, p.ipam, p.ipamJSON, p.node = cfg, comp.ipam, comp.ipamJSON, st
	p.mu.Unlock()
	return nil
}

// ReloadNodeInterfaces resolves this node's settings again (nodeConfig entry, DPDK
// interfaces in VPP, STN daemon). The previous settings stay in force when it fails.
func (p *Plugin) ReloadNodeInterfaces() error {
	p.mu.RLock()
	cfg, ipam := p.config, p.ipam
	p.mu.RUnlock()
	if cfg == nil {
		return errors.New("resolve node configuration: plugin is not initialised")
	}
	st, err := p.resolveNode(cfg, ipam, true)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.node = st
	p.mu.Unlock()
	return nil
}

// resolveNode runs the node resolution on a validated configuration.
func (p *Plugin) resolveNode(cfg *Config, ipam *IPAMConfig, askVPP bool) (*nodeState, error) {
	dumpDPDK := p.DumpDPDKInterfaces
	if !askVPP {
		dumpDPDK = nil
	}
	getSTN := p.GetSTNInfo
	if getSTN == nil && p.STNSource != nil {
		getSTN = p.STNSource(cfg.STNRecordFile)
	}
	r := &resolver{
		cfg: cfg, ipam: ipam, nodeName: p.NodeName,
		dumpDPDK: dumpDPDK, getSTN: getSTN, log: p.Log,
	}
	st, err := r.resolve()
	if err != nil {
		return nil, fmt.Errorf("resolve configuration of node %q: %w", p.NodeName, err)
	}
	return st, nil
}

// Close releases nothing: the plugin holds no resources.
func (p *Plugin) Close() error { return nil }

// GetConfig returns a copy of the whole effective contiv.conf (defaults applied,
// normalised), nil before Init.
func (p *Plugin) GetConfig() *Config {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil {
		return nil
	}
	return p.config.clone()
}

// nodeState returns the resolved settings, or an empty state before Init.
func (p *Plugin) nodeState() *nodeState {
	if p.node == nil {
		return &nodeState{}
	}
	return p.node
}

// InSTNMode implements API.
func (p *Plugin) InSTNMode() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().stnMode
}

// UseDHCP implements API.
func (p *Plugin) UseDHCP() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().useDHCP
}

// EnablePacketTrace implements API.
func (p *Plugin) EnablePacketTrace() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.config != nil && p.config.EnablePacketTrace
}

// GetMainInterfaceName implements API.
func (p *Plugin) GetMainInterfaceName() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().mainIfName
}

// GetMainInterfaceConfiguredIPs implements API.
func (p *Plugin) GetMainInterfaceConfiguredIPs() IPsWithNetworks {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().mainIPs.clone()
}

// GetOtherVPPInterfaces implements API.
func (p *Plugin) GetOtherVPPInterfaces() OtherInterfaces {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().otherIfs.clone()
}

// GetStaticDefaultGW implements API.
func (p *Plugin) GetStaticDefaultGW() net.IP {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return cloneIP(p.nodeState().defaultGW)
}

// ServiceRenderer implements API (the default before Init).
func (p *Plugin) ServiceRenderer() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil || p.config.ServiceRenderer == "" {
		return ServiceRendererNAT44
	}
	return p.config.ServiceRenderer
}

// NatExternalTraffic implements API.
func (p *Plugin) NatExternalTraffic() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().natExternalTraffic
}

// GetIPAMConfig implements API (nil before Init).
func (p *Plugin) GetIPAMConfig() *IPAMConfig {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.ipam == nil {
		return nil
	}
	return p.ipam.clone()
}

// GetIPAMConfigForJSON implements API (nil before Init).
func (p *Plugin) GetIPAMConfigForJSON() *IPAMConfigForJSON {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.ipamJSON == nil {
		return nil
	}
	out := p.ipamJSON.clone()
	return &out
}

// GetInterfaceConfig implements API (nil before Init).
func (p *Plugin) GetInterfaceConfig() *InterfaceConfig {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil {
		return nil
	}
	out := p.config.InterfaceConfig
	return &out
}

// GetRoutingConfig implements API (nil before Init).
func (p *Plugin) GetRoutingConfig() *RoutingConfig {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil {
		return nil
	}
	out := p.config.RoutingConfig
	return &out
}

// GetIPNeighborScanConfig implements API (nil before Init).
func (p *Plugin) GetIPNeighborScanConfig() *IPNeighborScanConfig {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil {
		return nil
	}
	out := p.config.IPNeighborScanConfig
	return &out
}

// GetSTNConfig implements API (nil before Init).
func (p *Plugin) GetSTNConfig() *STNConfig {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.config == nil {
		return nil
	}
	out := p.config.STNConfig
	return &out
}

// GetStolenInterface implements API.
func (p *Plugin) GetStolenInterface() *StolenInterfaceInfo {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nodeState().stolen.clone()
}

// UseVmxnet3 implements API.
func (p *Plugin) UseVmxnet3() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return isVmxnet3Name(p.nodeState().mainIfName)
}

// GetVmxnet3Config implements API.
func (p *Plugin) GetVmxnet3Config() (*Vmxnet3Config, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	name := p.nodeState().mainIfName
	if !isVmxnet3Name(name) {
		return nil, fmt.Errorf("vmxnet3 config: main interface %q is not a vmxnet3 interface", name)
	}
	pci, err := pciFromVmxnet3Name(name)
	if err != nil {
		return nil, fmt.Errorf("vmxnet3 config: %w", err)
	}
	out := &Vmxnet3Config{PCIAddress: pci}
	if c := p.config; c.Vmxnet3RxRingSize != 0 && c.Vmxnet3TxRingSize != 0 {
		out.RxRingSize, out.TxRingSize = c.Vmxnet3RxRingSize, c.Vmxnet3TxRingSize
	}
	return out, nil
}

// IsIPv6 implements API.
func (p *Plugin) IsIPv6() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.ipam != nil && p.ipam.PodSubnetCIDR != nil && family(p.ipam.PodSubnetCIDR) == "IPv6"
}

// isVmxnet3Name tells whether name is VPP's name of a vmxnet3 interface.
func isVmxnet3Name(name string) bool {
	return strings.HasPrefix(name, Vmxnet3InterfacePrefix)
}
