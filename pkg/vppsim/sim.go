package vppsim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// DefaultSocketPath is where VPP, and the simulator by default, serve the
// binary API.
const DefaultSocketPath = "/run/vpp/api.sock"

// VPPVersion is the version reported by show_version; it is the VPP release
// the pinned govpp binapi was generated from.
const VPPVersion = "25.10-release"

// Options configure a simulator.
type Options struct {
	// SocketPath is the unix socket to serve; DefaultSocketPath if empty.
	// Its directory is created if missing; a stale socket file is replaced.
	SocketPath string
	// NICs are the DPDK-like physical interfaces present at start, e.g.
	// "GigabitEthernet0/8/0". They get sw_if_index 1, 2, ... in this order.
	// "NAME=LINUXIF" binds the NIC to an existing Linux interface of the
	// simulator's network namespace (root only): frames move through a raw
	// socket on it (made promiscuous); the NIC has a MAC of its own,
	// 08:00:27 and the last three bytes of the Linux interface's MAC, so
	// that the namespace's Linux stack ignores its frames and NICs bound to
	// different links differ, as real NICs do. A NIC without a Linux
	// interface has no wire (frames can still be injected with
	// InjectFrame) and the MAC 08:00:27:5a:00:0N (N = its position).
	NICs []string
	// Linux makes TAP creation also create the Linux end of the TAP (root
	// only; see the package documentation).
	Linux bool
	// Log receives the simulator's logs; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
	// FailProbability is the share (0..1) of state-changing requests that
	// fail with RandomFailRetval (see SetFailProbability); 0 = none.
	FailProbability float64
	// FailSeed seeds the random failures, so a run can be reproduced.
	FailSeed int64
	// Clock is the simulator's time source (NAT session timeouts,
	// last_heard, traces, ARP throttling); nil means the real clock.
	Clock clock.PassiveClock
	// StatsSocketPath is where the stats segment is served (VPP's
	// statseg { socket-name }, /run/vpp/stats.sock; DefaultStatsSocketPath
	// beside the API socket is what cmd/vpp-sim uses). Empty: no stats
	// segment, and the forwarding updates none (stats.go).
	StatsSocketPath string
	// StatsPerNodeCounters publishes the graph nodes' runtime counters
	// (/sys/node/{names,clocks,vectors,calls,suspends}, /nodes/<node>/*), as
	// VPP does with statseg { per-node-counters on }; off by default, as in
	// VPP. Needs StatsSocketPath (stats_nodes.go).
	StatsPerNodeCounters bool
}

// DefaultStatsSocketPath is where VPP serves its stats segment.
const DefaultStatsSocketPath = "/run/vpp/stats.sock"

// Sim is a VPP simulator. Create it with New, serve with Start and stop it
// with Close. All methods are safe for concurrent use.
type Sim struct {
	opts     Options
	log      logrus.FieldLogger
	table    *msgTable
	handlers []*handler     // by message ID
	counters []atomic.Int64 // messages received, by message ID
	host     hostNet        // Linux side of TAPs; nil unless Options.Linux
	clock    clock.PassiveClock
	txHook   TxHook // guarded by mu
	reqHook  atomic.Pointer[RequestHook]
	nicNames []string
	nicLinks map[string]string // NIC name -> Linux interface it is bound to
	portWG   sync.WaitGroup    // port reader goroutines
	// nicsBound (guarded by mu) tells that Start bound the NICs to their
	// Linux interfaces, so a Restart binds the new state's NICs again.
	nicsBound bool

	// mu guards st and the state reachable from it. Handlers run with mu
	// held; no socket I/O is done while it is held.
	mu sync.Mutex
	st *state
	// seg is the stats segment of the running VPP (nil without
	// Options.StatsSocketPath) and segSrv serves it; both guarded by mu and
	// replaced by Restart.
	seg    *statseg.Segment
	segSrv *statseg.Server

	faultsMu sync.Mutex
	faults   map[uint16]*fault
	faultsOn atomic.Bool
	random   randomFaults

	// connMu guards the listener and connection bookkeeping. Lock order:
	// mu before connMu.
	connMu     sync.Mutex
	ln         *net.UnixListener
	conns      map[*conn]struct{}
	byIndex    map[uint32]*conn
	nextClient uint32
	started    bool
	closed     bool
	done       chan struct{}
	wg         sync.WaitGroup

	// epoch is incremented whenever connections are dropped; a connection
	// of an older epoch is dead and its pending requests are discarded.
	epoch atomic.Uint64
}

// RequestHook sees every request the simulator executed, by message name
// (e.g. "acl_del"), after its handler ran and the state lock was released
// and before its reply is sent: the client still waits, so the state the
// hook reads with the inspection methods (Interfaces, InterfaceACLs, ...;
// not the API, which waits for the reply) is exactly what the request left.
// Requests failed by an injected fault are not seen. It runs on the
// connection's goroutine.
type RequestHook func(name string)

// SetRequestHook installs (or, with nil, removes) the hook that sees every
// executed request.
func (s *Sim) SetRequestHook(h RequestHook) {
	if h == nil {
		s.reqHook.Store(nil)
		return
	}
	s.reqHook.Store(&h)
}

// New creates a simulator in VPP's start state. It does not touch the
// file system or the network until Start.
func New(opts Options) (*Sim, error) {
	if opts.SocketPath == "" {
		opts.SocketPath = DefaultSocketPath
	}
	if opts.StatsPerNodeCounters && opts.StatsSocketPath == "" {
		return nil, fmt.Errorf("vppsim: StatsPerNodeCounters=true needs a stats segment, but StatsSocketPath is empty")
	}
	seen := map[string]bool{"local0": true}
	var nicNames []string
	nicLinks := map[string]string{}
	for _, spec := range opts.NICs {
		nic, link, bound := strings.Cut(spec, "=")
		if nic == "" || len(nic) > 63 {
			return nil, fmt.Errorf("vppsim: invalid NIC name %q", nic)
		}
		if bound && (link == "" || len(link) > 15) {
			return nil, fmt.Errorf("vppsim: NIC %q: invalid Linux interface name %q", nic, link)
		}
		if seen[nic] {
			return nil, fmt.Errorf("vppsim: duplicate interface name %q", nic)
		}
		seen[nic] = true
		nicNames = append(nicNames, nic)
		if bound {
			nicLinks[nic] = link
		}
	}
	log := infra.LoggerOr(opts.Log, "vpp-sim")
	table, err := sharedMsgTable()
	if err != nil {
		return nil, fmt.Errorf("vppsim: build message table: %w", err)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &Sim{
		nicNames: nicNames,
		nicLinks: nicLinks,
		clock:    clk,
		opts:     opts,
		log:      log.WithField("component", "vpp-sim"),
		table:    table,
		counters: make([]atomic.Int64, len(table.byID)),
		faults:   map[uint16]*fault{},
		conns:    map[*conn]struct{}{},
		byIndex:  map[uint32]*conn{},
		done:     make(chan struct{}),
	}
	if opts.Linux {
		h, err := newHostNet(s.log)
		if err != nil {
			return nil, fmt.Errorf("vppsim: linux mode: %w", err)
		}
		s.host = h
	}
	s.handlers = registerHandlers(table)
	if err := s.random.configure(opts.FailProbability, opts.FailSeed); err != nil {
		return nil, err
	}
	if err := s.newSegment(); err != nil {
		return nil, err
	}
	s.st = newState(s)
	return s, nil
}

// SocketPath returns the socket the simulator serves.
func (s *Sim) SocketPath() string { return s.opts.SocketPath }

// Start listens on the socket and serves clients in the background.
func (s *Sim) Start() error {
	// NICs are bound before the connection lock is taken (lock order: mu
	// before connMu); Close releases them whatever happens next.
	if err := s.bindNICs(); err != nil {
		return err
	}
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if s.closed {
		return errors.New("vppsim: start: simulator is closed")
	}
	if s.started {
		return errors.New("vppsim: start: already started")
	}
	path := s.opts.SocketPath
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("vppsim: create socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("vppsim: %s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("vppsim: remove stale socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("vppsim: listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	s.mu.Lock()
	err = s.serveStats()
	s.mu.Unlock()
	if err != nil {
		_ = ln.Close()
		return err
	}
	s.ln = ln
	s.started = true
	s.wg.Add(1)
	go s.acceptLoop(ln)
	s.log.WithFields(logrus.Fields{"socket": path, "messages": len(s.table.entries)}).Info("VPP simulator listening")
	return nil
}

// Close stops serving, drops every client, removes the socket and releases
// the Linux resources it created. It waits for all goroutines to end.
func (s *Sim) Close() error {
	s.connMu.Lock()
	if s.closed {
		s.connMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	for c := range s.conns {
		c.close()
	}
	s.connMu.Unlock()
	s.wg.Wait()

	s.mu.Lock()
	s.st.releaseHost()
	s.closeStats()
	s.mu.Unlock()
	s.portWG.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("vppsim: close listener: %w", err)
	}
	return nil
}

// DropConnections closes every client connection, as if VPP had closed
// them; state is kept. Clients may reconnect at once.
func (s *Sim) DropConnections() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.epoch.Add(1)
	for c := range s.conns {
		c.close()
	}
	s.log.Info("dropped all client connections")
}

// Restart simulates a VPP crash and restart: all clients are disconnected
// and the state returns to the start state (local0 and the NICs only). The
// message table, fault injections and message counters are kept, and the
// socket keeps accepting connections.
func (s *Sim) Restart() {
	s.mu.Lock()
	s.st.releaseHost()
	s.restartStats()
	s.st = newState(s)
	if s.nicsBound {
		if err := s.st.attachNICs(); err != nil {
			s.log.WithError(err).Error("restart: cannot bind NICs to their Linux interfaces")
		}
	}
	s.DropConnections()
	s.mu.Unlock()
	s.log.Info("simulated VPP restart")
}

// fault is an injected failure and/or delay of one message type.
type fault struct {
	retval   int32
	failLeft int // >0: fail that many more times; <0: always; 0: no failure
	delay    time.Duration
}

// FailMessage makes the simulator answer the named request (VPP name, with
// or without CRC suffix, e.g. "ip_route_add_del") with the given retval
// without executing it, times times, or always if times <= 0. A failed
// dump sends no details. A retval of 0 removes the failure.
func (s *Sim) FailMessage(name string, retval int32, times int) error {
	info := s.table.lookupName(name)
	if info == nil {
		return fmt.Errorf("vppsim: fail message: unknown message %q", name)
	}
	if !isClientRequest(info) {
		return fmt.Errorf("vppsim: fail message: %s is not a request", name)
	}
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	f := s.faults[info.id]
	if f == nil {
		f = &fault{}
		s.faults[info.id] = f
	}
	f.retval = retval
	switch {
	case retval == 0:
		f.failLeft = 0
	case times <= 0:
		f.failLeft = -1
	default:
		f.failLeft = times
	}
	s.syncFaultsLocked(info.id)
	return nil
}

// DelayMessage delays the processing of every named request by d; d <= 0
// removes the delay. Requests that follow on the same connection wait too,
// as VPP handles the messages of a client in order.
func (s *Sim) DelayMessage(name string, d time.Duration) error {
	info := s.table.lookupName(name)
	if info == nil {
		return fmt.Errorf("vppsim: delay message: unknown message %q", name)
	}
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	f := s.faults[info.id]
	if f == nil {
		f = &fault{}
		s.faults[info.id] = f
	}
	f.delay = max(d, 0)
	s.syncFaultsLocked(info.id)
	return nil
}

// ClearFaults removes every injected failure and delay.
func (s *Sim) ClearFaults() {
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	clear(s.faults)
	s.faultsOn.Store(false)
}

func (s *Sim) syncFaultsLocked(id uint16) {
	if f := s.faults[id]; f != nil && f.failLeft == 0 && f.delay == 0 {
		delete(s.faults, id)
	}
	s.faultsOn.Store(len(s.faults) > 0)
}

// takeFault returns what to do with a message: the retval to fail it with
// (fail=false if it is to be processed) and how long to delay it.
func (s *Sim) takeFault(id uint16) (retval int32, fail bool, delay time.Duration) {
	if !s.faultsOn.Load() {
		return 0, false, 0
	}
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	f := s.faults[id]
	if f == nil {
		return 0, false, 0
	}
	delay = f.delay
	if f.failLeft != 0 {
		fail, retval = true, f.retval
		if f.failLeft > 0 {
			f.failLeft--
		}
	}
	s.syncFaultsLocked(id)
	return retval, fail, delay
}

// MessageCount returns how many requests of the named message (VPP name,
// with or without CRC) the simulator has received.
func (s *Sim) MessageCount(name string) int64 {
	info := s.table.lookupName(name)
	if info == nil {
		return 0
	}
	return s.counters[info.id].Load()
}

// MessageCounts returns the number of received messages per VPP message
// name, for every message received at least once.
func (s *Sim) MessageCounts() map[string]int64 {
	out := map[string]int64{}
	for id := range s.counters {
		if n := s.counters[id].Load(); n > 0 {
			out[s.table.byID[id].name] = n
		}
	}
	return out
}

// TotalMessageCount returns the number of messages received, excluding the
// control_ping health checks of clients.
func (s *Sim) TotalMessageCount() int64 {
	var n int64
	ping := s.table.byName["control_ping"].id
	for id := range s.counters {
		if uint16(id) != ping {
			n += s.counters[id].Load()
		}
	}
	return n
}

// ResetMessageCounts sets every message counter to zero.
func (s *Sim) ResetMessageCounts() {
	for id := range s.counters {
		s.counters[id].Store(0)
	}
}

// ImplementedMessages returns the sorted VPP names of the requests the
// simulator implements; every other request of the table is answered with
// VNET_API_ERROR_UNIMPLEMENTED.
func (s *Sim) ImplementedMessages() []string {
	var out []string
	for id, h := range s.handlers {
		if h != nil {
			out = append(out, s.table.byID[id].name)
		}
	}
	sort.Strings(out)
	return out
}

// ClientCount returns the number of connected clients.
func (s *Sim) ClientCount() int {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return len(s.conns)
}
