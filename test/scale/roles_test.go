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
	"slices"
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

// mappingExpect is one condition on the simulator's service tables (the NAT44
// mappings, or the cnat translations): the backends of Proto IP:Port include Backend
// (an IP), or, with Absent, there is no mapping or translation.
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
	tables, err := newServiceTables(sim, os.Getenv(simRendererEnv))
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale vppsim: %v\n", err)
		return 1
	}
	changes := newChangeNotifier()
	sim.SetRequestHook(func(name string) {
		if strings.HasPrefix(name, tables.prefix) {
			changes.changed()
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
		_ = json.NewEncoder(w).Encode(waitMappings(req.Context(), tables, changes, wr))
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

// changeNotifier tells waiters that the simulator executed a request of the service
// renderer's (NAT44 or cnat): changed closes the channel the waiters hold and starts a
// new one.
type changeNotifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newChangeNotifier() *changeNotifier { return &changeNotifier{ch: make(chan struct{})} }

// changed is called by the simulator's request hook, before the request's reply is
// sent.
func (n *changeNotifier) changed() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// next returns the channel closed by the next change.
func (n *changeNotifier) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// waitMappings waits until every expectation holds in the service tables, checking
// them in order and resuming at the first that failed (a NAT44 lookup of a missing
// mapping scans all mappings, so only one failing lookup is made per check). A single
// expectation (one Endpoints change, timed to the request that completes it) is
// checked after every request of the renderer's the simulator executes; more (the
// burst, the first resync) are checked every Poll.
func waitMappings(ctx context.Context, tables serviceTables, changes *changeNotifier, wr waitRequest) waitReply {
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
		backends := tables.lookup(p.e.Proto, p.ip, p.e.Port)
		if p.e.Absent {
			return len(backends) == 0
		}
		return slices.Contains(backends, p.backend)
	}
	next := 0
	expired := time.NewTimer(wr.Timeout)
	defer expired.Stop()
	// Several expectations are checked Poll after the previous check ended (a check
	// for a missing mapping scans every mapping under the simulator's lock: checking
	// back to back would hold VPP's state away from the agent); a single expectation
	// is checked after every request of the renderer's instead.
	var poll *time.Timer
	if len(ps) > 1 {
		poll = time.NewTimer(wr.Poll)
		defer poll.Stop()
	}
	for {
		changed := changes.next() // before the check: a change during it is not missed
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

// simRendererEnv tells the simulator role the agent's serviceRenderer ("cnat", or
// NAT44 when empty or "nat44"): which of its tables the waits read.
const simRendererEnv = "CONTIV_SCALE_SIM_RENDERER"

// serviceTables reads the simulator's service translations of one renderer.
type serviceTables struct {
	// prefix starts the names of the renderer's requests (a request may change
	// what lookup answers).
	prefix string
	// lookup returns the backend addresses of traffic of protocol proto to ip:port,
	// nil when nothing translates it.
	lookup func(proto uint8, ip netip.Addr, port uint16) []netip.Addr
}

// cnatInspector is the simulator's lookup of one cnat translation by its key
// (vppsim.Sim.LookupCNAT): one map lookup, where cnat_translation_dump would list
// every translation (110,000 at the reference setup) on each check.
type cnatInspector interface {
	LookupCNAT(proto uint8, vip netip.Addr, port uint16) []netip.AddrPort
}

// newServiceTables returns the tables of renderer: NAT44's static and LB mappings
// (Sim.LookupDNAT), or cnat's translations (Sim.LookupCNAT).
func newServiceTables(sim *vppsim.Sim, renderer string) (serviceTables, error) {
	addrs := func(aps []netip.AddrPort) []netip.Addr {
		out := make([]netip.Addr, len(aps))
		for i, ap := range aps {
			out[i] = ap.Addr()
		}
		return out
	}
	switch renderer {
	case "", "nat44":
		return serviceTables{prefix: "nat44_", lookup: func(proto uint8, ip netip.Addr, port uint16) []netip.Addr {
			bs := sim.LookupDNAT(proto, ip, port)
			out := make([]netip.Addr, len(bs))
			for i, b := range bs {
				out[i] = b.Addr.Addr()
			}
			return out
		}}, nil
	case "cnat":
		// Asserted rather than called: the harness builds with a simulator that does
		// not have it yet, and then only the cnat runs fail.
		in, ok := any(sim).(cnatInspector)
		if !ok {
			return serviceTables{}, fmt.Errorf("%s=cnat: this simulator has no LookupCNAT (pkg/vppsim inspect.go) "+
				"to read a cnat translation by its VIP, port and protocol", simRendererEnv)
		}
		return serviceTables{prefix: "cnat_", lookup: func(proto uint8, ip netip.Addr, port uint16) []netip.Addr {
			return addrs(in.LookupCNAT(proto, ip, port))
		}}, nil
	}
	return serviceTables{}, fmt.Errorf("%s=%q: want nat44 or cnat", simRendererEnv, renderer)
}

// errRoleExited is returned when a role process exits before it is ready.
var errRoleExited = errors.New("exited before it was ready")
