package podmanager

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// fakeStatus records the health reports of the pod manager.
type fakeStatus struct {
	mu     sync.Mutex
	state  health.State
	reason string
}

func (f *fakeStatus) Report(s health.State, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state, f.reason = s, reason
}

func (f *fakeStatus) get() (health.State, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, f.reason
}

// failWrites makes every write of the state file fail, as on a full disk: appends to
// the journal and new snapshots alike.
func failWrites(env *testEnv, err error) {
	env.pm.mu.Lock()
	defer env.pm.mu.Unlock()
	env.pm.state.createTemp = func(string, string) (*os.File, error) { return nil, err }
	env.pm.state.closeJournal() // the next change needs a snapshot, which fails
}

func TestAddWhoseStateCannotBePersistedFailsAndIsReverted(t *testing.T) {
	st := &fakeStatus{}
	env := newEnv(t, "", withDeps(func(d *Deps) { d.Status = st }))
	mustSucceed(t, "add db")(env.add(request("db", "c0", "/ns/db")))

	full := errors.New("no space left on device")
	failWrites(env, full)
	reply, err := env.add(request("web", "c1", "/ns/web"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.GetResult() != cni.ResultTryAgain || !strings.Contains(reply.GetError(), "no space left on device") ||
		!strings.Contains(reply.GetError(), "reverted") {
		t.Errorf("add with an unwritable state file = %v, want a try-again error naming the cause and the revert", reply)
	}
	if got := localPods(env.pm); got != "default/db c0 /ns/db" {
		t.Errorf("local pods = %q, want the failed pod gone", got)
	}
	evs := strings.Join(env.loop.events(), "\n")
	if !strings.Contains(evs, "done Delete Pod default/web") {
		t.Errorf("the wiring of the failed ADD was not deleted; events:\n%s", evs)
	}
	if s, reason := st.get(); s == health.OK || !strings.Contains(reason, "pods.json") || !strings.Contains(reason, "no space left") {
		t.Errorf("health = %v %q, want not ready naming the state file and the cause", s, reason)
	}

	// Space again: the next ADD succeeds, is persisted and readiness recovers.
	env.pm.mu.Lock()
	env.pm.state.createTemp = nil
	env.pm.mu.Unlock()
	mustSucceed(t, "add web again")(env.add(request("web", "c1", "/ns/web")))
	if got := statePods(t, env.stateFile); got != "default/db c0 /ns/db; default/web c1 /ns/web" {
		t.Errorf("state file = %q", got)
	}
	if s, reason := st.get(); s != health.OK {
		t.Errorf("health = %v %q after a successful write, want OK", s, reason)
	}
}

// allowWrites ends failWrites.
func allowWrites(env *testEnv) {
	env.pm.mu.Lock()
	defer env.pm.mu.Unlock()
	env.pm.state.createTemp = nil
}

// A DEL whose removal cannot be persisted (a full disk) is not acknowledged: the pod is
// unwired, but the reply asks the kubelet to try again, and so does every retry until
// the removal is durable. Before, the DEL succeeded and the pod came back after a
// restart (issue 27, weak spot: a DEL during a full disk is not made durable).
func TestDelWhoseRemovalCannotBePersistedIsRetriedUntilDurable(t *testing.T) {
	st := &fakeStatus{}
	dir := shortTempDir(t)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive), withDeps(func(d *Deps) { d.Status = st }))
	mustSucceed(t, "add db")(env.add(request("db", "c0", "/ns/db")))
	mustSucceed(t, "add web")(env.add(request("web", "c1", "/ns/web")))

	failWrites(env, errors.New("no space left on device"))
	for i := range 2 {
		reply, err := env.del(request("web", "c1", "/ns/web"))
		if err != nil {
			t.Fatal(err)
		}
		if reply.GetResult() != cni.ResultTryAgain || !strings.Contains(reply.GetError(), "no space left on device") ||
			!strings.Contains(reply.GetError(), "durable") {
			t.Fatalf("DEL #%d with an unwritable state file = %v, want a try-again error naming the cause", i+1, reply)
		}
	}
	if got := localPods(env.pm); got != "default/db c0 /ns/db" {
		t.Errorf("local pods = %q, want web unwired all the same", got)
	}
	if got := statePods(t, env.stateFile); !strings.Contains(got, "default/web") {
		t.Fatalf("state file = %q: the test's writes did not fail", got)
	}
	allowWrites(env)
	mustSucceed(t, "DEL retried with space again")(env.del(request("web", "c1", "/ns/web")))
	if got := statePods(t, env.stateFile); got != "default/db c0 /ns/db" {
		t.Errorf("state file = %q, want web forgotten", got)
	}
	env.close()
	restarted := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if got := localPods(restarted.pm); got != "default/db c0 /ns/db" {
		t.Errorf("pods after a restart = %q, want web not back", got)
	}
}

// A DEL not made durable before a restart was not acknowledged: the pod is recovered
// and the kubelet's retry removes it.
func TestUndurableDelBeforeARestartIsCompletedByTheRetry(t *testing.T) {
	dir := shortTempDir(t)
	env := newEnv(t, dir, withNetnsCheck(netnsAlive))
	mustSucceed(t, "add web")(env.add(request("web", "c1", "/ns/web")))
	failWrites(env, errors.New("no space left on device"))
	if reply, err := env.del(request("web", "c1", "/ns/web")); err != nil || reply.GetResult() != cni.ResultTryAgain {
		t.Fatalf("DEL = %v, %v; want try again", reply, err)
	}
	env.close()
	restarted := newEnv(t, dir, withNetnsCheck(netnsAlive))
	if got := localPods(restarted.pm); got != "default/web c1 /ns/web" {
		t.Fatalf("pods after a restart = %q, want web recovered (its DEL was not acknowledged)", got)
	}
	mustSucceed(t, "DEL retried")(restarted.del(request("web", "c1", "/ns/web")))
	if got := statePods(t, restarted.stateFile); got != "" {
		t.Errorf("state file = %q, want empty", got)
	}
}
