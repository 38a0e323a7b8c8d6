package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCnitoolCheckSeesThePodNetwork: CHECK fails when what the ADD set up in the pod's
// network namespace is gone (the interface, its address, its default route, the
// namespace itself), although the agent still has the pod.
func TestCnitoolCheckSeesThePodNetwork(t *testing.T) {
	requireCnitool(t)
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("no ip command")
	}
	env := newCNIEnv(t)
	env.startAgent()
	env.writeConf(nil)
	for _, tc := range []struct {
		name    string
		breakIt []string // ip -n <ns> ... (nil: delete the namespace)
		want    string
	}{
		{"link", []string{"link", "del", "eth0"}, "interface eth0 is missing"},
		{"addr", []string{"addr", "del", "10.1.1.2/32", "dev", "eth0"}, "lacks address 10.1.1.2/32"},
		{"route", []string{"route", "del", "default"}, "route to 0.0.0.0/0 via 10.1.1.1 is missing"},
		{"netns", nil, "network namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			netns := env.netns("chk-" + tc.name)
			if !strings.HasPrefix(netns, "/var/run/netns/") {
				t.Skip("no real network namespace")
			}
			if _, stderr, err := env.cnitool("add", netns, podArgs("web-"+tc.name)); err != nil {
				t.Fatalf("cnitool add: %v\n%s", err, stderr)
			}
			t.Cleanup(func() { _, _, _ = env.cnitool("del", netns, podArgs("web-"+tc.name)) })
			if _, stderr, err := env.cnitool("check", netns, podArgs("web-"+tc.name)); err != nil {
				t.Fatalf("cnitool check of the wired pod: %v\n%s", err, stderr)
			}
			args := []string{"netns", "del", filepath.Base(netns)}
			if tc.breakIt != nil {
				args = append([]string{"-n", filepath.Base(netns)}, tc.breakIt...)
			}
			if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
			_, stderr, err := env.cnitool("check", netns, podArgs("web-"+tc.name))
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Errorf("cnitool check after breaking the %s = %v, %q; want an error containing %q", tc.name, err, stderr, tc.want)
			}
		})
	}
}
