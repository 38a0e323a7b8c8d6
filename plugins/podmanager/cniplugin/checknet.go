package cniplugin

import (
	"fmt"
	"net"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// checkPodNetwork verifies in the pod's network namespace what the ADD set up, as
// prevResult records it: the namespace exists, the interface ifName exists, is up and
// has the recorded MAC, holds every recorded address of it, and every recorded route is
// there. The namespace is read through a netlink handle bound to it; the plugin's
// thread never enters it. A missing namespace is CNI code 3 (the container is unknown),
// anything else that differs is an error naming what is missing (code 999).
func checkPodNetwork(what, netnsPath, ifName string, prev *types100.Result) error {
	nsh, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("%s: the pod's network namespace %s cannot be opened", what, netnsPath), err.Error())
	}
	defer nsh.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(nsh), &st); err != nil || st.Type != unix.NSFS_MAGIC {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("%s: %s is not a network namespace", what, netnsPath), "")
	}
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return types.NewError(types.ErrInternal, fmt.Sprintf("%s: netlink in the pod's network namespace %s", what, netnsPath), err.Error())
	}
	defer h.Close()
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	idx := -1
	for i, iface := range prev.Interfaces {
		if iface.Name == ifName && iface.Sandbox == netnsPath {
			idx = i
		}
	}
	link, err := h.LinkByName(ifName)
	if err != nil {
		fail("interface %s is missing (%v)", ifName, err)
	} else {
		a := link.Attrs()
		if a.Flags&net.FlagUp == 0 {
			fail("interface %s is down", ifName)
		}
		if idx >= 0 && prev.Interfaces[idx].Mac != "" && !strings.EqualFold(a.HardwareAddr.String(), prev.Interfaces[idx].Mac) {
			fail("interface %s has MAC %s, the ADD gave it %s", ifName, a.HardwareAddr, prev.Interfaces[idx].Mac)
		}
		addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
		if err != nil {
			fail("addresses of %s: %v", ifName, err)
		}
		for _, ip := range prev.IPs {
			if ip.Interface != nil && *ip.Interface != idx {
				continue
			}
			if !hasAddr(addrs, ip.Address) {
				fail("interface %s lacks address %s", ifName, ip.Address.String())
			}
		}
	}
	for _, rt := range prev.Routes {
		family := netlink.FAMILY_V4
		if rt.Dst.IP.To4() == nil {
			family = netlink.FAMILY_V6
		}
		routes, err := h.RouteList(nil, family)
		if err != nil {
			fail("routes: %v", err)
			break
		}
		if !hasRoute(routes, rt) {
			if rt.GW != nil {
				fail("route to %s via %s is missing", rt.Dst.String(), rt.GW)
			} else {
				fail("route to %s is missing", rt.Dst.String())
			}
		}
	}
	if len(problems) > 0 {
		return types.NewError(types.ErrInternal, fmt.Sprintf("%s: the pod's network in %s is not as the ADD set it up: %s",
			what, netnsPath, strings.Join(problems, "; ")), "")
	}
	return nil
}

// hasAddr reports whether addrs hold want (address and prefix length).
func hasAddr(addrs []netlink.Addr, want net.IPNet) bool {
	for _, a := range addrs {
		if a.IPNet != nil && a.IP.Equal(want.IP) && a.Mask.String() == want.Mask.String() {
			return true
		}
	}
	return false
}

// hasRoute reports whether routes hold a route to want's destination with want's
// gateway (any gateway when want has none). A default route may come with no Dst.
func hasRoute(routes []netlink.Route, want *types.Route) bool {
	for _, r := range routes {
		dst := r.Dst
		if dst == nil {
			bits := 32
			if want.Dst.IP.To4() == nil {
				bits = 128
			}
			dst = &net.IPNet{IP: make(net.IP, bits/8), Mask: net.CIDRMask(0, bits)}
		}
		if !dst.IP.Equal(want.Dst.IP) || dst.Mask.String() != want.Dst.Mask.String() {
			continue
		}
		if want.GW == nil || want.GW.Equal(r.Gw) {
			return true
		}
	}
	return false
}
