package vppsim

import (
	"bytes"
	"encoding/binary"
)

// The host-side strings of tap_create_v2/v3 as VPP reads them. The message
// ends with host_namespace_set, host_namespace[64], host_if_name_set,
// host_if_name[64], host_bridge_set, host_bridge[64] and tag[] (u32
// length, then the bytes). VPP's handler (tapv2_api.c) copies each set
// string with format ("%s%c", mp->host_namespace, 0): a C string read
// from the field's first byte to the first NUL. govpp encodes a longer Go
// string as its first 64 bytes with no NUL, so VPP reads on into the
// next fields: a 64-byte-or-longer namespace becomes its first 64 bytes,
// then "\x01" (host_if_name_set) and the host interface name when that is
// set; without it, the first 64 bytes alone. Nothing refuses or reports
// it: the namespace then fails to open (SYSCALL_ERROR_2) or, if the
// 64-byte prefix names one, the TAP lands there.

// tapStrFields are the tail fields of tap_create_v2/v3 as decoded.
type tapStrFields struct {
	nsSet, ifNameSet, bridgeSet bool
	ns, ifName, bridge, tag     string
}

// tapStringLen is the size of the fixed string fields.
const tapStringLen = 64

// vppView returns the three strings as VPP's handler reads them.
func (f tapStrFields) vppView() (ns, ifName, bridge string) {
	var raw []byte
	fixed := func(s string) {
		b := make([]byte, tapStringLen)
		copy(b, s)
		raw = append(raw, b...)
	}
	flag := func(set bool) {
		if set {
			raw = append(raw, 1)
		} else {
			raw = append(raw, 0)
		}
	}
	fixed(f.ns)
	flag(f.ifNameSet)
	fixed(f.ifName)
	flag(f.bridgeSet)
	fixed(f.bridge)
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(f.tag)))
	raw = append(raw, f.tag...)
	cstr := func(off int) string {
		b := raw[off:]
		if n := bytes.IndexByte(b, 0); n >= 0 {
			b = b[:n]
		}
		return string(b)
	}
	return cstr(0), cstr(tapStringLen + 1), cstr(2*tapStringLen + 2)
}

// dumpString is how sw_interface_tap_v2_dump returns a stored string: at
// most 63 bytes (tap.c: MIN (ARRAY_LEN (field) - 1, vec_len (s))).
func dumpString(s string) string {
	if len(s) > tapStringLen-1 {
		return s[:tapStringLen-1]
	}
	return s
}
