package linuxcalls

import (
	"fmt"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contiv-vpp/contiv-vpp/plugins/linux/nsplugin"
)

func TestAddressConversionsKeepHostBits(t *testing.T) {
	for _, s := range []string{"10.1.1.2/24", "10.1.1.2/32", "0.0.0.0/0", "fd00::1/64", "::1/128"} {
		n := PrefixToIPNet(netip.MustParsePrefix(s))
		p, ok := IPNetToPrefix(n)
		if !ok || p != netip.MustParsePrefix(s) {
			t.Errorf("round trip of %s = %v, %v", s, p, ok)
		}
	}
	if n := PrefixToIPNet(netip.MustParsePrefix("::ffff:10.1.1.2/120")); len(n.IP) != 4 {
		t.Errorf("IPv4-mapped address kept in 16-byte form: %v", n)
	}
}

func TestCanonicalForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{CanonicalAddress("FD00::0001/64"), "fd00::1/64"},
		{CanonicalAddress("bogus"), "bogus"},
		{CanonicalMAC("02-FE-AA-BB-CC-DD"), "02:fe:aa:bb:cc:dd"},
		{CanonicalMAC("XYZ"), "xyz"},
	}
	for _, tc := range tests {
		if tc.in != tc.want {
			t.Errorf("got %q, want %q", tc.in, tc.want)
		}
	}
}

func TestIsGoneAndIsRetriable(t *testing.T) {
	missingNs := &nsplugin.NamespaceError{Path: "/var/run/netns/x", Op: "open", Err: unix.ENOENT, NotFound: true}
	tests := []struct {
		err             error
		gone, retriable bool
	}{
		{missingNs, true, true},
		{fmt.Errorf("x: %w", ErrLinkNotFound), true, true},
		{fmt.Errorf("x: %w", unix.ESRCH), true, true},
		{fmt.Errorf("x: %w", unix.EADDRNOTAVAIL), true, false},
		{fmt.Errorf("x: %w", unix.ENETUNREACH), false, true},
		{fmt.Errorf("x: %w", unix.EEXIST), false, false},
		{nil, false, false},
	}
	for _, tc := range tests {
		if got := IsGone(tc.err); got != tc.gone {
			t.Errorf("IsGone(%v) = %v", tc.err, got)
		}
		if got := IsRetriable(tc.err); got != tc.retriable {
			t.Errorf("IsRetriable(%v) = %v", tc.err, got)
		}
	}
}

func TestEthtoolRejectsLongNames(t *testing.T) {
	if _, _, err := ChecksumOffload(-1, "abcdefghijklmnop"); err == nil {
		t.Fatal("a 16-character link name was accepted")
	}
}
