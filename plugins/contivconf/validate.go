package contivconf

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/pkg/stn"
)

// FieldError is one invalid value of contiv.conf. Key is the path of the key with the
// JSON names ("ipamConfig.podSubnetCIDR"); nodeConfig entries are indexed by node name
// ("nodeConfig[worker1].gateway"), or by position when the name itself is the problem
// ("nodeConfig[#2].nodeName"). Its message is "<key>: <value> <reason>".
type FieldError struct {
	Key    string
	Value  any
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string {
	var value string
	switch v := e.Value.(type) {
	case string:
		value = fmt.Sprintf("%q", v)
	default:
		value = fmt.Sprintf("%v", v)
	}
	return fmt.Sprintf("%s: %s %s", e.Key, value, e.Reason)
}

// FieldErrors lists the FieldErrors found in err (as returned by Parse, Validate or
// Init), in the order they were reported.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// Limits of the values checked by Validate.
const (
	MinMTU               = 576
	MaxMTU               = 9216
	MaxTAPv2RingSize     = 32768
	MinVmxnet3RingSize   = 64
	MaxVmxnet3RingSize   = 4096
	MaxSTNVersion        = 2
	podSubnetMinHostBits = 3 // network, gateway, pod, NAT loopback, broadcast
	vppHostMinHostBits   = 2 // network, VPP end (.1), host end (.2)
)

// compiled is what validation derives from a Config.
type compiled struct {
	ipam     *IPAMConfig
	ipamJSON *IPAMConfigForJSON
}

// validator collects the problems of one configuration.
type validator struct {
	errs     []error
	warnings []string
}

func (v *validator) fail(key string, value any, reason string, args ...any) {
	if len(args) > 0 {
		reason = fmt.Sprintf(reason, args...)
	}
	v.errs = append(v.errs, &FieldError{Key: key, Value: value, Reason: reason})
}

func (v *validator) warn(format string, args ...any) {
	v.warnings = append(v.warnings, fmt.Sprintf(format, args...))
}

// compile validates c and derives the parsed, effective IPAM configuration. It returns
// warnings for settings that are accepted but have no effect, and every problem joined.
func (c *Config) compile() (*compiled, []string, error) {
	v := &validator{}
	v.checkInterfaces(&c.InterfaceConfig)
	v.checkRouting(&c.RoutingConfig)
	v.checkNeighborScan(&c.IPNeighborScanConfig)
	v.checkSTN(c)
	v.checkServiceRenderer(c)
	res := v.checkIPAM(c)
	v.checkNodeConfig(c.NodeConfig)
	if len(v.errs) > 0 {
		return nil, v.warnings, errors.Join(v.errs...)
	}
	return res, v.warnings, nil
}

func isPowerOfTwo(n uint64) bool { return n != 0 && n&(n-1) == 0 }

func (v *validator) checkInterfaces(c *InterfaceConfig) {
	if c.TAPInterfaceVersion != 0 && c.TAPInterfaceVersion != DefaultTAPInterfaceVersion {
		v.fail("tapInterfaceVersion", c.TAPInterfaceVersion,
			"is not supported: VPP 25.10 only has virtio TAP (version 2)")
	}
	for _, ring := range []struct {
		key  string
		size uint16
	}{{"tapv2RxRingSize", c.TAPv2RxRingSize}, {"tapv2TxRingSize", c.TAPv2TxRingSize}} {
		if ring.size != 0 && (!isPowerOfTwo(uint64(ring.size)) || ring.size > MaxTAPv2RingSize) {
			v.fail(ring.key, ring.size, "is not a power of two up to %d (0 = VPP default)", MaxTAPv2RingSize)
		}
	}
	for _, ring := range []struct {
		key  string
		size uint16
	}{{"vmxnet3RxRingSize", c.Vmxnet3RxRingSize}, {"vmxnet3TxRingSize", c.Vmxnet3TxRingSize}} {
		if ring.size != 0 && (!isPowerOfTwo(uint64(ring.size)) ||
			ring.size < MinVmxnet3RingSize || ring.size > MaxVmxnet3RingSize) {
			v.fail(ring.key, ring.size, "is not a power of two in %d..%d (0 = VPP default)",
				MinVmxnet3RingSize, MaxVmxnet3RingSize)
		}
	}
	if (c.Vmxnet3RxRingSize == 0) != (c.Vmxnet3TxRingSize == 0) {
		v.warn("vmxnet3RxRingSize and vmxnet3TxRingSize take effect only when both are set: using the VPP defaults")
	}
	switch strings.ToLower(strings.TrimSpace(c.InterfaceRxMode)) {
	case "", RxModePolling, RxModeInterrupt, RxModeAdaptive:
	default:
		v.fail("interfaceRxMode", c.InterfaceRxMode, "is not one of %s, %s, %s (empty = VPP default)",
			RxModePolling, RxModeInterrupt, RxModeAdaptive)
	}
	if c.MTUSize != 0 && (c.MTUSize < MinMTU || c.MTUSize > MaxMTU) {
		v.fail("mtuSize", c.MTUSize, "is out of range %d..%d (0 = VPP default)", MinMTU, MaxMTU)
	}
}

func (v *validator) checkRouting(c *RoutingConfig) {
	if c.MainVRFID == ReservedVRFID {
		v.fail("mainVRFID", c.MainVRFID, "is reserved by VPP")
	}
	if c.PodVRFID == ReservedVRFID {
		v.fail("podVRFID", c.PodVRFID, "is reserved by VPP")
	}
	if c.MainVRFID == c.PodVRFID && c.PodVRFID != ReservedVRFID {
		v.fail("podVRFID", c.PodVRFID, "is the same as mainVRFID: pods need a VRF of their own")
	}
}

func (v *validator) checkNeighborScan(c *IPNeighborScanConfig) {
	if !c.ScanIPNeighbors {
		return
	}
	if c.IPNeighborScanInterval < 1 {
		v.fail("ipNeighborScanInterval", c.IPNeighborScanInterval, "must be at least 1 (minute) when scanIPNeighbors is on")
	}
	if c.IPNeighborStaleThreshold < 1 {
		v.fail("ipNeighborStaleThreshold", c.IPNeighborStaleThreshold, "must be at least 1 (minute) when scanIPNeighbors is on")
	}
}

// checkSTN checks the STN keys (the per-node stealInterface is checked with its
// nodeConfig entry). Both stealFirstNIC and stealInterface: upstream's contiv-init took
// the named interface without a word (cmd/contiv-init, parseSTNConfig: the node's
// stealInterface, else the global one, else stealFirstNIC's first NIC); here the
// interface wins too, with a warning.
func (v *validator) checkSTN(c *Config) {
	s := &c.STNConfig
	if s.StealInterface != "" {
		v.linkName("stealInterface", s.StealInterface)
		if s.StealFirstNIC {
			v.warn("stealFirstNIC is ignored: stealInterface %q names the NIC to steal", s.StealInterface)
		}
	}
	switch {
	case s.STNVersion > MaxSTNVersion:
		v.fail("stnVersion", s.STNVersion, "is not supported: use 0 or 1 (VPP STN rule)")
	case s.STNVersion == stnVersionPuntRedirect && c.stnRequested():
		v.fail("stnVersion", s.STNVersion, "(upstream's ip-punt-redirect) is not supported: use 0 or 1 (VPP STN rule)")
	case s.STNVersion == stnVersionPuntRedirect:
		v.warn("stnVersion 2 has no effect: no node steals its NIC (stealFirstNIC, stealInterface), and with one it is refused: use 0 or 1")
	}
	if s.STNSocketFile != "" {
		v.warn("stnSocketFile (%q) is deprecated and ignored: contiv-stn and the agent share stnRecordFile instead of upstream's gRPC socket", s.STNSocketFile)
	}
	if !filepath.IsAbs(s.STNRecordFile) || s.STNRecordFile != filepath.Clean(s.STNRecordFile) {
		v.fail("stnRecordFile", s.STNRecordFile, "is not a clean absolute path (contiv-stn's -state-file, default %s)", DefaultSTNRecordFile)
	}
}

// checkServiceRenderer checks serviceRenderer: "nat44" or "cnat" (an empty value,
// from a file that writes the key with no value, is the default).
func (v *validator) checkServiceRenderer(c *Config) {
	switch c.ServiceRenderer {
	case "":
		c.ServiceRenderer = ServiceRendererNAT44
	case ServiceRendererNAT44, ServiceRendererCNAT:
	default:
		v.fail("serviceRenderer", c.ServiceRenderer, "is not a service renderer: use %q (default) or %q",
			ServiceRendererNAT44, ServiceRendererCNAT)
	}
}

// stnVersionPuntRedirect is upstream's stnVersion of ip-punt-redirect, which this port
// does not build.
const stnVersionPuntRedirect = 2

// stnRequested tells whether some node steals its NIC: stealFirstNIC, stealInterface or
// a nodeConfig entry's stealInterface.
func (c *Config) stnRequested() bool {
	if c.StealFirstNIC || c.StealInterface != "" {
		return true
	}
	for _, nc := range c.NodeConfig {
		if nc.StealInterface != "" {
			return true
		}
	}
	return false
}

// linkName fails a key whose value is not a Linux link name.
func (v *validator) linkName(key, name string) {
	if err := stn.CheckLinkName(name); err != nil {
		v.fail(key, name, "%v", err)
	}
}

// cidr parses a network given as a CIDR; it must be in canonical form (no host bits). It
// returns nil after reporting a problem, and nil without one for an empty optional value.
func (v *validator) cidr(key, value string, required bool) *net.IPNet {
	if value == "" && !required {
		return nil
	}
	ip, n, err := net.ParseCIDR(value)
	if err != nil {
		v.fail(key, value, "is not a valid CIDR")
		return nil
	}
	if !ip.Equal(n.IP) {
		v.fail(key, value, "has host bits set: use the network address %q", n.String())
		return nil
	}
	return n
}

// namedRange is a configured network, for the family and overlap checks.
type namedRange struct {
	key   string // key relative to ipamConfig
	value string // as configured
	net   *net.IPNet
}

func (r namedRange) describe() string {
	return fmt.Sprintf("%s %q", r.key, r.value)
}

// checkIPAM validates ipamConfig and derives the effective plan.
func (v *validator) checkIPAM(c *Config) *compiled {
	const p = "ipamConfig."
	j := c.IPAMConfig
	eff := j
	out := &IPAMConfig{
		UseExternalIPAM:      j.UseExternalIPAM,
		NodeInterconnectDHCP: j.NodeInterconnectDHCP,
		FamilyPlan: FamilyPlan{
			PodSubnetOneNodePrefixLen:     j.PodSubnetOneNodePrefixLen,
			VPPHostSubnetOneNodePrefixLen: j.VPPHostSubnetOneNodePrefixLen,
		},
	}
	vxlanUsed := !c.UseNoOverlay && !c.UseSRv6Interconnect
	v6only := ipv6Only(&j) // single-stack IPv6 written in ipamConfig.ipv6 only

	// The ranges in overlap-check order and the one that decides the IP family.
	var ranges []namedRange
	var familyRef *namedRange

	if j.ContivCIDR != "" {
		contiv := v.cidr(p+"contivCIDR", j.ContivCIDR, true)
		if contiv != nil {
			if reason := contivCIDRSizeProblem(contiv); reason != "" {
				v.fail(p+"contivCIDR", j.ContivCIDR, "%s", reason)
				contiv = nil
			}
		}
		v.warnIgnoredWithContivCIDR(j)
		if contiv != nil {
			sub, err := DissectContivCIDR(contiv)
			if err != nil { // cannot happen: the size was checked above
				v.fail(p+"contivCIDR", j.ContivCIDR, "cannot be dissected: %v", err)
			} else {
				out.ContivCIDR = contiv
				out.PodSubnetCIDR, out.PodSubnetOneNodePrefixLen = sub.PodSubnetCIDR, sub.PodSubnetOneNodePrefixLen
				out.VPPHostSubnetCIDR, out.VPPHostSubnetOneNodePrefixLen = sub.VPPHostSubnetCIDR, sub.VPPHostSubnetOneNodePrefixLen
				out.VxlanCIDR = sub.VxlanCIDR
				if j.NodeInterconnectCIDR == "" && !j.NodeInterconnectDHCP {
					out.NodeInterconnectCIDR = sub.NodeInterconnectCIDR
				}
				r := namedRange{key: "contivCIDR", value: j.ContivCIDR, net: contiv}
				familyRef = &r
				ranges = append(ranges, r)
			}
		}
	} else if !v6only {
		out.PodSubnetCIDR = v.cidr(p+"podSubnetCIDR", j.PodSubnetCIDR, true)
		out.VPPHostSubnetCIDR = v.cidr(p+"vppHostSubnetCIDR", j.VPPHostSubnetCIDR, true)
		if j.VxlanCIDR == "" && vxlanUsed {
			v.fail(p+"vxlanCIDR", j.VxlanCIDR, "must be set for the VXLAN overlay (useNoOverlay and useSRv6Interconnect are off)")
		} else {
			out.VxlanCIDR = v.cidr(p+"vxlanCIDR", j.VxlanCIDR, false)
		}
		if out.PodSubnetCIDR != nil {
			r := namedRange{key: "podSubnetCIDR", value: j.PodSubnetCIDR, net: out.PodSubnetCIDR}
			familyRef = &r
		}
		v.checkOneNodePrefix(p+"podSubnetOneNodePrefixLen", j.PodSubnetOneNodePrefixLen,
			"podSubnetCIDR", out.PodSubnetCIDR, podSubnetMinHostBits,
			"leaves no room for the gateway (.1), the NAT loopback (last but one) and a pod")
		v.checkOneNodePrefix(p+"vppHostSubnetOneNodePrefixLen", j.VPPHostSubnetOneNodePrefixLen,
			"vppHostSubnetCIDR", out.VPPHostSubnetCIDR, vppHostMinHostBits,
			"cannot hold the VPP (.1) and host (.2) addresses")
		ranges = append(ranges,
			namedRange{key: "podSubnetCIDR", value: j.PodSubnetCIDR, net: out.PodSubnetCIDR},
			namedRange{key: "vppHostSubnetCIDR", value: j.VPPHostSubnetCIDR, net: out.VPPHostSubnetCIDR})
	}
	if j.NodeInterconnectCIDR != "" {
		out.NodeInterconnectCIDR = v.cidr(p+"nodeInterconnectCIDR", j.NodeInterconnectCIDR, false)
	}
	if v6only {
		v.checkIPv6OnlyLeftovers(&j)
	} else {
		out.ServiceCIDR = v.cidr(p+"serviceCIDR", j.ServiceCIDR, true)
		ranges = append(ranges, namedRange{key: "serviceCIDR", value: j.ServiceCIDR, net: out.ServiceCIDR})
	}
	if j.ContivCIDR == "" && !v6only {
		ranges = append(ranges, namedRange{key: "vxlanCIDR", value: j.VxlanCIDR, net: out.VxlanCIDR})
	}
	if j.NodeInterconnectCIDR != "" {
		ranges = append(ranges, namedRange{key: "nodeInterconnectCIDR", value: j.NodeInterconnectCIDR, net: out.NodeInterconnectCIDR})
	}

	// Every range is of the family of the pod subnet (or contivCIDR).
	if familyRef != nil {
		for i := range ranges {
			r := &ranges[i]
			if r.net == nil || r.key == familyRef.key {
				continue
			}
			if family(r.net) != family(familyRef.net) {
				v.fail(p+r.key, r.value, "is %s, but %s is %s", family(r.net), familyRef.describe(), family(familyRef.net))
				r.net = nil
			}
		}
	}
	// The IPv6 plan (ipamConfig.ipv6): beside the IPv4 one, or the only one.
	var v6 *FamilyPlan
	var eff6 *IPv6ConfigForJSON
	if j.IPv6 != nil {
		var v6ranges []namedRange
		v6, eff6, v6ranges = v.checkIPv6Plan(j.IPv6, vxlanUsed)
		ranges = append(ranges, v6ranges...)
		if v6only && v6.PodSubnetCIDR != nil {
			familyRef = &namedRange{key: "ipv6.podSubnetCIDR", value: j.IPv6.PodSubnetCIDR, net: v6.PodSubnetCIDR}
		}
	}
	v.checkOverlaps(ranges)

	if j.DefaultGateway != "" {
		gw := net.ParseIP(strings.TrimSpace(j.DefaultGateway))
		switch {
		case gw == nil:
			v.fail(p+"defaultGateway", j.DefaultGateway, "is not a valid IP address")
		case familyRef != nil && ipFamily(gw) != family(familyRef.net):
			v.fail(p+"defaultGateway", j.DefaultGateway, "is %s, but %s is %s",
				ipFamily(gw), familyRef.describe(), family(familyRef.net))
		default:
			out.DefaultGateway = normalizeIP(gw)
		}
	}

	v.checkSRv6(&j.SRv6, &out.SRv6)
	if v6 != nil && !v6only {
		v.checkDualStack(&j, out.Primary(), v6, familyRef)
		out.DualStackIPv6 = v6
	}

	eff.PodSubnetCIDR = ipNetString(out.PodSubnetCIDR)
	eff.PodSubnetOneNodePrefixLen = out.PodSubnetOneNodePrefixLen
	eff.VPPHostSubnetCIDR = ipNetString(out.VPPHostSubnetCIDR)
	eff.VPPHostSubnetOneNodePrefixLen = out.VPPHostSubnetOneNodePrefixLen
	eff.NodeInterconnectCIDR = ipNetString(out.NodeInterconnectCIDR)
	eff.VxlanCIDR = ipNetString(out.VxlanCIDR)
	eff.ServiceCIDR = ipNetString(out.ServiceCIDR)
	eff.ContivCIDR = ipNetString(out.ContivCIDR)
	eff.DefaultGateway = ipString(out.DefaultGateway)
	s := &out.SRv6
	eff.SRv6 = SRv6ConfigForJSON{
		ServicePolicyBSIDSubnetCIDR:       ipNetString(s.ServicePolicyBSIDSubnetCIDR),
		ServicePodLocalSIDSubnetCIDR:      ipNetString(s.ServicePodLocalSIDSubnetCIDR),
		ServiceHostLocalSIDSubnetCIDR:     ipNetString(s.ServiceHostLocalSIDSubnetCIDR),
		ServiceNodeLocalSIDSubnetCIDR:     ipNetString(s.ServiceNodeLocalSIDSubnetCIDR),
		NodeToNodePodLocalSIDSubnetCIDR:   ipNetString(s.NodeToNodePodLocalSIDSubnetCIDR),
		NodeToNodeHostLocalSIDSubnetCIDR:  ipNetString(s.NodeToNodeHostLocalSIDSubnetCIDR),
		NodeToNodePodPolicySIDSubnetCIDR:  ipNetString(s.NodeToNodePodPolicySIDSubnetCIDR),
		NodeToNodeHostPolicySIDSubnetCIDR: ipNetString(s.NodeToNodeHostPolicySIDSubnetCIDR),
	}
	eff.IPv6 = eff6
	if v6only { // after eff: the effective JSON shows the plan under ipv6 only
		out.setPrimary(v6)
	}
	return &compiled{ipam: out, ipamJSON: &eff}
}

// warnIgnoredWithContivCIDR warns about custom subnets that contivCIDR overrides.
func (v *validator) warnIgnoredWithContivCIDR(j IPAMConfigForJSON) {
	d := DefaultConfig().IPAMConfig
	for _, f := range []struct {
		key           string
		value, defVal any
	}{
		{"podSubnetCIDR", j.PodSubnetCIDR, d.PodSubnetCIDR},
		{"podSubnetOneNodePrefixLen", j.PodSubnetOneNodePrefixLen, d.PodSubnetOneNodePrefixLen},
		{"vppHostSubnetCIDR", j.VPPHostSubnetCIDR, d.VPPHostSubnetCIDR},
		{"vppHostSubnetOneNodePrefixLen", j.VPPHostSubnetOneNodePrefixLen, d.VPPHostSubnetOneNodePrefixLen},
		{"vxlanCIDR", j.VxlanCIDR, d.VxlanCIDR},
	} {
		if f.value != f.defVal {
			v.warn("ipamConfig.%s (%v) is ignored: ipamConfig.contivCIDR is set and decides it", f.key, f.value)
		}
	}
}

// checkOneNodePrefix checks the per-node prefix length carved from a cluster range.
func (v *validator) checkOneNodePrefix(key string, plen uint8, clusterKey string, cluster *net.IPNet,
	minHostBits int, noRoom string) {
	if cluster == nil {
		return
	}
	bits := addrBits(cluster)
	switch {
	case int(plen) <= prefixLen(cluster):
		v.fail(key, plen, "is not longer than %s /%d", clusterKey, prefixLen(cluster))
	case int(plen) > bits:
		v.fail(key, plen, "is longer than an %s address (%d bits)", family(cluster), bits)
	case bits-int(plen) < minHostBits:
		v.fail(key, plen, "%s: %s needs at most /%d", noRoom, family(cluster), bits-minHostBits)
	}
}

// checkSRv6 parses the SRv6 prefixes, which must be IPv6.
func (v *validator) checkSRv6(j *SRv6ConfigForJSON, out *SRv6Config) {
	const p = "ipamConfig.srv6."
	for _, f := range []struct {
		key   string
		value string
		dst   **net.IPNet
	}{
		{"servicePolicyBSIDSubnetCIDR", j.ServicePolicyBSIDSubnetCIDR, &out.ServicePolicyBSIDSubnetCIDR},
		{"servicePodLocalSIDSubnetCIDR", j.ServicePodLocalSIDSubnetCIDR, &out.ServicePodLocalSIDSubnetCIDR},
		{"serviceHostLocalSIDSubnetCIDR", j.ServiceHostLocalSIDSubnetCIDR, &out.ServiceHostLocalSIDSubnetCIDR},
		{"serviceNodeLocalSIDSubnetCIDR", j.ServiceNodeLocalSIDSubnetCIDR, &out.ServiceNodeLocalSIDSubnetCIDR},
		{"nodeToNodePodLocalSIDSubnetCIDR", j.NodeToNodePodLocalSIDSubnetCIDR, &out.NodeToNodePodLocalSIDSubnetCIDR},
		{"nodeToNodeHostLocalSIDSubnetCIDR", j.NodeToNodeHostLocalSIDSubnetCIDR, &out.NodeToNodeHostLocalSIDSubnetCIDR},
		{"nodeToNodePodPolicySIDSubnetCIDR", j.NodeToNodePodPolicySIDSubnetCIDR, &out.NodeToNodePodPolicySIDSubnetCIDR},
		{"nodeToNodeHostPolicySIDSubnetCIDR", j.NodeToNodeHostPolicySIDSubnetCIDR, &out.NodeToNodeHostPolicySIDSubnetCIDR},
	} {
		n := v.cidr(p+f.key, f.value, true)
		if n != nil && family(n) != "IPv6" {
			v.fail(p+f.key, f.value, "is not an IPv6 CIDR")
			n = nil
		}
		*f.dst = n
	}
}

// checkNodeConfig checks the per-node entries.
func (v *validator) checkNodeConfig(entries []NodeConfig) {
	seen := make(map[string]int)
	for i, nc := range entries {
		prefix := fmt.Sprintf("nodeConfig[#%d]", i)
		if nc.NodeName == "" {
			v.fail(prefix+".nodeName", nc.NodeName, "is empty: every nodeConfig entry needs the name of its node")
		} else if first, dup := seen[nc.NodeName]; dup {
			v.fail(prefix+".nodeName", nc.NodeName, "is already used by nodeConfig[#%d]", first)
		} else {
			seen[nc.NodeName] = i
			prefix = "nodeConfig[" + nc.NodeName + "]"
		}

		main := nc.MainVPPInterface
		if main.IP != "" {
			if _, _, err := net.ParseCIDR(main.IP); err != nil {
				v.fail(prefix+".mainVPPInterface.ip", main.IP, "is not a valid CIDR")
			}
			if main.InterfaceName == "" {
				v.fail(prefix+".mainVPPInterface.interfaceName", main.InterfaceName,
					"must be set when mainVPPInterface.ip is given")
			}
		}

		others := make(map[string]bool)
		for k, o := range nc.OtherVPPInterfaces {
			pos := fmt.Sprintf("%s.otherVPPInterfaces[#%d]", prefix, k)
			ref := pos
			switch {
			case o.InterfaceName == "":
				v.fail(pos+".interfaceName", o.InterfaceName, "is empty: every other VPP interface needs a name")
			case o.InterfaceName == main.InterfaceName:
				v.fail(pos+".interfaceName", o.InterfaceName, "is the mainVPPInterface")
			case others[o.InterfaceName]:
				v.fail(pos+".interfaceName", o.InterfaceName, "is listed twice")
			default:
				others[o.InterfaceName] = true
				ref = fmt.Sprintf("%s.otherVPPInterfaces[%s]", prefix, o.InterfaceName)
			}
			if o.IP != "" {
				if _, _, err := net.ParseCIDR(o.IP); err != nil {
					v.fail(ref+".ip", o.IP, "is not a valid CIDR")
				}
			}
		}

		if nc.StealInterface != "" {
			v.linkName(prefix+".stealInterface", nc.StealInterface)
		}
		if nc.Gateway != "" && net.ParseIP(strings.TrimSpace(nc.Gateway)) == nil {
			v.fail(prefix+".gateway", nc.Gateway, "is not a valid IP address")
		}
	}
}

// checkNodeIPSource reports a node whose VPP IP address would come from nowhere: without
// ipamConfig.nodeInterconnectCIDR (or the contivCIDR it derives from), DHCP, a stolen NIC
// or a static IP in the node's nodeConfig entry, the agent could not address the node
// and failed only later, at every start ("nodeInterconnectCIDR is not configured").
// The error is a FieldError on ipamConfig.nodeInterconnectCIDR naming every key that
// would provide the address.
func (c *Config) checkNodeIPSource(nodeName string, ipam *IPAMConfig) error {
	nc := c.nodeConfigFor(nodeName)
	if nc == nil {
		nc = &NodeConfig{}
	}
	switch {
	case ipam.NodeInterconnectCIDR != nil, ipam.NodeInterconnectDHCP,
		nc.MainVPPInterface.IP != "", nc.MainVPPInterface.UseDHCP,
		c.StealFirstNIC, c.StealInterface != "", nc.StealInterface != "":
		return nil
	}
	return &FieldError{Key: "ipamConfig.nodeInterconnectCIDR", Value: c.IPAMConfig.NodeInterconnectCIDR, Reason: fmt.Sprintf(
		"is not set and node %s has no other source of its IP: set ipamConfig.nodeInterconnectCIDR, "+
			"ipamConfig.nodeInterconnectDHCP: true, ipamConfig.contivCIDR, stealFirstNIC/stealInterface, "+
			"or nodeConfig[%s].mainVPPInterface.ip (or .useDHCP)", nodeName, nodeName)}
}

// ValidateForNode is Validate plus the checks that depend on the node the agent runs
// on: that the node's IP address has a source (see the error of a missing
// ipamConfig.nodeInterconnectCIDR). contiv-init and the plugin's Init run it.
func (c *Config) ValidateForNode(nodeName string) error {
	comp, _, err := c.compile()
	if err != nil {
		return err
	}
	return c.checkNodeIPSource(nodeName, comp.ipam)
}
