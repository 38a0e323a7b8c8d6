package ipnet

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"

	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	linuxl3 "github.com/contiv-vpp/contiv-vpp/api/models/linux/l3"
	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	vppl2 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l2"
	vppl3 "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/ipam"
)

// settings is the part of contiv.conf (as resolved for this node by contivconf) that
// the builders read. It is taken once per event, so one event sees one configuration.
type settings struct {
	useTAP           bool
	mtu              uint32
	rxMode           vppif.Interface_RxMode
	tapRxRing        uint32
	tapTxRing        uint32
	vethCsumDisabled bool

	mainVRF          uint32
	podVRF           uint32
	noOverlay        bool
	routeServiceCIDR bool

	scanNeighbors  bool
	scanInterval   uint32
	staleThreshold uint32

	externalIPAM bool
	ipv6         bool

	useDHCP       bool
	mainIfName    string // "" = the loopback stands in
	mainIfType    vppif.Interface_Type
	configuredIPs contivconf.IPsWithNetworks
	otherIfs      contivconf.OtherInterfaces
	staticGW      net.IP

	// stn is single-NIC mode: VPP stole the NIC and the host keeps the node's
	// address on the interconnect (stn.go); stolen is the STN daemon's record of the
	// NIC (its link, MAC and routes).
	stn    bool
	stolen *contivconf.StolenInterfaceInfo
}

// readSettings takes the settings from contivconf.
func readSettings(c contivconf.API) (*settings, error) {
	ifc, rc, sc, ipc := c.GetInterfaceConfig(), c.GetRoutingConfig(), c.GetIPNeighborScanConfig(), c.GetIPAMConfig()
	if ifc == nil || rc == nil || sc == nil || ipc == nil {
		return nil, fmt.Errorf("contivconf is not initialised")
	}
	s := &settings{
		useTAP:           ifc.UseTAPInterfaces,
		mtu:              ifc.MTUSize,
		rxMode:           rxMode(ifc.InterfaceRxMode),
		tapRxRing:        uint32(ifc.TAPv2RxRingSize),
		tapTxRing:        uint32(ifc.TAPv2TxRingSize),
		vethCsumDisabled: ifc.TCPChecksumOffloadDisabled,
		mainVRF:          rc.MainVRFID,
		podVRF:           rc.PodVRFID,
		noOverlay:        rc.UseNoOverlay,
		routeServiceCIDR: rc.RouteServiceCIDRToVPP,
		scanNeighbors:    sc.ScanIPNeighbors,
		scanInterval:     uint32(sc.IPNeighborScanInterval),
		staleThreshold:   uint32(sc.IPNeighborStaleThreshold),
		externalIPAM:     ipc.UseExternalIPAM,
		ipv6:             c.IsIPv6(),
		useDHCP:          c.UseDHCP(),
		mainIfName:       c.GetMainInterfaceName(),
		mainIfType:       vppif.Interface_DPDK,
		configuredIPs:    c.GetMainInterfaceConfiguredIPs(),
		otherIfs:         c.GetOtherVPPInterfaces(),
		staticGW:         c.GetStaticDefaultGW(),
		stn:              c.InSTNMode(),
		stolen:           c.GetStolenInterface(),
	}
	switch {
	case c.UseVmxnet3():
		s.mainIfType = vppif.Interface_VMXNET3_INTERFACE
	case s.stolen != nil && s.stolen.LinkName != "" && s.mainIfName == contivconf.AFPacketInterfaceName(s.stolen.LinkName):
		s.mainIfType = vppif.Interface_AF_PACKET
	}
	return s, nil
}

// rxMode maps interfaceRxMode to the model ("" leaves VPP's choice).
func rxMode(mode string) vppif.Interface_RxMode {
	switch mode {
	case contivconf.RxModePolling:
		return vppif.Interface_POLLING
	case contivconf.RxModeInterrupt:
		return vppif.Interface_INTERRUPT
	case contivconf.RxModeAdaptive:
		return vppif.Interface_ADAPTIVE
	}
	return vppif.Interface_UNKNOWN
}

// unsupported names the contiv.conf key of a configuration this port cannot build.
func unsupported(c contivconf.API) error {
	if c.GetRoutingConfig() != nil && c.GetRoutingConfig().UseSRv6Interconnect {
		return fmt.Errorf("useSRv6Interconnect: the SRv6 node interconnect is not supported by this port")
	}
	return nil // stnVersion 2 (ip-punt-redirect) never gets here: contivconf's validation refuses it
}

// builder computes key-value pairs. It reads the settings of the event, the address
// plan and what the plugin knows about this node; it performs no I/O.
type builder struct {
	s      *settings
	ipam   ipam.API
	nodeID uint32
	// nodeIP is this node's address with the prefix length of its network, nil while
	// unknown (DHCP without a lease).
	nodeIP *net.IPNet
	// second are this node's addresses of the second IP family of a dual-stack plan
	// (IPv6), nil on a single-stack node: every builder adds that family beside the
	// primary one, which the IPAM's single-family getters give.
	second *ipam.FamilyAddresses
}

// secondFamily returns this node's addresses of the second family of the address
// plan (dual-stack: IPv6), nil on a single-stack node.
func secondFamily(a ipam.API) (*ipam.FamilyAddresses, error) {
	fams := a.Families()
	if len(fams) < 2 {
		return nil, nil
	}
	f := a.ThisNodeAddresses(fams[1])
	if f == nil {
		return nil, fmt.Errorf("the IPAM does not know this node's %s addresses", fams[1])
	}
	return f, nil
}

// podGateway returns the pod gateway of the family of ip, nil when the IPAM knows none.
func (b *builder) podGateway(ip net.IP) net.IP {
	if gw := b.ipam.PodGatewayIP(); gw != nil && sameFamily(gw, ip) {
		return gw
	}
	if f := b.second; f != nil && f.PodGatewayIP != nil && sameFamily(f.PodGatewayIP, ip) {
		return f.PodGatewayIP
	}
	return nil
}

// VRF table labels.
const (
	mainVRFLabel = "mainVRF"
	podVRFLabel  = "podVRF"
)

// MAC address prefixes of interfaces whose MAC is derived from a node ID.
var (
	hostInterconnectMACPrefix = [2]byte{0x34, 0x3c}
	vxlanBVIMACPrefix         = [2]byte{0x12, 0x2b}
)

// nodeMAC returns prefix followed by the node ID (4 bytes, big endian).
func nodeMAC(prefix [2]byte, nodeID uint32) string {
	mac := make(net.HardwareAddr, 6)
	mac[0], mac[1] = prefix[0], prefix[1]
	binary.BigEndian.PutUint32(mac[2:], nodeID)
	return mac.String()
}

// hostPrefixLen is the length of a host prefix of the address family of ip.
func hostPrefixLen(ip net.IP) int {
	if ip.To4() != nil {
		return 32
	}
	return 128
}

// hostNet returns ip as a host prefix, e.g. "10.1.1.2/32".
func hostNet(ip net.IP) string {
	return fmt.Sprintf("%s/%d", ip, hostPrefixLen(ip))
}

// anyNet returns the default route destination of the family of ip.
func anyNet(ip net.IP) string {
	if ip.To4() != nil {
		return "0.0.0.0/0"
	}
	return "::/0"
}

// withPrefixOf returns ip with the prefix length of network, e.g. "10.1.1.1/24".
func withPrefixOf(ip net.IP, network *net.IPNet) string {
	ones, _ := network.Mask.Size()
	return fmt.Sprintf("%s/%d", ip, ones)
}

// sameFamily tells whether both IPs are IPv4 or both IPv6.
func sameFamily(a, b net.IP) bool {
	return (a.To4() != nil) == (b.To4() != nil)
}

func ipString(ip net.IP) string {
	if ip == nil {
		return "<none>"
	}
	return ip.String()
}

// ipsString lists addresses, e.g. "10.1.1.2/32, fd00::2/128".
func ipsString(ips []*net.IPNet) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = netString(ip)
	}
	return strings.Join(s, ", ")
}

func netString(n *net.IPNet) string {
	if n == nil {
		return "<none>"
	}
	return n.String()
}

// Adders put a value under its model key.

func addVPPIf(kvs api.KeyValuePairs, v *vppif.Interface) { kvs[vppif.InterfaceKey(v.GetName())] = v }

func addVPPRoute(kvs api.KeyValuePairs, v *vppl3.Route) {
	kvs[vppl3.RouteKey(v.GetVrfId(), v.GetDstNetwork(), v.GetNextHopAddr())] = v
}

func addVPPARP(kvs api.KeyValuePairs, v *vppl3.ARPEntry) {
	kvs[vppl3.ARPEntryKey(v.GetInterface(), v.GetIpAddress())] = v
}

func addVrf(kvs api.KeyValuePairs, v *vppl3.VrfTable) {
	kvs[vppl3.VrfTableKey(v.GetId(), v.GetProtocol())] = v
}

func addBD(kvs api.KeyValuePairs, v *vppl2.BridgeDomain) { kvs[vppl2.BridgeDomainKey(v.GetName())] = v }

func addFIB(kvs api.KeyValuePairs, v *vppl2.FIBEntry) {
	kvs[vppl2.FIBKey(v.GetBridgeDomain(), v.GetPhysAddress())] = v
}

func addLinuxIf(kvs api.KeyValuePairs, v *linuxif.Interface) {
	kvs[linuxif.InterfaceKey(v.GetName())] = v
}

func addLinuxRoute(kvs api.KeyValuePairs, v *linuxl3.Route) {
	kvs[linuxl3.RouteKey(v.GetDstNetwork(), v.GetOutgoingInterface())] = v
}

func addLinuxARP(kvs api.KeyValuePairs, v *linuxl3.ARPEntry) {
	kvs[linuxl3.ARPEntryKey(v.GetInterface(), v.GetIpAddress())] = v
}
