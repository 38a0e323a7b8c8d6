package tracer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	podmodel "github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	linuxif "github.com/contiv-vpp/contiv-vpp/api/models/linux/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
	"github.com/contiv-vpp/contiv-vpp/plugins/policy"
)

// TraceInputNodes are the input nodes a trace arms: virtio-input (the TAPs of pods
// and of the host interconnect), af-packet-input (veth-backed interfaces) and
// dpdk-input (the NICs, where VXLAN from other nodes arrives). VPP traces only at
// input nodes (vlib's "trace add" wants a node that marks buffers for tracing);
// vxlan4-input is reached from the NIC's input, so a packet from another node is
// traced from dpdk-input on.
var TraceInputNodes = []string{"virtio-input", "af-packet-input", "dpdk-input"}

// maxBody bounds a request body.
const maxBody = 4 << 10

// Deps lists what the plugin needs.
type Deps struct {
	Log logrus.FieldLogger
	// NodeName is this node's name.
	NodeName string
	// CLI runs a VPP CLI command (govppmux).
	CLI func(command string) (string, error)
	// Interfaces returns the VPP interface descriptor's metadata map (sw_if_index),
	// read at each trace (the descriptor may register after the plugin is built).
	Interfaces func() kvapi.MetadataMap
	// Pods maps logical interface names to pods (ipnet).
	Pods interface {
		GetPodByIf(ifName string) (namespace, name string, exists bool)
	}
	// LocalPods lists this node's pods with their namespaces (podmanager).
	LocalPods func() podmanager.LocalPods
	// Nodes lists the nodes with their VPP addresses (nodesync).
	Nodes interface {
		GetAllNodes() map[string]*nodesync.Node
	}
	// Values dumps a descriptor's values (the scheduler): the DNAT44 of Services.
	Values func(descriptor string, view kvapi.View) ([]kvapi.KVWithMetadata, error)
	// Rules names the policies behind ACL rules (policy.RuleOwnersKey).
	Rules policy.RuleOwners
	// Namespaces runs code in a network namespace (nsplugin).
	Namespaces interface {
		WithNamespace(ref *linuxif.NetNamespace, fn func() error) error
	}
	// Admin is the admin REST API.
	Admin infra.HandlerRegistrar
	// Clock times the automatic stop (a real clock if nil).
	Clock clock.WithDelayedExecution
}

// Plugin serves the trace endpoints of one node: one trace at a time.
type Plugin struct {
	Deps

	mu      sync.Mutex
	active  bool
	gen     uint64 // counts traces, so a late timer does not stop a newer trace
	timer   clock.Timer
	probing sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewPlugin returns the plugin with its dependencies set.
func NewPlugin(deps Deps) *Plugin {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Plugin{Deps: deps, ctx: ctx, cancel: cancel}
}

// String names the plugin.
func (p *Plugin) String() string { return "tracer" }

// Init registers the admin endpoints.
func (p *Plugin) Init() error {
	if p.Admin != nil {
		p.Admin.HandleFunc("POST "+StartPath, p.serveStart)
		p.Admin.HandleFunc("POST "+ProbePath, p.serveProbe)
		p.Admin.HandleFunc("POST "+StopPath, p.serveStop)
	}
	return nil
}

// Close stops a running trace (VPP stops tracing) and cancels running probes.
func (p *Plugin) Close() error {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return nil
	}
	return p.stopLocked()
}

// Start arms VPP's tracing; an error if a trace runs.
func (p *Plugin) Start(req StartRequest) ([]string, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	count, timeout := req.Count, time.Duration(req.TimeoutSeconds)*time.Second
	if count == 0 {
		count = DefaultCount
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active {
		return nil, errBusy
	}
	if _, err := p.CLI("clear trace"); err != nil {
		return nil, fmt.Errorf("clear trace: %w", err)
	}
	var armed, refused []string
	for _, n := range TraceInputNodes {
		cmd := "trace add " + n + " " + strconv.Itoa(count)
		out, err := p.CLI(cmd)
		if err != nil {
			_, _ = p.CLI("clear trace")
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		if strings.TrimSpace(out) != "" { // VPP prints only errors (a node it has not)
			refused = append(refused, n+": "+strings.TrimSpace(out))
			continue
		}
		armed = append(armed, n)
	}
	if len(armed) == 0 {
		return nil, fmt.Errorf("VPP traces none of the input nodes: %s", strings.Join(refused, "; "))
	}
	p.active = true
	p.gen++
	gen := p.gen
	p.timer = p.Clock.AfterFunc(timeout, func() { p.expire(gen) })
	p.Log.WithFields(logrus.Fields{"nodes": armed, "count": count, "timeout": timeout}).Info("packet trace started")
	return armed, nil
}

// errBusy is the answer while a trace runs.
var errBusy = errors.New("a trace is already running on this node (one at a time; it stops by itself after its timeout)")

// errIdle is the answer when no trace runs.
var errIdle = errors.New("no trace is running on this node (POST " + StartPath + " first)")

// expire stops trace gen if it still runs.
func (p *Plugin) expire(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active || p.gen != gen {
		return
	}
	p.timer = nil // it fired (and a fake clock's Stop from inside its callback would deadlock)
	if err := p.stopLocked(); err != nil {
		p.Log.WithError(err).Warn("stop the expired packet trace")
		return
	}
	p.Log.Info("packet trace stopped: its timeout passed")
}

// stopLocked turns tracing off: VPP's "clear trace" stops tracing and frees the
// records (vlib_trace_stop_and_clear).
func (p *Plugin) stopLocked() error {
	p.active = false
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	_, err := p.CLI("clear trace")
	return err
}

// Stop reads the trace, turns tracing off and explains the packets m selects.
func (p *Plugin) Stop(m Match) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return Result{}, errIdle
	}
	raw, err := p.CLI("show trace")
	if err != nil {
		_ = p.stopLocked()
		return Result{}, fmt.Errorf("show trace: %w", err)
	}
	if err := p.stopLocked(); err != nil {
		return Result{}, fmt.Errorf("clear trace: %w", err)
	}
	ifs, err := p.CLI("show interface")
	if err != nil {
		return Result{}, fmt.Errorf("show interface: %w", err)
	}
	pkts := Parse(raw)
	return Result{Node: p.NodeName, Packets: Explain(pkts, p.takeSnapshot(ifs), m), Traced: len(pkts), Raw: raw}, nil
}

// Probe sends a probe from the pod (or the node) while a trace runs.
func (p *Plugin) Probe(ctx context.Context, req ProbeRequest) (ProbeResult, error) {
	if err := req.Validate(); err != nil {
		return ProbeResult{}, err
	}
	p.mu.Lock()
	active := p.active
	p.mu.Unlock()
	if !active {
		return ProbeResult{}, errIdle
	}
	if !p.probing.TryLock() {
		return ProbeResult{}, errBusy
	}
	defer p.probing.Unlock()
	wait := 3 * time.Second
	if req.WaitSeconds > 0 {
		wait = time.Duration(req.WaitSeconds) * time.Second
	}
	var ref *linuxif.NetNamespace
	if req.Pod != "" {
		ns, name, _ := strings.Cut(req.Pod, "/")
		lp := p.LocalPods()[podmodel.ID{Namespace: ns, Name: name}]
		if lp == nil || lp.NetworkNamespace == "" {
			return ProbeResult{}, &notFoundError{fmt.Sprintf("pod: %s is not a pod of node %s", req.Pod, p.NodeName)}
		}
		ref = &linuxif.NetNamespace{Type: linuxif.NetNamespace_FD, Reference: lp.NetworkNamespace}
	}
	var res ProbeResult
	err := p.Namespaces.WithNamespace(ref, func() error {
		var err error
		res, err = sendProbe(ctx, &req, wait)
		return err
	})
	return res, err
}

// notFoundError is answered 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (p *Plugin) serveStart(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if !decode(w, r, &req) {
		return
	}
	armed, err := p.Start(req)
	if err != nil {
		writeErr(w, err)
		return
	}
	infra.WriteJSON(w, http.StatusOK, map[string]any{"node": p.NodeName, "inputNodes": armed})
}

func (p *Plugin) serveProbe(w http.ResponseWriter, r *http.Request) {
	var req ProbeRequest
	if !decode(w, r, &req) {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	res, err := p.Probe(ctx, req)
	if err != nil {
		writeErr(w, err)
		return
	}
	infra.WriteJSON(w, http.StatusOK, res)
}

func (p *Plugin) serveStop(w http.ResponseWriter, r *http.Request) {
	var req StopRequest
	if !decode(w, r, &req) {
		return
	}
	res, err := p.Stop(req.Match)
	if err != nil {
		writeErr(w, err)
		return
	}
	infra.WriteJSON(w, http.StatusOK, res)
}

// validator is a request that checks itself.
type validator interface{ Validate() error }

// decode reads a bounded JSON body and validates it; false when it answered an
// error (400 naming the field and the value).
func decode(w http.ResponseWriter, r *http.Request, out validator) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		infra.WriteError(w, http.StatusBadRequest, "read request: "+err.Error())
		return false
	}
	if len(data) > maxBody {
		infra.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", maxBody))
		return false
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		infra.WriteError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	if err := out.Validate(); err != nil {
		infra.WriteError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func writeErr(w http.ResponseWriter, err error) {
	var nf *notFoundError
	switch {
	case errors.Is(err, errBusy) || errors.Is(err, errIdle):
		infra.WriteError(w, http.StatusConflict, err.Error())
	case errors.As(err, &nf):
		infra.WriteError(w, http.StatusNotFound, err.Error())
	default:
		infra.WriteError(w, http.StatusInternalServerError, err.Error())
	}
}
