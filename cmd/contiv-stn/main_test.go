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
		{nil, "-link, -first-nic or -contiv-config is required"},
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

// With -contiv-config the daemon steals what contiv.conf asks of its node and keeps the
// record at contiv.conf's stnRecordFile (here a corrupt one, which stops it naming
// that file); a node that steals nothing idles until stopped; a bad contiv.conf is
// refused naming the key.
func TestContivConfDecidesTheNICAndTheRecordFile(t *testing.T) {
	dir := t.TempDir()
	record := dir + "/node1-stn.json"
	if err := writeFile(record, `{"version":1,"link":"eth1","addrs":[{"cidr":"x"}]}`); err != nil {
		t.Fatal(err)
	}
	conf := dir + "/contiv.conf"
	if err := writeFile(conf, "stnRecordFile: "+record+"\nnodeConfig: [{nodeName: node1, stealInterface: eth1}]\n"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-contiv-config", conf, "-node-name", "node1"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), record) || !strings.Contains(errOut.String(), `addrs[0].cidr: "x"`) {
		t.Errorf("node1: exit %d, stderr %q; want 1 naming the record of stnRecordFile", code, errOut.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	errOut.Reset()
	go func() { done <- run(ctx, []string{"-contiv-config", conf, "-node-name", "node2"}, &out, &errOut) }()
	select {
	case code := <-done:
		t.Fatalf("node2 (steals nothing): exited %d before it was stopped: %s", code, errOut.String())
	default:
	}
	cancel()
	if code := <-done; code != 0 || !strings.Contains(errOut.String(), "steals no NIC of this node") {
		t.Errorf("node2: exit %d, stderr %q; want 0 after idling", code, errOut.String())
	}

	if err := writeFile(conf, "stealInterface: 'eth0:1'\n"); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	code = run(context.Background(), []string{"-contiv-config", conf, "-node-name", "node1"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), `stealInterface: "eth0:1" holds ':'`) {
		t.Errorf("bad contiv.conf: exit %d, stderr %q; want 2 naming stealInterface", code, errOut.String())
	}
	for _, args := range [][]string{{"-contiv-config", conf}, {"-contiv-config", conf, "-node-name", "n", "-link", "eth0"}} {
		errOut.Reset()
		if code := run(context.Background(), args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "-contiv-config") {
			t.Errorf("contiv-stn %v: exit %d, stderr %q; want 2 naming -contiv-config", args, code, errOut.String())
		}
	}
}
