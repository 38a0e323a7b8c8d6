package stn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecordSurvivesSaveAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "stn.json")
	in := &Record{Version: RecordVersion, Link: "eth0", MTU: 1500, ARP: true,
		Addrs:  []Addr{{CIDR: "192.168.16.10/24"}, {CIDR: "2001:db8::10/64", Dynamic: true, ValidLft: 300, PreferredLft: 200}},
		Routes: []Route{{Dst: "0.0.0.0/0", Gw: "192.168.16.1", Protocol: 16}, {Dst: "::/0", Gw: "2001:db8::1"}}}
	if err := Save(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Link != "eth0" || len(out.Addrs) != 2 || !out.Addrs[1].Dynamic || out.Addrs[1].ValidLft != 300 || len(out.Routes) != 2 {
		t.Fatalf("loaded %+v, saved %+v", out, in)
	}
	if gw := out.DefaultGateway(out.IPs()[0].IP); gw.String() != "192.168.16.1" {
		t.Errorf("IPv4 default gateway %v, want 192.168.16.1", gw)
	}
	if gw := out.DefaultGateway(out.IPs()[1].IP); gw.String() != "2001:db8::1" {
		t.Errorf("IPv6 default gateway %v, want 2001:db8::1", gw)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if r, err := Load(path); r != nil || err != nil {
		t.Fatalf("after Remove: %v, %v; want no record", r, err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	left, _ := os.ReadDir(filepath.Dir(path))
	if len(left) != 0 {
		t.Errorf("files left behind: %v", left)
	}
}

func TestLoadNamesTheBadFieldOfARecord(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"version":1,"link":"eth0","addrs":[{"cidr":"10.0.0.1"}]}`, `addrs[0].cidr: "10.0.0.1"`},
		{`{"version":1,"link":"eth0","routes":[{"dst":"0.0.0.0/0","gw":"x"}]}`, `routes[0].gw: "x"`},
		{`{"version":1,"link":""}`, "link: empty"},
		{`{"version":7,"link":"eth0"}`, "version: 7"},
		{`{"version":`, "unexpected end"},
	} {
		path := filepath.Join(t.TempDir(), "stn.json")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("Load(%s) = %v, want an error naming %q and the file", tc.file, err, tc.want)
		}
	}
}
