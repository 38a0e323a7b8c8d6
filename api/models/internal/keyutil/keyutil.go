// Package keyutil holds the helpers shared by the key builders and parsers
// of the model packages: normalisation of addresses used in keys, the
// splitting of keys into their parts and the errors returned for values
// that have no key. It is internal to api/models; the errors are
// re-exported by package models.
package keyutil

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
)

// ErrUnknownModel is wrapped by the error a ModelKey function returns for a
// message type it has no key for.
var ErrUnknownModel = errors.New("unknown model")

// ErrInvalidValue is wrapped by the error a ModelKey function returns for a
// value of a known type that cannot be given a key (an empty name or label,
// an unparsable route destination, ...).
var ErrInvalidValue = errors.New("value has no valid key")

// MessageName describes the type of msg for error messages: the protobuf
// full name if there is one, the Go type otherwise.
func MessageName(msg proto.Message) string {
	if msg == nil {
		return "<nil>"
	}
	if name := proto.MessageName(msg); name != "" {
		return string(name)
	}
	return fmt.Sprintf("%T", msg)
}

// UnknownModel returns the error for a message type a package has no key
// for; pkg names the package that was asked.
func UnknownModel(pkg string, msg proto.Message) error {
	return fmt.Errorf("%s: %w: no key for message type %s", pkg, ErrUnknownModel, MessageName(msg))
}

// InvalidValue returns the error for a value of type msg that has no valid
// key; pkg names the package, why says what is wrong with the value.
func InvalidValue(pkg string, msg proto.Message, why string) error {
	return fmt.Errorf("%s: %w: %s: %s", pkg, ErrInvalidValue, MessageName(msg), why)
}

// Network returns the canonical form of a destination network: the masked
// prefix in CIDR notation ("10.1.2.3/16" -> "10.1.0.0/16", "FD00::1/64" ->
// "fd00::/64"). A bare address is taken as a host prefix (/32 or /128). ok
// is false, and s is returned unchanged, if s is not a network.
func Network(s string) (canonical string, ok bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String(), true
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()).String(), true
	}
	return s, false
}

// Address returns the canonical form of an interface address in CIDR
// notation, keeping the host bits ("FD00::0001/64" -> "fd00::1/64"). ok is
// false, and s is returned unchanged, if s is not an address with a prefix
// length.
func Address(s string) (canonical string, ok bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return s, false
	}
	return p.String(), true
}

// IP returns the canonical form of an IP address without a prefix length
// ("FD00::0001" -> "fd00::1"). ok is false, and s is returned unchanged, if
// s is not an IP address.
func IP(s string) (canonical string, ok bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return s, false
	}
	return a.String(), true
}

// MAC returns the canonical form of a 6-byte MAC address: lower-case,
// colon-separated ("AA-BB-CC-00-11-22" -> "aa:bb:cc:00:11:22"). ok is
// false, and s is returned unchanged, if s is not such an address.
func MAC(s string) (canonical string, ok bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return s, false
	}
	return hw.String(), true
}

// Uint32 parses a decimal uint32 as written in keys: digits only, no sign,
// no leading zeros.
func Uint32(s string) (uint32, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(v), true
}

// Rest returns what follows prefix in key; ok is false if key does not
// start with prefix or nothing follows it.
func Rest(key, prefix string) (rest string, ok bool) {
	rest, found := strings.CutPrefix(key, prefix)
	if !found || rest == "" {
		return "", false
	}
	return rest, true
}

// SplitLast splits s around the last occurrence of sep; ok is false if sep
// does not occur or either side is empty.
func SplitLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i <= 0 || i+len(sep) >= len(s) {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// SplitFirst splits s around the first occurrence of sep; ok is false if
// sep does not occur or either side is empty.
func SplitFirst(s, sep string) (before, after string, ok bool) {
	before, after, found := strings.Cut(s, sep)
	if !found || before == "" || after == "" {
		return "", "", false
	}
	return before, after, true
}
