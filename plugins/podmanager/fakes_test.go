package podmanager

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager/cni"
)

// fakeLoop plays the controller with the pod manager as its first handler, followed by
// a pretend ipnet: it processes one event at a time on its own goroutine, calls the pod
// manager like the controller does (Update, and Revert when a later handler fails),
// fills the AddPod's interfaces and routes, and records what happened in order.
type fakeLoop struct {
	pm *Plugin

	queue    chan api.Event
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex
	journal []string // "push <event>", "done <event>: <err>"
	// refuse, when set, is returned by PushEvent.
	refuse error
	// drop, when set, ends every event taken with it, unprocessed (as the controller's
	// Close drains its queue).
	drop error
	// hold keeps the events in the queue unprocessed until released.
	hold chan struct{}
	// failAdd is the pretend ipnet's verdict on an AddPod (nil: success).
	failAdd func(*AddPod) error
	// slowDelete delays the processing of every DeletePod.
	slowDelete time.Duration
	nextIP     int
	// dualStack makes the pretend ipnet give every pod an IPv6 address too, after the
	// IPv4 one (fd00:10:1:1::<n>/128, gateway fd00:10:1:1::1).
	dualStack bool
}

func newFakeLoop() *fakeLoop {
	l := &fakeLoop{queue: make(chan api.Event, 100), stop: make(chan struct{}), nextIP: 2}
	l.wg.Add(1)
	go l.run()
	return l
}

func (l *fakeLoop) close() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// PushEvent implements api.EventLoop.
func (l *fakeLoop) PushEvent(ev api.Event) error {
	l.mu.Lock()
	refuse := l.refuse
	if refuse == nil {
		l.journal = append(l.journal, "push "+ev.String())
	}
	l.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	select {
	case l.queue <- ev:
		return nil
	default:
		return fmt.Errorf("fake loop: queue full")
	}
}

func (l *fakeLoop) run() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case ev := <-l.queue:
			l.mu.Lock()
			hold := l.hold
			l.mu.Unlock()
			if hold != nil {
				select {
				case <-hold:
				case <-l.stop:
					return
				}
			}
			l.mu.Lock()
			drop := l.drop
			l.mu.Unlock()
			err := drop
			if drop == nil {
				err = l.process(ev)
			}
			l.mu.Lock()
			l.journal = append(l.journal, fmt.Sprintf("done %s: %v", ev, err))
			l.mu.Unlock()
			ev.Done(err)
		}
	}
}

func (l *fakeLoop) process(ev api.Event) error {
	if !l.pm.HandlesEvent(ev) {
		return nil
	}
	if ev.Method() != api.Update {
		return l.pm.Resync(ev, api.KubeStateData{}, 1, nil)
	}
	switch e := ev.(type) {
	case *AddPod:
		if _, err := l.pm.Update(e, nil); err != nil {
			return err
		}
		l.mu.Lock()
		fail := l.failAdd
		ip := l.nextIP
		l.nextIP++
		l.mu.Unlock()
		if fail != nil {
			if err := fail(e); err != nil {
				if rerr := l.pm.Revert(e); rerr != nil {
					return rerr
				}
				return err
			}
		}
		e.Interfaces = []PodInterface{{
			HostName: "eth0",
			MAC:      fmt.Sprintf("02:fe:00:00:00:%02x", ip),
			IPAddresses: []*IPWithGateway{{
				Address: &net.IPNet{IP: net.IPv4(10, 1, 1, byte(ip)).To4(), Mask: net.CIDRMask(32, 32)},
				Gateway: net.IPv4(10, 1, 1, 1).To4(),
			}},
		}}
		e.Routes = []Route{{
			Network: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
			Gateway: net.IPv4(10, 1, 1, 1).To4(),
		}}
		l.mu.Lock()
		dual := l.dualStack
		l.mu.Unlock()
		if dual {
			gw6 := net.ParseIP("fd00:10:1:1::1")
			e.Interfaces[0].IPAddresses = append(e.Interfaces[0].IPAddresses, &IPWithGateway{
				Address: &net.IPNet{IP: net.ParseIP(fmt.Sprintf("fd00:10:1:1::%x", ip)), Mask: net.CIDRMask(128, 128)},
				Gateway: gw6,
			})
			e.Routes = append(e.Routes, Route{Network: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}, Gateway: gw6})
		}
		return nil
	case *DeletePod:
		l.mu.Lock()
		d := l.slowDelete
		l.mu.Unlock()
		time.Sleep(d) // real time: a slow delete, for the adds to wait out or not
		_, err := l.pm.Update(e, nil)
		return err
	}
	return nil
}

func (l *fakeLoop) events() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.journal...)
}

func (l *fakeLoop) set(f func(l *fakeLoop)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// testEnv is a pod manager serving on a real unix socket, a fake loop and a gRPC client.
type testEnv struct {
	t         *testing.T
	dir       string
	socket    string
	stateFile string
	loop      *fakeLoop
	pm        *Plugin
	reg       *prometheus.Registry
	client    cni.RemoteCNIClient
	conn      *grpc.ClientConn
}

// shortTempDir returns a temporary directory with a path short enough for unix sockets.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// envOption adjusts a test environment before Init.
type envOption func(env *testEnv, cfg infra.StaticConfig)

func withTimeout(d time.Duration) envOption {
	return func(_ *testEnv, cfg infra.StaticConfig) { cfg["requestTimeout"] = d.String() }
}

// withNetnsCheck replaces the network namespace examination (tests without root).
func withNetnsCheck(check func(path string, inode uint64) (netnsVerdict, string)) envOption {
	return func(env *testEnv, _ infra.StaticConfig) {
		env.pm.checkNetns = check
		env.pm.netnsInode = func(string) uint64 { return 0 }
	}
}

func withDeps(f func(d *Deps)) envOption {
	return func(env *testEnv, _ infra.StaticConfig) { f(&env.pm.Deps) }
}

// newEnv starts a pod manager whose socket lies in a new directory under dir ("" = a
// new temporary directory) with its state file beside it.
func newEnv(t *testing.T, dir string, opts ...envOption) *testEnv {
	t.Helper()
	if dir == "" {
		dir = shortTempDir(t)
	}
	env := &testEnv{
		t: t, dir: dir,
		socket:    filepath.Join(dir, "run", "cni.sock"),
		stateFile: filepath.Join(dir, "state", "pods.json"),
		loop:      newFakeLoop(),
		reg:       prometheus.NewRegistry(),
	}
	cfg := infra.StaticConfig{"socketPath": env.socket, "stateFile": env.stateFile, "cniCacheDir": ""}
	env.pm = NewPlugin(Deps{Log: quietLog(), Config: cfg, EventLoop: env.loop, Registerer: env.reg})
	env.loop.pm = env.pm
	for _, o := range opts {
		o(env, cfg)
	}
	if err := env.pm.Init(); err != nil {
		env.loop.close()
		t.Fatalf("Init: %v", err)
	}
	if err := env.pm.AfterInit(); err != nil {
		t.Fatalf("AfterInit: %v", err)
	}
	conn, err := grpc.NewClient("unix://"+env.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	env.conn = conn
	env.client = cni.NewRemoteCNIClient(conn)
	t.Cleanup(env.close)
	return env
}

func (env *testEnv) close() {
	if env.conn != nil {
		env.conn.Close()
		env.conn = nil
	}
	if env.pm != nil {
		env.pm.Close()
	}
	env.loop.close()
}

// request builds a CNI request for a pod of namespace "default".
func request(pod, container, netns string) *cni.CNIRequest {
	return &cni.CNIRequest{
		Version:          "1.1.0",
		ContainerId:      container,
		NetworkNamespace: netns,
		InterfaceName:    "eth0",
		ExtraArguments:   "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=" + pod + ";K8S_POD_INFRA_CONTAINER_ID=" + container,
	}
}

func (env *testEnv) call(f func(ctx context.Context) (*cni.CNIReply, error)) (*cni.CNIReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return f(ctx)
}

func (env *testEnv) add(req *cni.CNIRequest) (*cni.CNIReply, error) {
	return env.call(func(ctx context.Context) (*cni.CNIReply, error) { return env.client.Add(ctx, req) })
}

func (env *testEnv) del(req *cni.CNIRequest) (*cni.CNIReply, error) {
	return env.call(func(ctx context.Context) (*cni.CNIReply, error) { return env.client.Delete(ctx, req) })
}

func (env *testEnv) check(req *cni.CNIRequest) (*cni.CNIReply, error) {
	return env.call(func(ctx context.Context) (*cni.CNIReply, error) { return env.client.Check(ctx, req) })
}

// mustSucceed returns a function that fails the test unless the call whose results it
// is given returned a successful reply: mustSucceed(t, "add")(env.add(req)).
func mustSucceed(t *testing.T, what string) func(*cni.CNIReply, error) *cni.CNIReply {
	return func(reply *cni.CNIReply, err error) *cni.CNIReply {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if reply.GetResult() != cni.ResultOK {
			t.Fatalf("%s: result %d, error %q", what, reply.GetResult(), reply.GetError())
		}
		return reply
	}
}

// localPods renders the pod manager's local pods as sorted "ns/name container netns".
func localPods(pm *Plugin) string {
	var s []string
	for id, p := range pm.GetLocalPods() {
		if p.ID != id {
			s = append(s, "ID MISMATCH "+id.String())
		}
		s = append(s, fmt.Sprintf("%s %s %s", id, p.ContainerID, p.NetworkNamespace))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

// statePods renders the state file's pods like localPods.
func statePods(t *testing.T, path string) string {
	t.Helper()
	load, err := readState(path)
	if err != nil {
		t.Fatalf("state file: %v", err)
	}
	if load.TornTail != "" {
		t.Errorf("state file: %s", load.TornTail)
	}
	var s []string
	for _, r := range load.Pods {
		s = append(s, fmt.Sprintf("%s %s %s", r.id(), r.ContainerID, r.NetworkNamespace))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}
