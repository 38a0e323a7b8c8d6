package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEndlessStdinIsRefusedQuickly: /dev/zero as the network configuration is refused
// after a bounded read, with the CNI code of an invalid configuration.
func TestEndlessStdinIsRefusedQuickly(t *testing.T) {
	env := newCNIEnv(t)
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skipf("no /dev/zero: %v", err)
	}
	defer zero.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.binDir, "contiv-cni"))
	cmd.Env = append(cleanEnv(), "CNI_COMMAND=ADD", "CNI_PATH="+env.binDir, "CNI_IFNAME=eth0",
		"CNI_CONTAINERID=c1", "CNI_NETNS="+env.netns("web"), "CNI_ARGS="+podArgs("web"))
	cmd.Stdin = zero
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	start := time.Now()
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("contiv-cni still reading /dev/zero after %v", time.Since(start))
	}
	var e cniError
	if runErr == nil || json.Unmarshal(stdout.Bytes(), &e) != nil || e.Code != 7 || !strings.Contains(e.Msg, "larger than") {
		t.Errorf("ADD with /dev/zero: %v, %q; want code 7 saying the configuration is too large", runErr, stdout.String())
	}
}

// TestPodNamesBreakingKubernetesRulesAreRefusedByThePlugin: contiv-cni refuses them
// before calling the agent, with the CNI code of bad CNI_ARGS.
func TestPodNamesBreakingKubernetesRulesAreRefusedByThePlugin(t *testing.T) {
	env := newCNIEnv(t)
	env.startAgent()
	conf := env.writeConf(nil)
	netns := env.netns("web")
	for _, name := range []string{"../../etc", strings.Repeat("a", 300)} {
		_, e := env.execPlugin("ADD", conf, netns, podArgs(name))
		if e == nil || e.Code != 4 || !strings.Contains(e.Msg, "pod name") {
			t.Errorf("ADD of pod %.20q = %+v, want code 4 naming the pod name", name, e)
		}
	}
	if calls := env.agent.callLog(); calls != "" {
		t.Errorf("the agent was called: %s", calls)
	}
}
