package contivconf

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
)

// nodeState is the configuration resolved for this node (docs/CONFIG.md, contiv.conf: how the node's settings are resolved).
type nodeState struct {
	stnMode            bool
	useDHCP            bool
	mainIfName         string
	mainIPs            IPsWithNetworks
	otherIfs           OtherInterfaces
	defaultGW          net.IP
	natExternalTraffic bool
	// stolen is the STN daemon's report of the stolen NIC (nil outside STN mode).
	stolen *StolenInterfaceInfo
}

// resolver holds the inputs of the node resolution.
type resolver struct {
	cfg      *Config
	ipam     *IPAMConfig
	nodeName string
	dumpDPDK func() ([]string, error)
	getSTN   func(ifName string) (*StolenInterfaceInfo, error)
	log      logrus.FieldLogger
}

// resolve computes this node's settings:
//   - DHCP: ipamConfig.nodeInterconnectDHCP or the node's mainVPPInterface.useDHCP, but
//     a configured mainVPPInterface.ip turns it off;
//   - main interface: the node's mainVPPInterface, else (STN of a vmxnet3 NIC) the
//     vmxnet3 name derived from the stolen NIC's PCI address, else the first DPDK
//     interface in VPP that is not one of the node's other interfaces, else (STN) an
//     af_packet on the stolen NIC's link, else "";
//   - main IPs (without DHCP): the stolen NIC's IPs in STN mode, else the node's
//     mainVPPInterface.ip, else none;
//   - default gateway (without DHCP): the STN gateway, else the node's gateway, else
//     ipamConfig.defaultGateway;
//   - NAT of external traffic: the global flag or the node's;
//   - STN mode: stealFirstNIC, stealInterface or the node's stealInterface.
func (r *resolver) resolve() (*nodeState, error) {
	nc := r.cfg.nodeConfigFor(r.nodeName)
	if nc == nil {
		nc = &NodeConfig{NodeName: r.nodeName}
		if len(r.cfg.NodeConfig) > 0 {
			r.log.WithField("node", r.nodeName).Debug("no nodeConfig entry for this node: using the global settings")
		}
	} else {
		r.log.WithField("node", r.nodeName).Debug("using the nodeConfig entry of this node")
	}
	st := &nodeState{
		stnMode:            r.cfg.StealFirstNIC || r.cfg.StealInterface != "" || nc.StealInterface != "",
		useDHCP:            (r.ipam.NodeInterconnectDHCP || nc.MainVPPInterface.UseDHCP) && nc.MainVPPInterface.IP == "",
		natExternalTraffic: r.cfg.NatExternalTraffic || nc.NatExternalTraffic,
	}

	otherNames := make(map[string]bool)
	for _, o := range nc.OtherVPPInterfaces {
		otherNames[o.InterfaceName] = true
		oif := &OtherInterfaceConfig{InterfaceName: o.InterfaceName, UseDHCP: o.UseDHCP}
		if o.IP != "" {
			ip, err := parseInterfaceIP(o.IP)
			if err != nil {
				return nil, fmt.Errorf("nodeConfig[%s].otherVPPInterfaces[%s].ip: %w", nc.NodeName, o.InterfaceName, err)
			}
			oif.IPs = IPsWithNetworks{ip}
		}
		st.otherIfs = append(st.otherIfs, oif)
	}

	var stolen *StolenInterfaceInfo
	if st.stnMode {
		var err error
		if stolen, err = r.stolenInterface(nc); err != nil {
			return nil, err
		}
	}

	// Main interface name.
	switch {
	case nc.MainVPPInterface.InterfaceName != "":
		st.mainIfName = nc.MainVPPInterface.InterfaceName
	case stolen != nil && stolen.KernelDriver == Vmxnet3KernelDriver:
		name, err := vmxnet3NameFromPCI(stolen.PCIAddress)
		if err != nil {
			return nil, fmt.Errorf("stolen vmxnet3 NIC: %w", err)
		}
		st.mainIfName = name
	case r.dumpDPDK != nil:
		names, err := r.dumpDPDK()
		if err != nil {
			return nil, fmt.Errorf("dump DPDK interfaces of VPP: %w", err)
		}
		for _, name := range names {
			if !otherNames[name] {
				st.mainIfName = name
				break
			}
		}
	}
	if st.mainIfName == "" && stolen != nil && stolen.LinkName != "" {
		// No DPDK in VPP (or none that took the NIC): VPP drives the stolen link through
		// a packet socket, as a real VPP without DPDK would.
		st.mainIfName = AFPacketInterfaceName(stolen.LinkName)
	}
	if st.mainIfName == "" {
		r.log.Info("no main VPP interface found: a loopback will stand in")
	}
	st.stolen = stolen

	if !st.useDHCP {
		// Main interface IPs.
		switch {
		case stolen != nil:
			for _, addr := range stolen.IPAddresses {
				st.mainIPs = append(st.mainIPs, &IPWithNetwork{
					Address: normalizeIP(addr.IP),
					Network: &net.IPNet{IP: normalizeIP(addr.IP.Mask(addr.Mask)), Mask: addr.Mask},
				})
			}
		case nc.MainVPPInterface.IP != "":
			ip, err := parseInterfaceIP(nc.MainVPPInterface.IP)
			if err != nil {
				return nil, fmt.Errorf("nodeConfig[%s].mainVPPInterface.ip: %w", nc.NodeName, err)
			}
			st.mainIPs = IPsWithNetworks{ip}
		}

		// Static default gateway.
		if stolen != nil {
			st.defaultGW = stnGateway(stolen)
		}
		if st.defaultGW == nil && nc.Gateway != "" {
			st.defaultGW = normalizeIP(net.ParseIP(strings.TrimSpace(nc.Gateway)))
		}
		if st.defaultGW == nil {
			st.defaultGW = cloneIP(r.ipam.DefaultGateway)
		}
	}

	r.log.WithFields(logrus.Fields{
		"node":               r.nodeName,
		"mainInterface":      st.mainIfName,
		"dhcp":               st.useDHCP,
		"stn":                st.stnMode,
		"mainIPs":            st.mainIPs.String(),
		"defaultGW":          ipString(st.defaultGW),
		"natExternalTraffic": st.natExternalTraffic,
		"otherInterfaces":    len(st.otherIfs),
	}).Info("node configuration resolved")
	return st, nil
}

// stolenInterface asks the STN daemon about the NIC that this node steals. The key that
// asked for STN decides which NIC: the node's stealInterface, else the global
// stealInterface, else stealFirstNIC, for which the daemon is asked with an empty name
// and picks the host's first NIC itself.
func (r *resolver) stolenInterface(nc *NodeConfig) (*StolenInterfaceInfo, error) {
	key, ifName := "stealFirstNIC", ""
	switch ifName, _, _ = r.cfg.NICToSteal(nc.NodeName); {
	case nc.StealInterface != "":
		key = fmt.Sprintf("nodeConfig[%s].stealInterface", nc.NodeName)
	case ifName != "":
		key = "stealInterface"
	}
	what := fmt.Sprintf("interface %q", ifName)
	if ifName == "" {
		what = "the host's first NIC"
	}
	if r.getSTN == nil {
		return nil, fmt.Errorf("%s asks for STN mode (steal %s), but no STN daemon is available", key, what)
	}
	info, err := r.getSTN(ifName)
	if err != nil {
		return nil, fmt.Errorf("%s: get %s from the STN daemon: %w", key, what, err)
	}
	if info == nil {
		return nil, fmt.Errorf("%s: the STN daemon returned nothing for %s", key, what)
	}
	r.log.WithFields(logrus.Fields{
		"interface": ifName, "pci": info.PCIAddress, "driver": info.KernelDriver,
		"ips": len(info.IPAddresses), "gw": ipString(info.DefaultGW),
	}).Info("STN: stolen interface")
	return info, nil
}

// stnGateway returns the gateway of the stolen NIC's default route, else a stand-in: the
// first host of the NIC's (first) subnet, or its last host when the first is the NIC's own
// address. It returns nil when the NIC has no address in a subnet with room for that.
func stnGateway(info *StolenInterfaceInfo) net.IP {
	if info.DefaultGW != nil {
		return normalizeIP(info.DefaultGW)
	}
	if len(info.IPAddresses) == 0 {
		return nil
	}
	addr := info.IPAddresses[0]
	subnet := &net.IPNet{IP: normalizeIP(addr.IP.Mask(addr.Mask)), Mask: addr.Mask}
	if addrBits(subnet)-prefixLen(subnet) < 2 {
		return nil
	}
	gw := hostAt(subnet, 1)
	if gw.Equal(addr.IP) {
		gw = hostAt(subnet, -2)
	}
	return gw
}

// parseInterfaceIP parses an interface address given with its prefix length.
func parseInterfaceIP(s string) (*IPWithNetwork, error) {
	ip, n, err := net.ParseCIDR(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid CIDR", s)
	}
	return &IPWithNetwork{Address: normalizeIP(ip), Network: n}, nil
}

// parsePCIAddress splits a PCI address "dddd:bb:ss.f" (hex) into its parts.
func parsePCIAddress(pci string) (dom, bus, slot, fn uint64, err error) {
	bad := fmt.Errorf("PCI address %q is not of the form dddd:bb:ss.f", pci)
	parts := strings.Split(pci, ":")
	if len(parts) != 3 {
		return 0, 0, 0, 0, bad
	}
	slotFn := strings.Split(parts[2], ".")
	if len(slotFn) != 2 {
		return 0, 0, 0, 0, bad
	}
	for _, f := range []struct {
		s   string
		max uint64
		dst *uint64
	}{{parts[0], 0xffff, &dom}, {parts[1], 0xff, &bus}, {slotFn[0], 0x1f, &slot}, {slotFn[1], 0x7, &fn}} {
		v, perr := strconv.ParseUint(f.s, 16, 16)
		if perr != nil || v > f.max {
			return 0, 0, 0, 0, bad
		}
		*f.dst = v
	}
	return dom, bus, slot, fn, nil
}

// vmxnet3NameFromPCI returns VPP's name of the vmxnet3 interface at a PCI address:
// "0000:0b:00.0" becomes "vmxnet3-0/b/0/0".
func vmxnet3NameFromPCI(pci string) (string, error) {
	dom, bus, slot, fn, err := parsePCIAddress(pci)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s%x/%x/%x/%x", Vmxnet3InterfacePrefix, dom, bus, slot, fn), nil
}

// pciFromVmxnet3Name is the inverse of vmxnet3NameFromPCI.
func pciFromVmxnet3Name(name string) (string, error) {
	rest, ok := strings.CutPrefix(name, Vmxnet3InterfacePrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 4 {
		return "", fmt.Errorf("interface %q is not named %s<domain>/<bus>/<slot>/<function>", name, Vmxnet3InterfacePrefix)
	}
	var v [4]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return "", fmt.Errorf("interface %q: %q is not a hex number", name, p)
		}
		v[i] = n
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v[0], v[1], v[2], v[3]), nil
}

// String prints the addresses as CIDRs, separated by commas.
func (ips IPsWithNetworks) String() string {
	s := make([]string, 0, len(ips))
	for _, ip := range ips {
		ones, _ := ip.Network.Mask.Size()
		s = append(s, fmt.Sprintf("%s/%d", ip.Address, ones))
	}
	return strings.Join(s, ",")
}
