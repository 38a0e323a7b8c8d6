package vppsim

import (
	"net/netip"
)

// hostNet creates the Linux side of interfaces in Linux mode.
type hostNet interface {
	// createTap creates the Linux end of a TAP as VPP's tap_create does.
	createTap(cfg hostTapConfig) (hostTap, error)
	// interfaceMAC returns the MAC of a Linux interface in the simulator's
	// network namespace, and whether the interface exists.
	interfaceMAC(name string) ([6]byte, bool)
	// setLinkUp sets a Linux interface of the simulator's namespace up or
	// down.
	setLinkUp(name string, up bool) error
}

// hostTap is the Linux end of a TAP; Close removes it.
type hostTap interface {
	Close() error
}

// hostTapConfig is the requested Linux end of a TAP.
type hostTapConfig struct {
	name   string
	ns     string // network namespace name (under /var/run/netns) or path; "" = the simulator's
	tun    bool
	mac    [6]byte
	mtu    uint32 // 0 = leave the kernel default
	ip4    netip.Prefix
	ip6    netip.Prefix
	gw4    netip.Addr
	gw6    netip.Addr
	bridge string
}

// hostError is a failure of the Linux side with the retval VPP reports
// for it.
type hostError struct {
	retval int32
	err    error
}

func (e *hostError) Error() string { return e.err.Error() }
func (e *hostError) Unwrap() error { return e.err }
