package linuxcalls

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolValue is struct ethtool_value of <linux/ethtool.h>.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with ifr_data set, padded to the kernel's size
// (40 bytes on 64-bit platforms, 32 on 32-bit ones).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtool runs one SIOCETHTOOL ethtool_value command on the link named
// ifName, in the namespace of the socket sock, and returns the data the
// kernel wrote back.
func ethtool(sock int, ifName string, cmd, data uint32) (uint32, error) {
	if len(ifName) >= unix.IFNAMSIZ {
		return 0, fmt.Errorf("link name %q is longer than %d characters", ifName, unix.IFNAMSIZ-1)
	}
	val := &ethtoolValue{cmd: cmd, data: data}
	req := &ifreqData{data: unsafe.Pointer(val)}
	copy(req.name[:], ifName)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(sock), uintptr(unix.SIOCETHTOOL), uintptr(unsafe.Pointer(req)))
	runtime.KeepAlive(req)
	runtime.KeepAlive(val)
	if errno != 0 {
		return 0, errno
	}
	return val.data, nil
}

// ChecksumOffload reads the rx and tx checksum offloading of a link
// (ETHTOOL_GRXCSUM, ETHTOOL_GTXCSUM).
func ChecksumOffload(sock int, ifName string) (rx, tx bool, err error) {
	r, err := ethtool(sock, ifName, unix.ETHTOOL_GRXCSUM, 0)
	if err != nil {
		return false, false, fmt.Errorf("ethtool get rx checksum offload of %q: %w", ifName, err)
	}
	t, err := ethtool(sock, ifName, unix.ETHTOOL_GTXCSUM, 0)
	if err != nil {
		return false, false, fmt.Errorf("ethtool get tx checksum offload of %q: %w", ifName, err)
	}
	return r != 0, t != 0, nil
}

// SetChecksumOffload turns the rx (ETHTOOL_SRXCSUM) or tx (ETHTOOL_STXCSUM)
// checksum offloading of a link on or off; a nil setting is left alone.
func SetChecksumOffload(sock int, ifName string, rx, tx *bool) error {
	set := func(cmd uint32, on *bool, what string) error {
		if on == nil {
			return nil
		}
		var v uint32
		if *on {
			v = 1
		}
		if _, err := ethtool(sock, ifName, cmd, v); err != nil {
			return fmt.Errorf("ethtool set %s checksum offload of %q to %t: %w", what, ifName, *on, err)
		}
		return nil
	}
	if err := set(unix.ETHTOOL_SRXCSUM, rx, "rx"); err != nil {
		return err
	}
	return set(unix.ETHTOOL_STXCSUM, tx, "tx")
}
