package podmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

func TestAddRepliesWithTheInterfacesTheHandlersFilledIn(t *testing.T) {
	env := newEnv(t, "")
	reply := mustSucceed(t, "add")(env.add(request("web", "c1", "/var/run/netns/web")))

	want := &cni.CNIReply{
		Result: cni.ResultOK,
		Interfaces: []*cni.CNIReply_Interface{{
			Name: "eth0", Mac: "02:fe:00:00:00:02", Sandbox: "/var/run/netns/web",
			IpAddresses: []*cni.CNIReply_Interface_IP{{
				Version: cni.CNIReply_Interface_IP_IPV4, Address: "10.1.1.2/32", Gateway: "10.1.1.1",
			}},
		}},
		Routes: []*cni.CNIReply_Route{{Dst: "0.0.0.0/0", Gw: "10.1.1.1"}},
	}
	if got, w := prototext.Format(reply), prototext.Format(want); got != w {
		t.Errorf("reply:\n%s\nwant:\n%s", got, w)
	}
	if got := localPods(env.pm); got != "default/web c1 /var/run/netns/web" {
		t.Errorf("local pods = %q", got)
	}
	if got := statePods(t, env.stateFile); got != "default/web c1 /var/run/netns/web" {
		t.Errorf("state file pods = %q", got)
	}
	// The pod's IP is recorded (and persisted) for IPAM after a restart.
	if lp := env.pm.GetLocalPods()[podmodel.ID{Name: "web", Namespace: "default"}]; lp == nil || lp.IPAddress.String() != "10.1.1.2" {
		t.Errorf("local pod = %+v, want IP 10.1.1.2", lp)
	}
	if load, err := readState(env.stateFile); err != nil {
		t.Error(err)
	} else if len(load.Pods) != 1 || load.Pods[0].IPAddress != "10.1.1.2" {
		t.Errorf("state file records = %+v", load.Pods)
	}
	if got := testutil.ToFloat64(env.pm.metrics.requests.WithLabelValues(kindAdd, resultOK)); got != 1 {
		t.Errorf("add/ok requests = %v", got)
	}
	if got := testutil.ToFloat64(env.pm.metrics.localPods); got != 1 {
		t.Errorf("local pods gauge = %v", got)
	}
	if n := testutil.CollectAndCount(env.reg, "contiv_podmanager_cni_request_duration_seconds"); n != 1 {
		t.Errorf("duration histograms = %d", n)
	}
}

func TestAddPassesTheExternalIPAMResultOn(t *testing.T) {
	env := newEnv(t, "")
	var seen *AddPod
	env.loop.set(func(l *fakeLoop) {
		l.failAdd = func(ev *AddPod) error { seen = ev; return nil }
	})
	req := request("web", "c1", "/ns/web")
	req.IpamType, req.IpamData = "host-local", `{"ips":[{"address":"10.9.0.5/24"}]}`
	mustSucceed(t, "add")(env.add(req))
	if seen == nil || seen.IPAMType != "host-local" || seen.IPAMData != req.IpamData {
		t.Errorf("AddPod = %+v", seen)
	}
}

func TestDeleteForgetsThePodAndTwiceIsFine(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	mustSucceed(t, "delete")(env.del(request("web", "c1", "/ns/web")))
	if got := localPods(env.pm); got != "" {
		t.Errorf("local pods after delete = %q", got)
	}
	if got := statePods(t, env.stateFile); got != "" {
		t.Errorf("state file pods after delete = %q", got)
	}
	mustSucceed(t, "second delete")(env.del(request("web", "c1", "/ns/web")))
	mustSucceed(t, "delete of a never added pod")(env.del(request("nobody", "c9", "")))
	want := []string{
		"push Add Pod default/web (container c1, netns /ns/web)",
		"done Add Pod default/web (container c1, netns /ns/web): <nil>",
		"push Delete Pod default/web",
		"done Delete Pod default/web: <nil>",
	}
	if got := env.loop.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := testutil.ToFloat64(env.pm.metrics.requests.WithLabelValues(kindDelete, resultOK)); got != 3 {
		t.Errorf("delete/ok requests = %v", got)
	}
}

func TestDeleteWithoutPodArgumentsFindsThePodByContainer(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	req := request("web", "c1", "/ns/web")
	req.ExtraArguments = ""
	mustSucceed(t, "delete")(env.del(req))
	if got := localPods(env.pm); got != "" {
		t.Errorf("local pods = %q", got)
	}
}

func TestReAddWithANewSandboxDeletesTheOldOneAndWaitsForIt(t *testing.T) {
	for _, tc := range []struct {
		name             string
		container, netns string
	}{
		{"new container", "c2", "/ns/web"},
		{"new netns", "c1", "/ns/web-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, "")
			mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
			// A slow delete shows whether the add waits for it.
			env.loop.set(func(l *fakeLoop) { l.slowDelete = 100 * time.Millisecond })
			reply := mustSucceed(t, "re-add")(env.add(request("web", tc.container, tc.netns)))
			if got := reply.GetInterfaces()[0].GetSandbox(); got != tc.netns {
				t.Errorf("sandbox = %q", got)
			}
			newAdd := fmt.Sprintf("Add Pod default/web (container %s, netns %s)", tc.container, tc.netns)
			want := []string{
				"push Add Pod default/web (container c1, netns /ns/web)",
				"done Add Pod default/web (container c1, netns /ns/web): <nil>",
				"push Delete Pod default/web",
				"done Delete Pod default/web: <nil>",
				"push " + newAdd,
				"done " + newAdd + ": <nil>",
			}
			if got := env.loop.events(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if got, w := localPods(env.pm), "default/web "+tc.container+" "+tc.netns; got != w {
				t.Errorf("local pods = %q, want %q", got, w)
			}
		})
	}
}

func TestLateDeleteOfTheOldSandboxLeavesTheNewOneAlone(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web-1")))
	mustSucceed(t, "re-add")(env.add(request("web", "c2", "/ns/web-2")))
	mustSucceed(t, "delete of the old sandbox")(env.del(request("web", "c1", "/ns/web-1")))
	if got := localPods(env.pm); got != "default/web c2 /ns/web-2" {
		t.Errorf("local pods = %q", got)
	}
	if n := strings.Count(strings.Join(env.loop.events(), "\n"), "push Delete"); n != 1 {
		t.Errorf("%d DeletePod events, want only the one of the re-add: %q", n, env.loop.events())
	}
}

func TestObsoletePodReportedByTheLoopIsDeletedAndAddedAgain(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	// The loop sees an obsolete pod that the server's pre-check did not (a race).
	once := false
	env.loop.set(func(l *fakeLoop) {
		l.failAdd = func(ev *AddPod) error {
			if once {
				return nil
			}
			once = true
			return fmt.Errorf("add pod %s: %w", ev.Pod, ErrObsoletePod)
		}
	})
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	got := strings.Join(env.loop.events(), "\n")
	for _, w := range []string{"push Delete Pod default/web", "done Delete Pod default/web: <nil>"} {
		if !strings.Contains(got, w) {
			t.Errorf("events lack %q:\n%s", w, got)
		}
	}
	if n := strings.Count(got, "push Add Pod"); n != 3 {
		t.Errorf("%d AddPod events, want 3:\n%s", n, got)
	}
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("local pods = %q", got)
	}
}

func TestAddWithoutPodArgumentsIsAnErrorNamingTheArgument(t *testing.T) {
	env := newEnv(t, "")
	for _, tc := range []struct{ args, missing string }{
		{"K8S_POD_NAMESPACE=default", "K8S_POD_NAME"},
		{"K8S_POD_NAME=web", "K8S_POD_NAMESPACE"},
		{"", "K8S_POD_NAME"},
	} {
		req := request("web", "c1", "/ns/web")
		req.ExtraArguments = tc.args
		reply, err := env.add(req)
		if err != nil {
			t.Fatalf("args %q: %v", tc.args, err)
		}
		if reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), "missing CNI argument "+tc.missing) {
			t.Errorf("args %q: reply %v", tc.args, reply)
		}
	}
	if ev := env.loop.events(); len(ev) != 0 {
		t.Errorf("events pushed: %q", ev)
	}
	if got := testutil.ToFloat64(env.pm.metrics.requests.WithLabelValues(kindAdd, resultError)); got != 3 {
		t.Errorf("add/error requests = %v", got)
	}
}

func TestAddWithoutContainerOrNetnsIsAnError(t *testing.T) {
	env := newEnv(t, "")
	for _, req := range []*cni.CNIRequest{request("web", "", "/ns/web"), request("web", "c1", "")} {
		reply, err := env.add(req)
		if err != nil || reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), "default/web") {
			t.Errorf("add %v: %v, %v", req, reply, err)
		}
	}
}

// TestAddWithANetnsPathLongerThanVPPTakesIsRefusedNamingItAndTheLimit: VPP's
// tap_create_v3 takes the TAP's host namespace in a 64-byte string; a longer path (as a
// runtime makes of a long pod name) is refused with an error naming the path and the
// limit, before any event, instead of being cut by VPP; 63 bytes are taken.
func TestAddWithANetnsPathLongerThanVPPTakesIsRefusedNamingItAndTheLimit(t *testing.T) {
	env := newEnv(t, "")
	long := "/var/run/netns/" + strings.Repeat("n", MaxNetnsPathLen-len("/var/run/netns/")+1)
	reply, err := env.add(request("web", "c1", long))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CNI_NETNS", long, fmt.Sprintf("%d bytes", len(long)), "63 bytes"} {
		if reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), want) {
			t.Errorf("add into %s: reply %v, want an invalid result naming %q", long, reply, want)
		}
	}
	if ev := env.loop.events(); len(ev) != 0 {
		t.Errorf("events pushed: %q", ev)
	}
	fits := long[:MaxNetnsPathLen]
	reply, err = env.add(request("web", "c1", fits))
	if err != nil || reply.GetResult() != cni.ResultOK {
		t.Errorf("add into %s (%d bytes): %v, %v", fits, len(fits), reply, err)
	}
}

// TestAddIntoTheNodesOwnNamespaceIsRefusedBeforeAnything: a request naming the
// namespace the agent runs in (the node's) gets an error naming it, and no event is
// pushed, so nothing is wired there; another name of the same namespace is caught too.
func TestAddIntoTheNodesOwnNamespaceIsRefusedBeforeAnything(t *testing.T) {
	env := newEnv(t, "")
	env.pm.isAgentNetns = isAgentNetns
	own := fmt.Sprintf("/proc/%d/ns/net", os.Getpid())
	for _, netns := range []string{"/proc/self/ns/net", own} {
		reply, err := env.add(request("web", "c1", netns))
		if err != nil {
			t.Fatal(err)
		}
		if reply.GetResult() != cni.ResultInvalid || !strings.Contains(reply.GetError(), "network namespace "+netns+" is the node's own") {
			t.Errorf("add into %s: reply %v", netns, reply)
		}
	}
	if ev := env.loop.events(); len(ev) != 0 {
		t.Errorf("events pushed: %q", ev)
	}
	if isAgentNetns("/ns/does-not-exist") || isAgentNetns("/proc/self/ns/mnt") {
		t.Error("a missing path or another namespace file taken for the agent's network namespace")
	}
}

func TestHandlerFailureIsAnErrorReplyAndThePodIsForgotten(t *testing.T) {
	env := newEnv(t, "")
	env.loop.set(func(l *fakeLoop) {
		l.failAdd = func(*AddPod) error { return errors.New("no IP left in 10.1.1.0/24") }
	})
	reply, err := env.add(request("web", "c1", "/ns/web"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.GetResult() != cni.ResultTryAgain || reply.GetError() != "add pod default/web (container c1): no IP left in 10.1.1.0/24" {
		t.Errorf("reply = %v", reply)
	}
	if got := localPods(env.pm); got != "" {
		t.Errorf("local pods after the failed add = %q", got)
	}
	if got := statePods(t, env.stateFile); got != "" {
		t.Errorf("state file after the failed add = %q", got)
	}
}

func TestEventLoopRefusingTheEventIsUnavailable(t *testing.T) {
	env := newEnv(t, "")
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	env.loop.set(func(l *fakeLoop) { l.refuse = errors.New("controller: event queue is full") })
	for _, tc := range []struct {
		name string
		call func(*cni.CNIRequest) (*cni.CNIReply, error)
		req  *cni.CNIRequest
	}{
		{"add", env.add, request("db", "c2", "/ns/db")},
		{"delete", env.del, request("web", "c1", "/ns/web")},
	} {
		_, err := tc.call(tc.req)
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "event queue is full") {
			t.Errorf("%s: %v, want Unavailable naming the loop's error", tc.name, err)
		}
	}
	if got := testutil.ToFloat64(env.pm.metrics.requests.WithLabelValues(kindAdd, resultUnavailable)); got != 1 {
		t.Errorf("add/unavailable requests = %v", got)
	}
}

func TestRequestNotProcessedInTimeIsDeadlineExceeded(t *testing.T) {
	env := newEnv(t, "", withTimeout(200*time.Millisecond))
	release := make(chan struct{})
	env.loop.set(func(l *fakeLoop) { l.hold = release })
	start := time.Now()
	_, err := env.add(request("web", "c1", "/ns/web"))
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "not processed within 200ms") {
		t.Errorf("add: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the request took %v", d)
	}
	if got := testutil.ToFloat64(env.pm.metrics.requests.WithLabelValues(kindAdd, resultTimeout)); got != 1 {
		t.Errorf("add/timeout requests = %v", got)
	}
	// The loop catches up later: the event is processed, nobody waits for it any more.
	env.loop.set(func(l *fakeLoop) { l.hold = nil })
	close(release)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the late event processed", func() bool { return localPods(env.pm) != "" })
	if got := localPods(env.pm); got != "default/web c1 /ns/web" {
		t.Errorf("local pods = %q", got)
	}
}

func TestCloseAnswersWaitingRequestsAtOnce(t *testing.T) {
	env := newEnv(t, "")
	env.loop.set(func(l *fakeLoop) { l.hold = make(chan struct{}) })
	errc := make(chan error, 1)
	go func() {
		_, err := env.add(request("web", "c1", "/ns/web"))
		errc <- err
	}()
	// Wait until the event is pushed, then stop the agent.
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the event pushed", func() bool { return len(env.loop.events()) > 0 })
	start := time.Now()
	if err := env.pm.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := <-errc; status.Code(err) != codes.Unavailable {
		t.Errorf("waiting add: %v, want Unavailable", err)
	}
	if _, err := os.Stat(env.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v", err)
	}
}

func TestCheckAnswersFromTheLocalPods(t *testing.T) {
	env := newEnv(t, "", withNetnsCheck(netnsAlive))
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	mustSucceed(t, "check")(env.check(request("web", "c1", "/ns/web")))
	for _, tc := range []struct {
		req  *cni.CNIRequest
		want string
	}{
		{request("db", "c1", "/ns/web"), "check pod default/db (container c1): the agent has no such pod"},
		{request("web", "c2", "/ns/web"), "the agent has the pod with container c1"},
		{request("web", "c1", "/ns/other"), "the agent has the pod in netns /ns/web, not /ns/other"},
	} {
		reply, err := env.check(tc.req)
		if err != nil || reply.GetResult() != cni.ResultError || !strings.Contains(reply.GetError(), tc.want) {
			t.Errorf("check %v: %v, %v; want error %q", tc.req, reply, err, tc.want)
		}
	}
	if n := len(env.loop.events()); n != 2 {
		t.Errorf("check pushed events: %q", env.loop.events())
	}
}

func TestStaleSocketIsRemovedAndTheSocketIsPrivate(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "run", "cni.sock")
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	// A previous agent died and left its socket behind.
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	lis.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("stale socket not there: %v", err)
	}

	env := newEnv(t, dir)
	fi, err := os.Stat(env.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket mode = %v, want a socket with permissions 0700", fi.Mode())
	}
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
}

func TestSocketDirectoryIsCreated(t *testing.T) {
	dir := shortTempDir(t)
	env := newEnv(t, filepath.Join(dir, "a", "b"))
	if _, err := os.Stat(env.socket); err != nil {
		t.Fatal(err)
	}
}

func TestSocketPathHoldingAnotherFileIsAnError(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "cni.sock")
	if err := os.WriteFile(sock, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	loop := newFakeLoop()
	defer loop.close()
	pm := NewPlugin(Deps{Log: quietLog(), EventLoop: loop, Config: infra.StaticConfig{"socketPath": sock, "stateFile": ""}})
	err := pm.Init()
	if err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Init = %v, want an error about the file", err)
	}
	if data, _ := os.ReadFile(sock); string(data) != "precious" {
		t.Errorf("the file was touched: %q", data)
	}
}

func TestRequestsForOnePodAreSerialised(t *testing.T) {
	env := newEnv(t, "")
	// Two adds of the same pod at once, with different containers: whichever comes
	// second deletes the first; they never interleave.
	env.loop.set(func(l *fakeLoop) { l.slowDelete = 20 * time.Millisecond })
	errc := make(chan error, 2)
	for _, c := range []string{"c1", "c2"} {
		go func(c string) {
			reply, err := env.add(request("web", c, "/ns/"+c))
			if err == nil && reply.GetResult() != cni.ResultOK {
				err = errors.New(reply.GetError())
			}
			errc <- err
		}(c)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	ev := env.loop.events()
	// Every push is followed by its done before the next push.
	for i := 0; i+1 < len(ev); i += 2 {
		if !strings.HasPrefix(ev[i], "push ") || ev[i+1] != "done "+strings.TrimPrefix(ev[i], "push ")+": <nil>" {
			t.Fatalf("interleaved events:\n%s", strings.Join(ev, "\n"))
		}
	}
	if len(ev) != 6 {
		t.Errorf("events:\n%s", strings.Join(ev, "\n"))
	}
}

func TestClientCancelEndsTheWait(t *testing.T) {
	env := newEnv(t, "")
	env.loop.set(func(l *fakeLoop) { l.hold = make(chan struct{}) })
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := env.client.Add(ctx, request("web", "c1", "/ns/web"))
	if c := status.Code(err); c != codes.DeadlineExceeded && c != codes.Canceled {
		t.Errorf("add = %v", err)
	}
}

func TestCheckAsksWhetherThePodIsWired(t *testing.T) {
	env := newEnv(t, "", withNetnsCheck(netnsAlive))
	broken := errors.New("the pod is not wired (no IP, or its ADD did not complete)")
	var asked []podmodel.ID
	env.pm.CheckPodWiring = func(id podmodel.ID) error {
		asked = append(asked, id)
		if id.Name == "web" {
			return broken
		}
		return nil
	}
	mustSucceed(t, "add")(env.add(request("web", "c1", "/ns/web")))
	mustSucceed(t, "add")(env.add(request("db", "c2", "/ns/db")))
	mustSucceed(t, "check")(env.check(request("db", "c2", "/ns/db")))
	reply, err := env.check(request("web", "c1", "/ns/web"))
	want := "check pod default/web (container c1): the pod is not wired"
	if err != nil || reply.GetResult() != cni.ResultError || !strings.Contains(reply.GetError(), want) {
		t.Errorf("check of an unwired pod = %v, %v; want error %q", reply, err, want)
	}
	if len(asked) != 2 {
		t.Errorf("wiring asked for %v", asked)
	}
}

// TestRequestsTheStoppingLoopDropsAreTryAgain: while the agent stops, the controller
// ends the queued events unprocessed (ErrClosedController, or ErrEventLoopIsAborting
// after a fatal error). Nothing was done, so ADD, re-ADD and DEL are answered
// Unavailable, which contiv-cni turns into "try again later" (11), never a failure of
// the pod (999).
func TestRequestsTheStoppingLoopDropsAreTryAgain(t *testing.T) {
	for _, drop := range []error{controller.ErrClosedController, controller.ErrEventLoopIsAborting} {
		env := newEnv(t, "")
		mustSucceed(t, "add")(env.add(request("web", "c1", "/netns/web")))
		env.loop.set(func(l *fakeLoop) { l.drop = drop })
		for _, tc := range []struct {
			name string
			call func() (*cni.CNIReply, error)
		}{
			{"add", func() (*cni.CNIReply, error) { return env.add(request("db", "c2", "/netns/db")) }},
			{"add of a new sandbox", func() (*cni.CNIReply, error) { return env.add(request("web", "c3", "/netns/web2")) }},
			{"del", func() (*cni.CNIReply, error) { return env.del(request("web", "c1", "/netns/web")) }},
		} {
			reply, err := tc.call()
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), drop.Error()) {
				t.Errorf("%v: %s = %v, %v; want Unavailable naming the loop's error", drop, tc.name, reply, err)
			}
		}
		if got := localPods(env.pm); !strings.Contains(got, "default/web") {
			t.Errorf("%v: local pods %s: the pod the DEL did not delete is gone", drop, got)
		}
	}
}

func TestCheckOfAGoneNetnsIsUnknownContainer(t *testing.T) {
	var gone atomic.Bool
	env := newEnv(t, "", withNetnsCheck(func(string, uint64) (netnsVerdict, string) {
		if gone.Load() {
			return netnsGone, "test: deleted"
		}
		return netnsPresent, ""
	}))
	mustSucceed(t, "add")(env.add(request("web", "c1", "/netns/web")))
	mustSucceed(t, "check")(env.check(request("web", "c1", "/netns/web")))
	gone.Store(true)
	reply, err := env.check(request("web", "c1", "/netns/web"))
	if err != nil || reply.GetResult() != cni.ResultUnknownContainer || !strings.Contains(reply.GetError(), "network namespace /netns/web is gone") {
		t.Errorf("check = %v, %v; want ResultUnknownContainer naming the namespace", reply, err)
	}
}
