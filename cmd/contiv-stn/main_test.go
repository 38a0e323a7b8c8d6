package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestBadFlagsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-link or -first-nic is required"},
		{[]string{"-link", "eth0", "-first-nic"}, `-link "eth0" and -first-nic exclude each other`},
		{[]string{"-link", "eth0:1"}, `-link "eth0:1" holds ':' at byte 4: a Linux link name has no`},
		{[]string{"-link", "a-name-too-long-for-linux"}, `-link "a-name-too-long-for-linux" is 25 bytes long`},
		{[]string{"-link", "eth0", "-interval", "0s"}, "-interval 0s: must be positive"},
		{[]string{"-link", "eth0", "-down-after", "0"}, "-down-after 0: must be at least 1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("contiv-stn %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

func TestACorruptRecordStopsTheDaemonNamingTheFile(t *testing.T) {
	path := t.TempDir() + "/stn.json"
	if err := writeFile(path, `{"version":1,"link":"eth0","addrs":[{"cidr":"x"}]}`); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-first-nic", "-state-file", path}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), path) || !strings.Contains(errOut.String(), `addrs[0].cidr: "x"`) {
		t.Errorf("exit %d, stderr %q", code, errOut.String())
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
