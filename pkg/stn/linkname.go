package stn

import (
	"fmt"
	"strings"
)

// MaxLinkNameLen is the longest Linux link name: IFNAMSIZ (16) bytes less the
// terminating NUL.
const MaxLinkNameLen = 15

// CheckLinkName tells why name cannot be a Linux link name, as the kernel decides it
// (net/core/dev.c: dev_valid_name, called by dev_get_valid_name for every new name and
// every rename): it is empty, longer than MaxLinkNameLen bytes, "." or "..", or holds
// '/', ':' or a byte the kernel's isspace takes for white space (lib/ctype.c: \t \n \v
// \f \r, space and 0xA0). A name with '%' is a template the kernel replaces by a free
// name (dev_alloc_name), so no existing link has one. nil: a valid name.
func CheckLinkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("is empty")
	case len(name) > MaxLinkNameLen:
		return fmt.Errorf("is %d bytes long: a Linux link name has at most %d", len(name), MaxLinkNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("is not a Linux link name")
	}
	if i := strings.IndexFunc(name, badLinkNameRune); i >= 0 {
		return fmt.Errorf("holds %q at byte %d: a Linux link name has no '/', ':', '%%' or white space", name[i], i)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0xA0 { // the kernel's isspace is byte-wise, Latin-1
			return fmt.Errorf("holds the byte 0xa0 at byte %d: the kernel takes it for white space", i)
		}
	}
	return nil
}

// badLinkNameRune reports the ASCII characters dev_valid_name refuses, and '%'.
func badLinkNameRune(r rune) bool {
	switch r {
	case '/', ':', '%', ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
