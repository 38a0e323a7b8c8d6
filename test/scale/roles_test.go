package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdembed"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
)

// roleEnv names the role this test binary plays when the harness starts it again.
const roleEnv = "CONTIV_SCALE_ROLE"

// readyPrefix starts the line a role prints on stdout once it serves.
const readyPrefix = "SCALE-READY "

// TestMain runs the tests, or a role (etcd, vppsim) when roleEnv says so.
func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "etcd":
		os.Exit(runEtcdRole(os.Getenv("CONTIV_SCALE_DIR")))
	case "vppsim":
		os.Exit(runSimRole(os.Getenv("CONTIV_SCALE_DIR")))
	default:
		fmt.Fprintf(os.Stderr, "scale: %s=%q: unknown role (etcd, vppsim)\n", roleEnv, os.Getenv(roleEnv))
		os.Exit(2)
	}
}

// runEtcdRole serves etcd with its data in dir until SIGTERM; it prints the client
// endpoint after readyPrefix.
func runEtcdRole(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := etcdembed.Start(etcdembed.Options{Dir: dir, ClientAddr: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale etcd: %v\n", err)
		return 1
	}
	fmt.Println(readyPrefix + srv.Endpoint())
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "scale etcd: close: %v\n", err)
		return 1
	}
	return 0
}

// Files of the simulator role in its directory.
const (
	simAPISocket = "api.sock"
	simCtlSocket = "ctl.sock"
	simNIC       = "GigabitEthernet0/8/0"
)

// mappingExpect is one condition on the simulator's NAT mappings: the backends of
// Proto IP:Port include Backend (an IP), or, with Absent, there is no mapping.
type mappingExpect struct {
	Proto   uint8  `json:"proto"`
	IP      string `json:"ip"`
	Port    uint16 `json:"port"`
	Backend string `json:"backend,omitempty"`
	Absent  bool   `json:"absent,omitempty"`
}

// waitRequest asks the simulator role to wait until every expectation holds.
type waitRequest struct {
	Expect  []mappingExpect `json:"expect"`
	Timeout time.Duration   `json:"timeout"`
	Poll    time.Duration   `json:"poll"`
}

// waitReply says when all expectations held (unix nanoseconds of the simulator's
// clock), or which did not.
type waitReply struct {
	DoneUnixNano int64  `json:"doneUnixNano"`
	Error        string `json:"error,omitempty"`
}

// runSimRole serves the simulated VPP API in dir/api.sock and a control server on
// dir/ctl.sock (GET /counts, POST /reset, POST /wait) until SIGTERM.
func runSimRole(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sim, err := vppsim.New(vppsim.Options{SocketPath: dir + "/" + simAPISocket, NICs: []string{simNIC},
		Linux: os.Getenv("CONTIV_SCALE_SIM_LINUX") == "1"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale vppsim: %v\n", err)
		return 1
	}
	if err := sim.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "scale vppsim: %v\n", err)
		return 1
	}
	defer sim.Close()
	ln, err := net.Listen("unix", dir+"/"+simCtlSocket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale vppsim: control socket: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, sim.MessageCounts())
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		sim.ResetMessageCounts()
		writeJSON(w, struct{}{})
	})
	nat := newNATNotifier()
	sim.SetRequestHook(func(name string) {
		if strings.HasPrefix(name, "nat44_") {
			nat.changed()
		}
	})
	mux.HandleFunc("POST /wait", func(w http.ResponseWriter, req *http.Request) {
		var wr waitRequest
		if err := json.NewDecoder(req.Body).Decode(&wr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// The headers tell the harness that the wait is in place (it writes to etcd
		// only then); the body, when the expectations hold.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		_ = json.NewEncoder(w).Encode(waitMappings(req.Context(), sim, nat, wr))
	})
	// CONTIV_SCALE_PROFILE: the harness profiles the simulator too (VPP's share of a
	// phase's time).
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(readyPrefix + sim.SocketPath())
	<-ctx.Done()
	_ = srv.Close()
	return 0
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// natNotifier tells waiters that the simulator executed a NAT request: changed closes
// the channel the waiters hold and starts a new one.
type natNotifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNATNotifier() *natNotifier { return &natNotifier{ch: make(chan struct{})} }

// changed is called by the simulator's request hook, before the request's reply is
// sent.
func (n *natNotifier) changed() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// next returns the channel closed by the next change.
func (n *natNotifier) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// waitMappings waits until every expectation holds, checking them in order and
// resuming at the first that failed (a lookup of a missing mapping scans all mappings,
// so only one failing lookup is made per check). A single expectation (one Endpoints
// change, timed to the request that completes it) is checked after every NAT request
// the simulator executes; more (the burst, the first resync) are checked every Poll.
func waitMappings(ctx context.Context, sim *vppsim.Sim, nat *natNotifier, wr waitRequest) waitReply {
	type parsed struct {
		e       mappingExpect
		ip      netip.Addr
		backend netip.Addr
	}
	ps := make([]parsed, len(wr.Expect))
	for i, e := range wr.Expect {
		ip, err := netip.ParseAddr(e.IP)
		if err != nil {
			return waitReply{Error: fmt.Sprintf("expect[%d].ip: %v", i, err)}
		}
		ps[i] = parsed{e: e, ip: ip}
		if !e.Absent {
			if ps[i].backend, err = netip.ParseAddr(e.Backend); err != nil {
				return waitReply{Error: fmt.Sprintf("expect[%d].backend: %v", i, err)}
			}
		}
	}
	if wr.Poll <= 0 {
		wr.Poll = 200 * time.Microsecond
	}
	holds := func(p parsed) bool {
		backends := sim.LookupDNAT(p.e.Proto, p.ip, p.e.Port)
		if p.e.Absent {
			return len(backends) == 0
		}
		for _, b := range backends {
			if b.Addr.Addr() == p.backend {
				return true
			}
		}
		return false
	}
	next := 0
	expired := time.NewTimer(wr.Timeout)
	defer expired.Stop()
	// Several expectations are checked Poll after the previous check ended (a check
	// for a missing mapping scans every mapping under the simulator's lock: checking
	// back to back would hold VPP's state away from the agent); a single expectation
	// is checked after every NAT request instead.
	var poll *time.Timer
	if len(ps) > 1 {
		poll = time.NewTimer(wr.Poll)
		defer poll.Stop()
	}
	for {
		changed := nat.next() // before the check: a change during it is not missed
		for next < len(ps) && holds(ps[next]) {
			next++
		}
		if next == len(ps) {
			return waitReply{DoneUnixNano: time.Now().UnixNano()}
		}
		var polled <-chan time.Time
		if poll != nil {
			changed = nil
			poll.Reset(wr.Poll)
			polled = poll.C
		}
		select {
		case <-changed:
		case <-polled:
		case <-expired.C:
			e := ps[next].e
			return waitReply{Error: fmt.Sprintf("not within %v: %d/%d hold; proto %d %s:%d backend %q absent %v does not",
				wr.Timeout, next, len(ps), e.Proto, e.IP, e.Port, e.Backend, e.Absent)}
		case <-ctx.Done():
			return waitReply{Error: "wait cancelled: " + ctx.Err().Error()}
		}
	}
}

// errRoleExited is returned when a role process exits before it is ready.
var errRoleExited = errors.New("exited before it was ready")
