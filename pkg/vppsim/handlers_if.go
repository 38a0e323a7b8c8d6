package vppsim

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"strings"

	"go.fd.io/govpp/binapi/af_packet"
	"go.fd.io/govpp/binapi/ethernet_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/tapv2"
	"go.fd.io/govpp/binapi/vxlan"
)

func registerInterfaces(r *registry) {
	on(r, hCreateLoopback)
	on(r, hCreateLoopbackInstance)
	on(r, hDeleteLoopback)
	on(r, hTapCreateV3)
	on(r, hTapCreateV2)
	on(r, hTapDeleteV2)
	on(r, hSwInterfaceTapV2Dump)
	on(r, hAfPacketCreate)
	on(r, hAfPacketCreateV2)
	on(r, hAfPacketCreateV3)
	on(r, hAfPacketDelete)
	on(r, hAfPacketDump)
	on(r, hVxlanAddDelTunnel)
	on(r, hVxlanAddDelTunnelV2)
	on(r, hVxlanAddDelTunnelV3)
	on(r, hVxlanTunnelDump)
	on(r, hVxlanTunnelV2Dump)
	on(r, hSwInterfaceSetFlags)
	on(r, hSwInterfaceAddDelAddress)
	on(r, hSwInterfaceSetTable)
	on(r, hSwInterfaceGetTable)
	on(r, hSwInterfaceSetUnnumbered)
	on(r, hSwInterfaceSetMacAddress)
	on(r, hSwInterfaceSetMtu)
	on(r, hHwInterfaceSetMtu)
	on(r, hSwInterfaceSetRxMode)
	on(r, hSwInterfaceTagAddDel)
	on(r, hSwInterfaceDump)
	on(r, hSwInterfaceClearStats)
}

// randomMAC returns a random locally administered unicast MAC with VPP's
// 02:fe prefix.
func randomMAC() [6]byte {
	v := rand.Uint32()
	return [6]byte{0x02, 0xfe, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

func isZeroMAC(m [6]byte) bool { return m == [6]byte{} }

// --- loopback ---

func hCreateLoopback(cl *call, m *interfaces.CreateLoopback) {
	sw, rv := cl.st.createLoopback(cl, m.MacAddress, false, 0)
	cl.send(&interfaces.CreateLoopbackReply{Retval: rv, SwIfIndex: sw})
}

func hCreateLoopbackInstance(cl *call, m *interfaces.CreateLoopbackInstance) {
	sw, rv := cl.st.createLoopback(cl, m.MacAddress, m.IsSpecified, m.UserInstance)
	cl.send(&interfaces.CreateLoopbackInstanceReply{Retval: rv, SwIfIndex: sw})
}

// createLoopback creates "loop<instance>". Like VPP it takes the lowest
// free instance unless one is specified, and derives the MAC
// de:ad:00:00:00:<instance> when none is given.
func (st *state) createLoopback(cl *call, mac ethernet_types.MacAddress, specified bool, want uint32) (interface_types.InterfaceIndex, int32) {
	inst := want
	if specified {
		if st.loopInst[inst] {
			return interface_types.InterfaceIndex(noIndex), retvalInvalidRegistration
		}
	} else {
		inst = 0
		for st.loopInst[inst] {
			inst++
		}
	}
	name := "loop" + utoa(inst)
	if st.byName[name] != nil {
		return interface_types.InterfaceIndex(noIndex), retvalInvalidRegistration
	}
	i := st.newIface(name, kindLoopback)
	i.loopInstance = inst
	i.mac = [6]byte(mac)
	if isZeroMAC(i.mac) {
		i.mac = [6]byte{0xde, 0xad, 0, 0, byte(inst >> 8), byte(inst)}
	}
	st.loopInst[inst] = true
	st.ifEvent(cl, i, false)
	return interface_types.InterfaceIndex(i.idx), retvalOK
}

func hDeleteLoopback(cl *call, m *interfaces.DeleteLoopback) {
	st := cl.st
	rv := retvalOK
	if i := st.iface(m.SwIfIndex); i == nil || i.kind != kindLoopback {
		rv = retvalInvalidSwIfIndex
	} else {
		delete(st.loopInst, i.loopInstance)
		st.deleteIface(cl, i)
	}
	cl.send(&interfaces.DeleteLoopbackReply{Retval: rv})
}

// --- TAP v2 ---

// tapArgs are the parameters common to tap_create_v2 and tap_create_v3.
type tapArgs struct {
	id                     uint32
	useRandomMAC           bool
	mac                    [6]byte
	numRx, numTx           uint16
	txRing, rxRing         uint16
	hostMTUSet             bool
	hostMTU                uint32
	hostMACSet             bool
	hostMAC                [6]byte
	hostIP4Set, hostIP6Set bool
	hostIP4                ip_types.IP4AddressWithPrefix
	hostIP6                ip_types.IP6AddressWithPrefix
	hostIP4GWSet           bool
	hostIP4GW              ip_types.IP4Address
	hostIP6GWSet           bool
	hostIP6GW              ip_types.IP6Address
	flags                  tapv2.TapFlags
	strs                   tapStrFields // host namespace, name, bridge
	tag                    string
}

const (
	defaultTapRing = 256
	maxTapRing     = 32768
	// linuxIfNameMax is IFNAMSIZ-1, the longest Linux interface name.
	linuxIfNameMax = 15
)

func hTapCreateV3(cl *call, m *tapv2.TapCreateV3) {
	sw, rv := cl.st.createTap(cl, tapArgs{
		id: m.ID, useRandomMAC: m.UseRandomMac, mac: m.MacAddress,
		numRx: m.NumRxQueues, numTx: m.NumTxQueues, txRing: m.TxRingSz, rxRing: m.RxRingSz,
		hostMTUSet: m.HostMtuSet, hostMTU: m.HostMtuSize, hostMACSet: m.HostMacAddrSet, hostMAC: m.HostMacAddr,
		hostIP4Set: m.HostIP4PrefixSet, hostIP4: m.HostIP4Prefix, hostIP6Set: m.HostIP6PrefixSet, hostIP6: m.HostIP6Prefix,
		hostIP4GWSet: m.HostIP4GwSet, hostIP4GW: m.HostIP4Gw, hostIP6GWSet: m.HostIP6GwSet, hostIP6GW: m.HostIP6Gw,
		flags: m.TapFlags, strs: tapStrFields{nsSet: m.HostNamespaceSet, ns: m.HostNamespace,
			ifNameSet: m.HostIfNameSet, ifName: m.HostIfName, bridgeSet: m.HostBridgeSet, bridge: m.HostBridge, tag: m.Tag},
		tag: m.Tag,
	})
	cl.send(&tapv2.TapCreateV3Reply{Retval: rv, SwIfIndex: sw})
}

func hTapCreateV2(cl *call, m *tapv2.TapCreateV2) {
	sw, rv := cl.st.createTap(cl, tapArgs{
		id: m.ID, useRandomMAC: m.UseRandomMac, mac: m.MacAddress,
		numRx: uint16(m.NumRxQueues), numTx: 1, txRing: m.TxRingSz, rxRing: m.RxRingSz,
		hostMTUSet: m.HostMtuSet, hostMTU: m.HostMtuSize, hostMACSet: m.HostMacAddrSet, hostMAC: m.HostMacAddr,
		hostIP4Set: m.HostIP4PrefixSet, hostIP4: m.HostIP4Prefix, hostIP6Set: m.HostIP6PrefixSet, hostIP6: m.HostIP6Prefix,
		hostIP4GWSet: m.HostIP4GwSet, hostIP4GW: m.HostIP4Gw, hostIP6GWSet: m.HostIP6GwSet, hostIP6GW: m.HostIP6Gw,
		flags: m.TapFlags, strs: tapStrFields{nsSet: m.HostNamespaceSet, ns: m.HostNamespace,
			ifNameSet: m.HostIfNameSet, ifName: m.HostIfName, bridgeSet: m.HostBridgeSet, bridge: m.HostBridge, tag: m.Tag},
		tag: m.Tag,
	})
	cl.send(&tapv2.TapCreateV2Reply{Retval: rv, SwIfIndex: sw})
}

func validRing(n uint16) bool { return n <= maxTapRing && bits.OnesCount16(n) <= 1 }

// createTap creates a virtio TAP interface "tap<id>" (or "tun<id>"), with
// the checks of VPP's tap_create_if.
func (st *state) createTap(cl *call, a tapArgs) (interface_types.InterfaceIndex, int32) {
	fail := interface_types.InterfaceIndex(noIndex)
	id := a.id
	if id != noIndex {
		if st.tapIDs[id] {
			return fail, retvalInvalidInterface // "interface already exists"
		}
	} else {
		id = 0
		for st.tapIDs[id] {
			id++
		}
	}
	if a.rxRing == 0 {
		a.rxRing = defaultTapRing
	}
	if a.txRing == 0 {
		a.txRing = defaultTapRing
	}
	if !validRing(a.rxRing) || !validRing(a.txRing) {
		return fail, retvalInvalidValue // ring size must be a power of 2 up to 32768
	}
	a.numRx = max(a.numRx, 1)
	a.numTx = max(a.numTx, 1)
	tun := a.flags&tapv2.TAP_API_FLAG_TUN != 0
	prefix := "tap"
	if tun {
		prefix = "tun"
	}
	name := prefix + utoa(id)
	if st.byName[name] != nil {
		return fail, retvalInvalidInterface
	}
	t := &tapInfo{
		id: id, flags: a.flags, rxRing: a.rxRing, txRing: a.txRing, numRx: a.numRx, numTx: a.numTx,
		hostIfName: name,
	}
	// The strings as VPP's handler reads them (tapstrings.go).
	hostNS, hostIfName, hostBridge := a.strs.vppView()
	if a.strs.ifNameSet && hostIfName != "" {
		t.hostIfName = hostIfName
	}
	// VPP sets no limit: tap.c copies the name into ifr_name (16 bytes,
	// no NUL when longer) and the kernel's TUNSETIFF ends it at byte 15,
	// so the Linux interface gets the first 15 bytes while VPP keeps (and
	// dumps, cut at 63) the name it was given.
	kname := kernelIfName(t.hostIfName)
	if a.strs.nsSet {
		t.hostNS = hostNS
	}
	if a.strs.bridgeSet {
		t.hostBridge = hostBridge
	}
	for _, other := range st.ifaces {
		if other.tap != nil && kernelIfName(other.tap.hostIfName) == kname && other.tap.hostNS == t.hostNS {
			return fail, retvalSyscallError3 // TUNSETIFF: device busy
		}
	}
	if a.hostMTUSet {
		if a.hostMTU < 68 || a.hostMTU > 65535 {
			return fail, retvalSyscallError3 // netlink rejects the MTU
		}
		t.hostMTU = a.hostMTU
	}
	t.hostMAC = randomMAC()
	if a.hostMACSet {
		t.hostMAC = a.hostMAC
	}
	if a.hostIP4Set {
		if a.hostIP4.Len > 32 {
			return fail, retvalSyscallError3
		}
		t.hostIP4 = netip.PrefixFrom(netip.AddrFrom4(a.hostIP4.Address), int(a.hostIP4.Len))
	}
	if a.hostIP6Set {
		if a.hostIP6.Len > 128 {
			return fail, retvalSyscallError3
		}
		t.hostIP6 = netip.PrefixFrom(netip.AddrFrom16(a.hostIP6.Address), int(a.hostIP6.Len))
	}
	if a.hostIP4GWSet {
		t.hostIP4GW = netip.AddrFrom4(a.hostIP4GW)
	}
	if a.hostIP6GWSet {
		t.hostIP6GW = netip.AddrFrom16(a.hostIP6GW)
	}
	if h := st.s.host; h != nil {
		ht, err := h.createTap(hostTapConfig{
			name: kname, ns: t.hostNS, tun: tun, mac: t.hostMAC, mtu: t.hostMTU,
			ip4: t.hostIP4, ip6: t.hostIP6, gw4: t.hostIP4GW, gw6: t.hostIP6GW, bridge: t.hostBridge,
		})
		if err != nil {
			st.s.log.WithError(err).WithField("host_if_name", t.hostIfName).Warn("tap_create: Linux side failed")
			var he *hostError
			if errors.As(err, &he) {
				return fail, he.retval
			}
			return fail, retvalSyscallError3
		}
		t.host = ht
	}
	i := st.newIface(name, kindTap)
	i.tap = t
	i.rxQueues = uint32(a.numRx)
	if !tun {
		// Without use_random_mac VPP takes mac_address as given, zero
		// included (tapv2_api.c sets mac_addr_set; tap.c generates only
		// when it is not set).
		i.mac = a.mac
		if a.useRandomMAC {
			i.mac = randomMAC()
		}
	}
	if a.tag != "" {
		i.tag = truncTag(a.tag)
	}
	if t.host != nil && !tun {
		// The simulator owns the device: frames move through its fd.
		st.s.attachTap(i, t.host)
	}
	st.tapIDs[id] = true
	st.ifEvent(cl, i, false)
	return interface_types.InterfaceIndex(i.idx), retvalOK
}

// truncTag cuts a tag to the 63 characters VPP keeps.
func truncTag(tag string) string {
	if len(tag) > 63 {
		return tag[:63]
	}
	return tag
}

// kernelIfName is the name Linux gives a TUN/TAP device asked for as
// name: at most IFNAMSIZ-1 bytes.
func kernelIfName(name string) string {
	if len(name) > linuxIfNameMax {
		return name[:linuxIfNameMax]
	}
	return name
}

func hTapDeleteV2(cl *call, m *tapv2.TapDeleteV2) {
	st := cl.st
	rv := retvalOK
	if i := st.iface(m.SwIfIndex); i == nil || i.kind != kindTap {
		rv = retvalInvalidSwIfIndex
	} else {
		if i.tap.host != nil {
			if err := i.tap.host.Close(); err != nil {
				st.s.log.WithError(err).WithField("host_if_name", i.tap.hostIfName).Warn("tap_delete: cannot remove Linux side")
			}
		}
		delete(st.tapIDs, i.tap.id)
		st.deleteIface(cl, i)
	}
	cl.send(&tapv2.TapDeleteV2Reply{Retval: rv})
}

func hSwInterfaceTapV2Dump(cl *call, m *tapv2.SwInterfaceTapV2Dump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.tap == nil || (uint32(m.SwIfIndex) != noIndex && uint32(m.SwIfIndex) != i.idx) {
			continue
		}
		t := i.tap
		d := &tapv2.SwInterfaceTapV2Details{
			SwIfIndex:     i.idx,
			ID:            t.id,
			TxRingSz:      t.txRing,
			RxRingSz:      t.rxRing,
			HostMtuSize:   t.hostMTU,
			HostMacAddr:   t.hostMAC,
			TapFlags:      t.flags,
			DevName:       i.name,
			HostIfName:    dumpString(t.hostIfName),
			HostNamespace: dumpString(t.hostNS),
			HostBridge:    dumpString(t.hostBridge),
		}
		if t.hostIP4.IsValid() {
			d.HostIP4Prefix = ip_types.IP4AddressWithPrefix{Address: t.hostIP4.Addr().As4(), Len: uint8(t.hostIP4.Bits())}
		}
		if t.hostIP6.IsValid() {
			d.HostIP6Prefix = ip_types.IP6AddressWithPrefix{Address: t.hostIP6.Addr().As16(), Len: uint8(t.hostIP6.Bits())}
		}
		cl.send(d)
	}
}

// --- af_packet ---

func hAfPacketCreate(cl *call, m *af_packet.AfPacketCreate) {
	sw, rv := cl.st.createAfPacket(cl, m.HostIfName, m.HwAddr, m.UseRandomHwAddr, 1)
	cl.send(&af_packet.AfPacketCreateReply{Retval: rv, SwIfIndex: sw})
}

func hAfPacketCreateV2(cl *call, m *af_packet.AfPacketCreateV2) {
	sw, rv := cl.st.createAfPacket(cl, m.HostIfName, m.HwAddr, m.UseRandomHwAddr, m.NumRxQueues)
	cl.send(&af_packet.AfPacketCreateV2Reply{Retval: rv, SwIfIndex: sw})
}

func hAfPacketCreateV3(cl *call, m *af_packet.AfPacketCreateV3) {
	var sw interface_types.InterfaceIndex
	rv := retvalOK
	if m.Mode != af_packet.AF_PACKET_API_MODE_ETHERNET && m.Mode != af_packet.AF_PACKET_API_MODE_IP {
		sw, rv = interface_types.InterfaceIndex(noIndex), retvalInvalidValue
	} else {
		sw, rv = cl.st.createAfPacket(cl, m.HostIfName, m.HwAddr, m.UseRandomHwAddr, m.NumRxQueues)
	}
	cl.send(&af_packet.AfPacketCreateV3Reply{Retval: rv, SwIfIndex: sw})
}

// createAfPacket creates "host-<host_if_name>" bound to a Linux interface.
// In Linux mode the Linux interface must exist in the simulator's network
// namespace, as VPP's raw socket needs it.
func (st *state) createAfPacket(cl *call, hostIfName string, mac ethernet_types.MacAddress, random bool, numRx uint16) (interface_types.InterfaceIndex, int32) {
	if hostIfName == "" || len(hostIfName) > linuxIfNameMax {
		return interface_types.InterfaceIndex(noIndex), retvalInvalidInterface
	}
	if sw, ok := st.afpHosts[hostIfName]; ok {
		return interface_types.InterfaceIndex(sw), retvalIfAlreadyExists
	}
	// The VPP-side MAC is a random 02:fe:... one with use_random_hw_addr,
	// else hw_addr as given - never the veth's own MAC
	// (docs/dev-guide/VPP-FORWARDING.md §6). A zero hw_addr without
	// use_random_hw_addr stays 00:00:00:00:00:00: the API handlers pass
	// af_packet_create_if a pointer to the message's hw_addr array, which
	// is never NULL, so VPP copies it instead of generating one
	// (af_packet_api.c, af_packet.c af_packet_create_if).
	hwAddr := [6]byte(mac)
	if h := st.s.host; h != nil {
		if _, ok := h.interfaceMAC(hostIfName); !ok {
			return interface_types.InterfaceIndex(noIndex), retvalInvalidInterface
		}
	}
	if random {
		hwAddr = randomMAC()
	}
	i := st.newIface("host-"+hostIfName, kindAfPacket)
	i.mac = hwAddr
	if st.s.host != nil {
		if err := st.s.attachRaw(i, hostIfName); err != nil {
			st.s.log.WithError(err).WithField("host_if_name", hostIfName).Warn("af_packet_create: raw socket failed")
			st.deleteIface(nil, i)
			return interface_types.InterfaceIndex(noIndex), retvalSyscallError1
		}
	}
	i.afp = &afPacketInfo{hostIfName: hostIfName, numRx: max(numRx, 1)}
	i.rxQueues = uint32(max(numRx, 1))
	st.afpHosts[hostIfName] = i.idx
	st.ifEvent(cl, i, false)
	return interface_types.InterfaceIndex(i.idx), retvalOK
}

func hAfPacketDelete(cl *call, m *af_packet.AfPacketDelete) {
	st := cl.st
	rv := retvalOK
	if sw, ok := st.afpHosts[m.HostIfName]; !ok {
		rv = retvalSyscallError1 // "Host interface does not exist"
	} else {
		delete(st.afpHosts, m.HostIfName)
		st.deleteIface(cl, st.ifaces[sw])
	}
	cl.send(&af_packet.AfPacketDeleteReply{Retval: rv})
}

func hAfPacketDump(cl *call, _ *af_packet.AfPacketDump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.afp != nil {
			cl.send(&af_packet.AfPacketDetails{SwIfIndex: interface_types.InterfaceIndex(i.idx), HostIfName: i.afp.hostIfName})
		}
	}
}

// --- VXLAN ---

// vxlanArgs are the parameters of the vxlan_add_del_tunnel versions.
type vxlanArgs struct {
	isAdd            bool
	instance         uint32
	src, dst         ip_types.Address
	srcPort, dstPort uint16
	mcastIf          uint32
	encapVRF         uint32
	decapNext        uint32
	vni              uint32
	isL3             bool
}

const vxlanDefaultPort = 4789

func hVxlanAddDelTunnel(cl *call, m *vxlan.VxlanAddDelTunnel) {
	sw, rv := cl.st.vxlanAddDel(cl, vxlanArgs{isAdd: m.IsAdd, instance: m.Instance, src: m.SrcAddress, dst: m.DstAddress,
		mcastIf: uint32(m.McastSwIfIndex), encapVRF: m.EncapVrfID, decapNext: m.DecapNextIndex, vni: m.Vni})
	cl.send(&vxlan.VxlanAddDelTunnelReply{Retval: rv, SwIfIndex: sw})
}

func hVxlanAddDelTunnelV2(cl *call, m *vxlan.VxlanAddDelTunnelV2) {
	sw, rv := cl.st.vxlanAddDel(cl, vxlanArgs{isAdd: m.IsAdd, instance: m.Instance, src: m.SrcAddress, dst: m.DstAddress,
		srcPort: m.SrcPort, dstPort: m.DstPort, mcastIf: uint32(m.McastSwIfIndex), encapVRF: m.EncapVrfID,
		decapNext: m.DecapNextIndex, vni: m.Vni})
	cl.send(&vxlan.VxlanAddDelTunnelV2Reply{Retval: rv, SwIfIndex: sw})
}

func hVxlanAddDelTunnelV3(cl *call, m *vxlan.VxlanAddDelTunnelV3) {
	sw, rv := cl.st.vxlanAddDel(cl, vxlanArgs{isAdd: m.IsAdd, instance: m.Instance, src: m.SrcAddress, dst: m.DstAddress,
		srcPort: m.SrcPort, dstPort: m.DstPort, mcastIf: uint32(m.McastSwIfIndex), encapVRF: m.EncapVrfID,
		decapNext: m.DecapNextIndex, vni: m.Vni, isL3: m.IsL3})
	cl.send(&vxlan.VxlanAddDelTunnelV3Reply{Retval: rv, SwIfIndex: sw})
}

// vxlanAddDel creates or deletes "vxlan_tunnel<instance>". A tunnel is
// identified by source, destination, VNI, encap VRF and destination port.
func (st *state) vxlanAddDel(cl *call, a vxlanArgs) (interface_types.InterfaceIndex, int32) {
	fail := interface_types.InterfaceIndex(noIndex)
	src, ok1 := addrFromAPI(a.src)
	dst, ok2 := addrFromAPI(a.dst)
	if !ok1 || !ok2 || src.Is4() != dst.Is4() {
		return fail, retvalInvalidValue
	}
	if src == dst {
		return fail, retvalSameSrcDst
	}
	if a.srcPort == 0 {
		a.srcPort = vxlanDefaultPort
	}
	if a.dstPort == 0 {
		a.dstPort = vxlanDefaultPort
	}
	v := &vxlanInfo{src: src, dst: dst, srcPort: a.srcPort, dstPort: a.dstPort, mcastIf: a.mcastIf,
		encapVRF: a.encapVRF, decapNext: a.decapNext, vni: a.vni, isL3: a.isL3}
	key := v.key()
	if !a.isAdd {
		sw, ok := st.vxlanKeys[key]
		if !ok {
			return fail, retvalNoSuchEntry
		}
		i := st.ifaces[sw]
		delete(st.vxlanKeys, key)
		delete(st.vxlanInst, i.vxlan.instance)
		st.deleteIface(cl, i)
		return interface_types.InterfaceIndex(sw), retvalOK
	}
	if st.table(!src.Is4(), a.encapVRF) == nil {
		return fail, retvalNoSuchFIB
	}
	if v.vni > 0xffffff {
		return fail, retvalInvalidValue
	}
	if dst.IsMulticast() {
		if st.ifaces[a.mcastIf] == nil {
			return fail, retvalInvalidSwIfIndex
		}
	}
	if v.decapNext == noIndex {
		v.decapNext = 1 // l2-input
	} else if !v.isL3 && v.decapNext > 1 {
		return fail, retvalInvalidDecapNext
	}
	if _, exists := st.vxlanKeys[key]; exists {
		return fail, retvalTunnelExist
	}
	inst := a.instance
	if inst != noIndex {
		if st.vxlanInst[inst] {
			return fail, retvalInstanceInUse
		}
	} else {
		inst = 0
		for st.vxlanInst[inst] {
			inst++
		}
	}
	v.instance = inst
	i := st.newIface("vxlan_tunnel"+utoa(inst), kindVxlan)
	i.vxlan = v
	i.adminUp = true // VPP creates VXLAN tunnels admin-up (docs/dev-guide/VPP-FORWARDING.md §1)
	st.vxlanInst[inst] = true
	st.vxlanKeys[key] = i.idx
	st.ifEvent(cl, i, false)
	return interface_types.InterfaceIndex(i.idx), retvalOK
}

func hVxlanTunnelDump(cl *call, m *vxlan.VxlanTunnelDump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.vxlan == nil || (uint32(m.SwIfIndex) != noIndex && uint32(m.SwIfIndex) != i.idx) {
			continue
		}
		v := i.vxlan
		cl.send(&vxlan.VxlanTunnelDetails{
			SwIfIndex: interface_types.InterfaceIndex(i.idx), Instance: v.instance,
			SrcAddress: addrToAPI(v.src), DstAddress: addrToAPI(v.dst), McastSwIfIndex: interface_types.InterfaceIndex(v.mcastIf),
			EncapVrfID: v.encapVRF, DecapNextIndex: v.decapNext, Vni: v.vni,
		})
	}
}

func hVxlanTunnelV2Dump(cl *call, m *vxlan.VxlanTunnelV2Dump) {
	for _, i := range cl.st.sortedIfaces() {
		if i.vxlan == nil || (uint32(m.SwIfIndex) != noIndex && uint32(m.SwIfIndex) != i.idx) {
			continue
		}
		v := i.vxlan
		cl.send(&vxlan.VxlanTunnelV2Details{
			SwIfIndex: interface_types.InterfaceIndex(i.idx), Instance: v.instance,
			SrcAddress: addrToAPI(v.src), DstAddress: addrToAPI(v.dst), SrcPort: v.srcPort, DstPort: v.dstPort,
			McastSwIfIndex: interface_types.InterfaceIndex(v.mcastIf), EncapVrfID: v.encapVRF,
			DecapNextIndex: v.decapNext, Vni: v.vni,
		})
	}
}

// --- generic interface settings ---

func hSwInterfaceSetFlags(cl *call, m *interfaces.SwInterfaceSetFlags) {
	st := cl.st
	rv := retvalOK
	if i := st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else {
		up := m.Flags&interface_types.IF_STATUS_API_FLAG_ADMIN_UP != 0
		if i.afp != nil && st.s.host != nil {
			// af_packet up/down also sets the host veth up/down.
			if err := st.s.host.setLinkUp(i.afp.hostIfName, up); err != nil {
				st.s.log.WithError(err).Warn("af_packet: cannot set the host interface state")
			}
		}
		if up != i.adminUp {
			i.adminUp = up
			st.ifEvent(cl, i, false)
		}
	}
	cl.send(&interfaces.SwInterfaceSetFlagsReply{Retval: rv})
}

func hSwInterfaceAddDelAddress(cl *call, m *interfaces.SwInterfaceAddDelAddress) {
	cl.send(&interfaces.SwInterfaceAddDelAddressReply{Retval: cl.st.addDelAddress(m)})
}

// addDelAddress follows VPP's ip4/ip6_add_del_interface_address checks:
// an address may not overlap an address of another interface in the same
// table, nor be added twice; a deleted address must exist.
func (st *state) addDelAddress(m *interfaces.SwInterfaceAddDelAddress) int32 {
	i := st.iface(m.SwIfIndex)
	if i == nil {
		return retvalInvalidSwIfIndex
	}
	if m.DelAll {
		// Each IPv6 address deleted releases its lock on the IPv6 link
		// (ip6_forward.c ip6_add_del_interface_address).
		for _, a := range i.addrs {
			if a.Addr().Is6() {
				st.ip6LinkUnlock(i)
			}
		}
		i.addrs = nil
		return retvalOK
	}
	p, ok := prefixFromAPI(ip_types.Prefix(m.Prefix))
	if !ok {
		return retvalInvalidValue
	}
	if p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
		return st.setLinkLocalAddress(i, p, m.IsAdd)
	}
	pos := -1
	for k, a := range i.addrs {
		if a == p {
			pos = k
		}
	}
	if !m.IsAdd {
		if pos < 0 {
			return retvalAddressNotFoundForInterface
		}
		i.addrs = append(i.addrs[:pos], i.addrs[pos+1:]...)
		if p.Addr().Is6() {
			st.ip6LinkUnlock(i)
		}
		return retvalOK
	}
	if pos >= 0 {
		return retvalDuplicateIfAddress
	}
	ipv6 := p.Addr().Is6()
	vrf := i.vrf[afIndex(ipv6)]
	for _, other := range st.ifaces {
		if other.vrf[afIndex(ipv6)] != vrf {
			continue
		}
		for _, x := range other.addrs {
			if x.Addr().Is6() != ipv6 {
				continue
			}
			if !x.Masked().Contains(p.Addr()) && !p.Masked().Contains(x.Addr()) {
				continue
			}
			if other == i && x.Bits() == p.Bits() && x.Addr() != p.Addr() {
				continue // several addresses of one subnet on one interface
			}
			if ipv6 {
				// IPv6 reports the conflict as a duplicate
				// (ip6_forward.c ip6_add_del_interface_address).
				return retvalDuplicateIfAddress
			}
			return retvalAddressInUse
		}
	}
	i.addrs = append(i.addrs, p)
	if ipv6 {
		st.ip6LinkLock(i, netip.Addr{}) // the first global address enables IPv6
	}
	return retvalOK
}

func hSwInterfaceSetTable(cl *call, m *interfaces.SwInterfaceSetTable) {
	cl.send(&interfaces.SwInterfaceSetTableReply{Retval: cl.st.setTable(m.SwIfIndex, m.IsIPv6, m.VrfID)})
}

// setTable binds an interface to a VRF (VPP's ip_table_bind): the table
// must exist, and an interface with addresses (its own or its donor's)
// cannot change table.
func (st *state) setTable(sw interface_types.InterfaceIndex, ipv6 bool, vrf uint32) int32 {
	i := st.iface(sw)
	if i == nil {
		return retvalInvalidSwIfIndex
	}
	t := st.table(ipv6, vrf)
	if t == nil {
		return retvalNoSuchFIB
	}
	af := afIndex(ipv6)
	if i.vrf[af] == vrf {
		return retvalOK
	}
	for _, a := range st.effectiveAddrs(i) {
		if a.Addr().Is6() == ipv6 {
			return retvalAddressFoundForInterface
		}
	}
	st.unlockTableIf(ipv6, i.vrf[af])
	t.ifRefs++
	i.vrf[af] = vrf
	return retvalOK
}

func hSwInterfaceGetTable(cl *call, m *interfaces.SwInterfaceGetTable) {
	rep := &interfaces.SwInterfaceGetTableReply{}
	if i := cl.st.iface(m.SwIfIndex); i == nil {
		rep.Retval = retvalInvalidSwIfIndex
	} else {
		rep.VrfID = i.vrf[afIndex(m.IsIPv6)]
	}
	cl.send(rep)
}

func hSwInterfaceSetUnnumbered(cl *call, m *interfaces.SwInterfaceSetUnnumbered) {
	st := cl.st
	rv := retvalOK
	// The field names are backwards: sw_if_index is the interface lending
	// its address, unnumbered_sw_if_index the one borrowing it.
	un := st.iface(m.UnnumberedSwIfIndex)
	donor := st.iface(m.SwIfIndex)
	switch {
	case un == nil:
		rv = retvalInvalidSwIfIndex2
	case m.IsAdd && donor == nil:
		rv = retvalInvalidSwIfIndex
	case m.IsAdd && un.vrf != donor.vrf:
		// VPP 25.10 src/vnet/interface.c vnet_sw_interface_check_table_same:
		// both interfaces must share the IPv4 and the IPv6 FIB (and mFIB,
		// which a table ID names together with its FIB here), checked on
		// every enable, never on disable.
		rv = retvalUnexpectedIntfState
	case m.IsAdd:
		un.unnumOf = donor.idx
	default:
		un.unnumOf = noIndex
	}
	cl.send(&interfaces.SwInterfaceSetUnnumberedReply{Retval: rv})
}

func hSwInterfaceSetMacAddress(cl *call, m *interfaces.SwInterfaceSetMacAddress) {
	rv := retvalOK
	if i := cl.st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else if !i.kind.ethernet() || (i.tap != nil && i.tap.flags&tapv2.TAP_API_FLAG_TUN != 0) {
		rv = retvalUnimplemented // VPP maps a failed MAC change to UNIMPLEMENTED
	} else {
		if i.l2 != nil && i.l2.portType == l2.L2_API_PORT_TYPE_BVI {
			// The BVI's L2 FIB entry follows its MAC.
			old := l2fibKey{bd: i.l2.bd, mac: i.mac}
			if e := cl.st.l2fib[old]; e != nil && e.bvi {
				delete(cl.st.l2fib, old)
				cl.st.l2fib[l2fibKey{bd: i.l2.bd, mac: m.MacAddress}] = e
			}
		}
		i.mac = m.MacAddress
	}
	cl.send(&interfaces.SwInterfaceSetMacAddressReply{Retval: rv})
}

func hSwInterfaceSetMtu(cl *call, m *interfaces.SwInterfaceSetMtu) {
	rv := retvalOK
	if i := cl.st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else {
		for k := range i.mtu {
			i.mtu[k] = 0
			if k < len(m.Mtu) {
				i.mtu[k] = m.Mtu[k]
			}
		}
	}
	cl.send(&interfaces.SwInterfaceSetMtuReply{Retval: rv})
}

func hHwInterfaceSetMtu(cl *call, m *interfaces.HwInterfaceSetMtu) {
	rv := retvalOK
	if i := cl.st.iface(m.SwIfIndex); i == nil {
		rv = retvalInvalidSwIfIndex
	} else if !i.kind.ethernet() {
		rv = retvalFeatureDisabled
	} else if m.Mtu < minLinkMTU || m.Mtu > maxLinkMTU {
		rv = retvalInvalidValue
	} else {
		i.linkMTU = uint32(m.Mtu)
		i.mtu[0] = uint32(m.Mtu)
	}
	cl.send(&interfaces.HwInterfaceSetMtuReply{Retval: rv})
}

func hSwInterfaceSetRxMode(cl *call, m *interfaces.SwInterfaceSetRxMode) {
	rv := retvalOK
	i := cl.st.iface(m.SwIfIndex)
	switch {
	case i == nil:
		rv = retvalInvalidSwIfIndex
	case i.rxQueues == 0, // "Interface has no RX queues"
		m.Mode == interface_types.RX_MODE_API_UNKNOWN || m.Mode > interface_types.RX_MODE_API_DEFAULT,
		m.QueueIDValid && m.QueueID >= i.rxQueues:
		rv = retvalInvalidInterface
	default:
		i.rxMode = m.Mode
		if m.Mode == interface_types.RX_MODE_API_DEFAULT {
			i.rxMode = interface_types.RX_MODE_API_POLLING
		}
	}
	cl.send(&interfaces.SwInterfaceSetRxModeReply{Retval: rv})
}

func hSwInterfaceTagAddDel(cl *call, m *interfaces.SwInterfaceTagAddDel) {
	rv := retvalOK
	i := cl.st.iface(m.SwIfIndex)
	switch {
	case i == nil:
		rv = retvalInvalidSwIfIndex
	case m.IsAdd && m.Tag == "":
		rv = retvalInvalidValue
	case m.IsAdd:
		i.tag = truncTag(m.Tag)
	default:
		i.tag = ""
	}
	cl.send(&interfaces.SwInterfaceTagAddDelReply{Retval: rv})
}

// hSwInterfaceDump dumps one interface when sw_if_index is set (VPP treats
// 0, like ~0, as "all"), or all interfaces whose name contains the filter,
// ignoring case.
func hSwInterfaceDump(cl *call, m *interfaces.SwInterfaceDump) {
	st := cl.st
	sw := uint32(m.SwIfIndex)
	if !m.NameFilterValid && sw != noIndex && sw != 0 {
		if i := st.ifaces[sw]; i != nil {
			cl.send(swInterfaceDetails(i))
		}
		return
	}
	filter := strings.ToLower(m.NameFilter)
	for _, i := range st.sortedIfaces() {
		if m.NameFilterValid && !strings.Contains(strings.ToLower(i.name), filter) {
			continue
		}
		cl.send(swInterfaceDetails(i))
	}
}

func swInterfaceDetails(i *iface) *interfaces.SwInterfaceDetails {
	d := &interfaces.SwInterfaceDetails{
		SwIfIndex:        interface_types.InterfaceIndex(i.idx),
		SupSwIfIndex:     i.idx,
		L2Address:        i.mac,
		Flags:            i.flags(),
		Type:             interface_types.IF_API_TYPE_HARDWARE,
		LinkMtu:          uint16(i.linkMTU),
		Mtu:              []uint32{i.mtu[0], i.mtu[1], i.mtu[2], i.mtu[3]},
		InterfaceName:    i.name,
		InterfaceDevType: i.kind.devType(),
		Tag:              i.tag,
	}
	if i.kind == kindNIC {
		d.LinkDuplex = interface_types.LINK_DUPLEX_API_FULL
		d.LinkSpeed = 10000000 // kbps
	}
	return d
}

// --- address helpers ---

func addrFromAPI(a ip_types.Address) (netip.Addr, bool) {
	switch a.Af {
	case ip_types.ADDRESS_IP4:
		return netip.AddrFrom4(a.Un.GetIP4()), true
	case ip_types.ADDRESS_IP6:
		return netip.AddrFrom16(a.Un.GetIP6()), true
	}
	return netip.Addr{}, false
}

func addrToAPI(a netip.Addr) ip_types.Address {
	if a.Is4() {
		return ip_types.Address{Af: ip_types.ADDRESS_IP4, Un: ip_types.AddressUnionIP4(a.As4())}
	}
	return ip_types.Address{Af: ip_types.ADDRESS_IP6, Un: ip_types.AddressUnionIP6(a.As16())}
}

func prefixFromAPI(p ip_types.Prefix) (netip.Prefix, bool) {
	a, ok := addrFromAPI(p.Address)
	if !ok || int(p.Len) > a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, int(p.Len)), true
}

func prefixToAPI(p netip.Prefix) ip_types.Prefix {
	return ip_types.Prefix{Address: addrToAPI(p.Addr()), Len: uint8(p.Bits())}
}
