package vppsim

import (
	"net"
	"testing"
)

func TestBoundNICMACIsOUI080027AndTheEndOfTheLinuxMAC(t *testing.T) {
	for _, c := range []struct{ linux, want string }{
		{"02:42:ac:11:00:02", "08:00:27:11:00:02"},
		{"9a:3e:01:ff:10:20", "08:00:27:ff:10:20"},
		// Never the Linux interface's own MAC.
		{"08:00:27:01:02:03", "08:00:27:81:02:03"},
		{"", "08:00:27:00:00:00"},
	} {
		hw, _ := net.ParseMAC(c.linux)
		if got := macString(boundNICMAC(hw)); got != c.want {
			t.Errorf("boundNICMAC(%q) = %s, want %s", c.linux, got, c.want)
		}
	}
}
