package stn

import (
	"strings"
	"testing"
)

func TestCheckLinkNameAcceptsWhatTheKernelAcceptsOnly(t *testing.T) {
	for _, name := range []string{"eth0", "enp0s3", "nic0", "a", "eth0.100", "br-0123456789ab", "wlan_1", "ens3f0np0"} {
		if err := CheckLinkName(name); err != nil {
			t.Errorf("CheckLinkName(%q) = %v, want nil", name, err)
		}
	}
	for name, want := range map[string]string{
		"":                 "is empty",
		"0123456789abcdef": "16 bytes long",
		".":                "not a Linux link name",
		"..":               "not a Linux link name",
		"eth/0":            `'/'`,
		"eth0:1":           `':'`,
		"eth%d":            `'%'`,
		"eth 0":            `' '`,
		"eth0\n":           `'\n'`,
		"eth\xa0":          "0xa0",
	} {
		err := CheckLinkName(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLinkName(%q) = %v, want an error with %s", name, err, want)
		}
	}
}
