//go:build linux

package stn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Host changes the Linux side of a NIC in one network namespace.
type Host struct {
	// Netns is the path of the namespace (e.g. /var/run/netns/node1); "" is the
	// caller's own namespace.
	Netns string
}

// rtprotRA is the protocol of routes the kernel learns from router advertisements
// (RTPROT_RA); like kernel routes they come back by themselves.
const rtprotRA = 9

// Capture records the configuration of the link named link.
func (h Host) Capture(link string) (*Record, error) {
	var rec *Record
	err := h.do(func() error {
		l, err := netlink.LinkByName(link)
		if err != nil {
			return fmt.Errorf("link %q: %w", link, err)
		}
		a := l.Attrs()
		rec = &Record{Version: RecordVersion, Link: link, MAC: a.HardwareAddr.String(), MTU: a.MTU,
			ARP: a.RawFlags&unix.IFF_NOARP == 0}
		if rec.RPFilter, err = readSysctl("ipv4", link, "rp_filter"); err != nil {
			return err
		}
		if rec.DisableIPv6, err = readSysctl("ipv6", link, "disable_ipv6"); err != nil {
			return err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return fmt.Errorf("link %q: list addresses: %w", link, err)
		}
		for _, ad := range addrs {
			if ad.IP.IsLinkLocalUnicast() && ad.IP.To4() == nil {
				continue
			}
			r := Addr{CIDR: ad.IPNet.String()}
			if ad.Flags&unix.IFA_F_PERMANENT == 0 {
				r.Dynamic, r.ValidLft, r.PreferredLft = true, ad.ValidLft, ad.PreferedLft
			}
			if ad.Broadcast != nil {
				r.Broadcast = ad.Broadcast.String()
			}
			rec.Addrs = append(rec.Addrs, r)
		}
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
			&netlink.Route{LinkIndex: a.Index, Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("link %q: list routes: %w", link, err)
		}
		for _, rt := range routes {
			if rt.Protocol == unix.RTPROT_KERNEL || rt.Protocol == rtprotRA || rt.Table == unix.RT_TABLE_LOCAL ||
				rt.Type != unix.RTN_UNICAST || len(rt.MultiPath) > 0 {
				continue
			}
			rec.Routes = append(rec.Routes, fromNetlinkRoute(rt))
		}
		return nil
	})
	return rec, err
}

// fromNetlinkRoute converts a route read from the kernel.
func fromNetlinkRoute(rt netlink.Route) Route {
	r := Route{Priority: rt.Priority, Protocol: int(rt.Protocol), Scope: int(rt.Scope), Table: rt.Table}
	switch {
	case rt.Dst != nil:
		r.Dst = rt.Dst.String()
	case rt.Family == unix.AF_INET6:
		r.Dst = "::/0"
	default:
		r.Dst = "0.0.0.0/0"
	}
	if rt.Gw != nil {
		r.Gw = rt.Gw.String()
	}
	if rt.Src != nil {
		r.Src = rt.Src.String()
	}
	return r
}

// toNetlinkRoute converts a recorded route for the link with index idx.
func toNetlinkRoute(r Route, idx int) (*netlink.Route, error) {
	_, dst, err := net.ParseCIDR(r.Dst)
	if err != nil {
		return nil, fmt.Errorf("route dst %q: %w", r.Dst, err)
	}
	rt := &netlink.Route{LinkIndex: idx, Dst: dst, Priority: r.Priority, Protocol: netlink.RouteProtocol(r.Protocol),
		Scope: netlink.Scope(r.Scope), Table: r.Table, Gw: net.ParseIP(r.Gw), Src: net.ParseIP(r.Src)}
	if ones, _ := dst.Mask.Size(); ones == 0 {
		rt.Dst = nil // the kernel's own form of a default route
		rt.Family = netlink.FAMILY_V4
		if dst.IP.To4() == nil {
			rt.Family = netlink.FAMILY_V6
		}
	}
	return rt, nil
}

// toNetlinkAddr converts a recorded address.
func toNetlinkAddr(a Addr) (*netlink.Addr, error) {
	ad, err := netlink.ParseAddr(a.CIDR)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", a.CIDR, err)
	}
	if a.Dynamic {
		ad.ValidLft, ad.PreferedLft = a.ValidLft, a.PreferredLft
	}
	if a.Broadcast != "" {
		ad.Broadcast = net.ParseIP(a.Broadcast)
	}
	if ad.IP.To4() == nil {
		// The address was the host's a moment ago: no duplicate address detection,
		// so that the routes whose source it is can be restored at once.
		ad.Flags |= unix.IFA_F_NODAD
	}
	return ad, nil
}

// Steal takes the recorded configuration off the link and quiets the kernel on it
// (package doc). Every step is idempotent, so Steal may run again after a crash.
func (h Host) Steal(rec *Record) error {
	return h.do(func() error {
		l, err := netlink.LinkByName(rec.Link)
		if err != nil {
			return fmt.Errorf("steal link %q: %w", rec.Link, err)
		}
		var errs []error
		for _, r := range rec.Routes {
			rt, err := toNetlinkRoute(r, l.Attrs().Index)
			if err == nil {
				err = netlink.RouteDel(rt)
			}
			if err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("delete route %s via %q: %w", r.Dst, r.Gw, err))
			}
		}
		for _, a := range rec.Addrs {
			ad, err := toNetlinkAddr(a)
			if err == nil {
				err = netlink.AddrDel(l, ad)
			}
			if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
				errs = append(errs, fmt.Errorf("delete address %s: %w", a.CIDR, err))
			}
		}
		if err := netlink.LinkSetARPOff(l); err != nil {
			errs = append(errs, fmt.Errorf("arp off: %w", err))
		}
		if err := writeSysctl("ipv4", rec.Link, "rp_filter", "1"); err != nil {
			errs = append(errs, err)
		}
		if err := writeSysctl("ipv6", rec.Link, "disable_ipv6", "1"); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("steal link %q: %w", rec.Link, err)
		}
		return nil
	})
}

// Restore gives the link its recorded configuration back: the recorded addresses are
// first taken off any other link that carries them (the host-interconnect TAP, if it
// outlived VPP), then the link gets its MTU, ARP, sysctls, addresses and routes. It is
// idempotent.
func (h Host) Restore(rec *Record) error {
	return h.do(func() error {
		l, err := netlink.LinkByName(rec.Link)
		if err != nil {
			return fmt.Errorf("restore link %q: %w", rec.Link, err)
		}
		idx := l.Attrs().Index
		var errs []error
		errs = append(errs, releaseElsewhere(rec, idx))
		if rec.MTU > 0 && l.Attrs().MTU != rec.MTU {
			if err := netlink.LinkSetMTU(l, rec.MTU); err != nil {
				errs = append(errs, fmt.Errorf("mtu %d: %w", rec.MTU, err))
			}
		}
		if rec.ARP {
			if err := netlink.LinkSetARPOn(l); err != nil {
				errs = append(errs, fmt.Errorf("arp on: %w", err))
			}
		}
		if rec.RPFilter != "" {
			errs = append(errs, writeSysctl("ipv4", rec.Link, "rp_filter", rec.RPFilter))
		}
		if rec.DisableIPv6 != "" {
			errs = append(errs, writeSysctl("ipv6", rec.Link, "disable_ipv6", rec.DisableIPv6))
		}
		if err := netlink.LinkSetUp(l); err != nil {
			errs = append(errs, fmt.Errorf("set up: %w", err))
		}
		for _, a := range rec.Addrs {
			ad, err := toNetlinkAddr(a)
			if err == nil {
				err = netlink.AddrReplace(l, ad)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("address %s: %w", a.CIDR, err))
			}
		}
		// Link routes first: a gateway route needs its next hop on a link.
		for pass := 0; pass < 2; pass++ {
			for _, r := range rec.Routes {
				if (r.Gw == "") != (pass == 0) {
					continue
				}
				rt, err := toNetlinkRoute(r, idx)
				if err == nil {
					err = netlink.RouteReplace(rt)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("route %s via %q: %w", r.Dst, r.Gw, err))
				}
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("restore link %q: %w", rec.Link, err)
		}
		return nil
	})
}

// releaseElsewhere deletes the recorded addresses from every link but idx.
func releaseElsewhere(rec *Record, idx int) error {
	want := map[string]bool{}
	for _, ip := range rec.IPs() {
		want[ip.IP.String()] = true
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	var errs []error
	for _, ad := range addrs {
		if ad.LinkIndex == idx || !want[ad.IP.String()] {
			continue
		}
		other, err := netlink.LinkByIndex(ad.LinkIndex)
		if err == nil {
			err = netlink.AddrDel(other, &ad)
		}
		if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("take %s off link %d: %w", ad.IPNet, ad.LinkIndex, err))
		}
	}
	return errors.Join(errs...)
}

func sysctlPath(family, link, key string) string {
	return fmt.Sprintf("/proc/sys/net/%s/conf/%s/%s", family, link, key)
}

func readSysctl(family, link, key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(family, link, key))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil // IPv6 disabled in the kernel
	}
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", sysctlPath(family, link, key), err)
	}
	return strings.TrimSpace(string(b)), nil
}

func writeSysctl(family, link, key, value string) error {
	p := sysctlPath(family, link, key)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(p, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", p, value, err)
	}
	return nil
}

// do runs fn in the Host's namespace: on a locked OS thread that has entered it (the
// netlink calls and /proc/sys/net of fn then see that namespace). A thread that cannot
// return to its own namespace stays locked and ends with its goroutine.
func (h Host) do(fn func() error) error {
	if h.Netns == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: own namespace: %w", err)
			return
		}
		defer own.Close()
		target, err := netns.GetFromPath(h.Netns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", h.Netns, err)
			return
		}
		err = netns.Set(target)
		target.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: enter: %w", h.Netns, err)
			return
		}
		ferr := fn()
		if netns.Set(own) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// FirstNIC returns the NIC that stealFirstNIC means: the link of the IPv4 default
// route, else the first link (by index) that is up, not a loopback and has a global
// unicast address. Links whose names start with "vpp" (the host interconnect) are
// never chosen.
func (h Host) FirstNIC() (string, error) {
	var name string
	err := h.do(func() error {
		routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("list routes: %w", err)
		}
		for _, rt := range routes {
			if rt.Dst != nil {
				if ones, _ := rt.Dst.Mask.Size(); ones != 0 {
					continue // not a default route
				}
			}
			if l, err := netlink.LinkByIndex(rt.LinkIndex); err == nil && !strings.HasPrefix(l.Attrs().Name, "vpp") {
				name = l.Attrs().Name
				return nil
			}
		}
		links, err := netlink.LinkList()
		if err != nil {
			return fmt.Errorf("list links: %w", err)
		}
		for _, l := range links {
			a := l.Attrs()
			if a.Flags&net.FlagLoopback != 0 || a.Flags&net.FlagUp == 0 || strings.HasPrefix(a.Name, "vpp") {
				continue
			}
			addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
			if err != nil {
				return fmt.Errorf("list addresses of %s: %w", a.Name, err)
			}
			for _, ad := range addrs {
				if ad.IP.IsGlobalUnicast() {
					name = a.Name
					return nil
				}
			}
		}
		return errors.New("no link with a default route or a global address")
	})
	return name, err
}
