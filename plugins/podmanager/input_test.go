package podmanager

import (
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

func TestAddWithAPodNameBreakingKubernetesRulesIsInvalid(t *testing.T) {
	env := newEnv(t, "")
	for _, name := range []string{"../../etc", strings.Repeat("a", 300), "Web"} {
		reply, err := env.add(request(name, "c1", "/ns/web"))
		if err != nil {
			t.Fatal(err)
		}
		if reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), "pod name") {
			t.Errorf("add of pod %.20q = %v, want an invalid-request reply naming the pod name", name, reply)
		}
	}
	if evs := env.loop.events(); len(evs) != 0 {
		t.Errorf("invalid requests reached the event loop: %v", evs)
	}
}

func TestContainerIDReusedForAnotherPodIsRefused(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add web")(env.add(request("web", "c1", "/ns/web")))
	reply, err := env.add(request("db", "c1", "/ns/db"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), "container c1 is bound to pod default/web") {
		t.Errorf("add of another pod with container c1 = %v, want it refused", reply)
	}
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("local pods = %q", got)
	}
	// Once web is deleted, the container ID is free again.
	mustSucceed(t, "del web")(env.del(request("web", "c1", "/ns/web")))
	mustSucceed(t, "add db")(env.add(request("db", "c1", "/ns/db")))
}

func TestCheckFailsWhenThePodNetnsIsGone(t *testing.T) {
	gone := map[string]bool{}
	env := newEnv(t, "", withNetnsCheck(func(path string, _ uint64) (netnsVerdict, string) {
		if gone[path] {
			return netnsGone, "the path does not exist"
		}
		return netnsPresent, ""
	}))
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	mustSucceed(t, "check")(env.check(request("web", "c1", "/ns/web")))
	gone["/ns/web"] = true
	reply, err := env.check(request("web", "c1", "/ns/web"))
	if err != nil || reply.GetResult() == cni.ResultOK || !strings.Contains(reply.GetError(), "network namespace /ns/web is gone") {
		t.Errorf("check with the netns gone = %v, %v", reply, err)
	}
}
