package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func exampleLab() labInfo {
	return labInfo{
		name: "ctvlab-3bf022", dir: "/tmp/ctvlab-3bf022-1", kubeconfig: "/tmp/ctvlab 3bf022/kube'config",
		kubectl: "/root/.cache/contiv-vpp/k8s-53c9b4a16dd860b3/kubectl", clientNetns: "ctvlab-3bf022-client",
		nicBound: true,
		nodes: []nodeInfo{
			{name: "node1", id: 1, ip: "192.168.16.1", podSubnet: "10.1.1.0/24", netns: "ctvlab-3bf022-node1", rest: "127.0.0.1:40477"},
			{name: "node2", id: 2, ip: "192.168.16.2", podSubnet: "10.1.2.0/24", netns: "ctvlab-3bf022-node2", rest: "127.0.0.1:38563"},
		},
	}
}

// The printed lines, pasted into a shell, set what README.md's cluster commands use.
func TestPastedLinesSetTheVariablesOfTheREADME(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	info := exampleLab()
	script := strings.Join(shellLines(info), "\n") +
		"\nprintf '%s\\n' \"$KUBECONFIG\" \"$LAB\" \"$NODE1_REST\" \"$NODE2_REST\"; alias kubectl\n"
	out, err := exec.Command(bash, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	want := info.kubeconfig + "\n" + info.name + "\nhttp://127.0.0.1:40477\nhttp://127.0.0.1:38563\n" +
		"alias kubectl='" + info.kubectl + "'\n"
	if string(out) != want {
		t.Errorf("the pasted lines give\n%s\nwant\n%s", out, want)
	}
}

func TestUsageShowsThePasteBlockAndNamesNamespacesThroughLAB(t *testing.T) {
	info := exampleLab()
	var b bytes.Buffer
	printUsage(&b, info)
	out := b.String()
	for _, l := range shellLines(info) {
		if !strings.Contains(out, "\n  "+l+"\n") {
			t.Errorf("usage lacks the line %q:\n%s", l, out)
		}
	}
	for _, want := range []string{"ip netns exec $LAB-client curl", "$NODE1_REST/contiv/v1/ipam", "$NODE2_REST (http://127.0.0.1:38563)"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
}
