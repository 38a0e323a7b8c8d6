package main

import (
	"bufio"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// uiFiles are the web view's page and script (plain HTML and JS, no build step).
//
//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

// DefaultUIAddress is where `ui` listens unless --listen says otherwise: loopback,
// since the view runs traces with the operator's admin access to the agents.
const DefaultUIAddress = "127.0.0.1:8420"

func (o *options) uiCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web view of the cluster on localhost: nodes, overlay, pods with live counters, Services, policy denies, traces",
		Long: `ui serves a web view (plain HTML and a little JS, served from the binary) of the
cluster: the nodes and their VXLAN overlay, the pods of each node with their addresses
and live counters (the agents' contiv_dataplane_* metrics), the Services with their
backends, the policy denies counted by VPP, and a form that runs contiv-netctl trace
and draws the probe's path. It listens on --listen (default ` + DefaultUIAddress + `);
it uses the agents' admin API with this command's credentials, so keep it on loopback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			fmt.Fprintf(o.stdout, "contiv-netctl ui: http://%s/\n", ln.Addr())
			return serveUI(cmd.Context(), ln, newUIServer(c))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", DefaultUIAddress, "address the web view listens on")
	return cmd
}

// serveUI serves h on ln until ctx ends.
func serveUI(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// uiServer answers the page's requests; one trace at a time (the agents allow one
// per node anyway).
type uiServer struct {
	c     *cluster
	trace sync.Mutex
}

func newUIServer(c *cluster) http.Handler {
	s := &uiServer{c: c}
	mux := http.NewServeMux()
	static, _ := fs.Sub(uiFiles, "ui")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/cluster", s.serveCluster)
	mux.HandleFunc("POST /api/trace", s.serveTrace)
	return mux
}

// uiCluster is the answer of GET /api/cluster.
type uiCluster struct {
	Nodes    []uiNode     `json:"nodes"`
	Pods     []uiPod      `json:"pods"`
	Services []serviceRow `json:"services"`
	Denies   []uiDeny     `json:"denies"`
	Errors   []string     `json:"errors,omitempty"`
}

type uiNode struct {
	nodeStatus
	// StatsUp says whether the agent read VPP's stats segment (contiv_dataplane_stats_up):
	// without it the node's counters are unknown, not zero.
	StatsUp bool       `json:"statsUp"`
	Tunnels []uiTunnel `json:"tunnels"`
}

type uiTunnel struct {
	RemoteNode string  `json:"remoteNode"`
	RxPackets  float64 `json:"rxPackets"`
	TxPackets  float64 `json:"txPackets"`
}

type uiPod struct {
	podRow
	RxPackets float64 `json:"rxPackets"`
	TxPackets float64 `json:"txPackets"`
	Drops     float64 `json:"drops"`
}

type uiDeny struct {
	Node    string  `json:"node"`
	Policy  string  `json:"policy"`
	ACL     string  `json:"acl"`
	Rule    string  `json:"rule"`
	Packets float64 `json:"packets"`
}

func (s *uiServer) serveCluster(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	nodes, err := s.c.nodes(ctx)
	if err != nil {
		writeUIError(w, http.StatusBadGateway, err)
		return
	}
	out := uiCluster{Nodes: []uiNode{}, Pods: []uiPod{}, Services: []serviceRow{}, Denies: []uiDeny{}}
	seenSvc := map[string]bool{}
	for _, n := range nodes {
		un := uiNode{nodeStatus: nodeStatus{node: n, State: "NO-AGENT"}, Tunnels: []uiTunnel{}}
		if n.URL == "" {
			out.Nodes = append(out.Nodes, un)
			continue
		}
		un.State, un.VPPVersion, un.Error = s.c.nodeStatus(ctx, n)
		samples, err := s.c.metrics(ctx, n)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
		un.Tunnels = tunnelsOf(samples)
		un.StatsUp = statsUp(samples)
		out.Nodes = append(out.Nodes, un)
		pods, err := s.c.pods(ctx, n)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
		out.Pods = append(out.Pods, podsWithCounters(pods, samples)...)
		out.Denies = append(out.Denies, deniesOf(n.Name, samples)...)
		svcs, err := s.c.services(ctx, n)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
		}
		for _, r := range svcs {
			if k := r.Service + " " + r.Frontend; !seenSvc[k] && !strings.HasPrefix(r.Service, "NAT-") {
				seenSvc[k] = true
				r.Node = ""
				out.Services = append(out.Services, r)
			}
		}
	}
	sort.SliceStable(out.Denies, func(i, j int) bool { return out.Denies[i].Packets > out.Denies[j].Packets })
	infraWriteJSON(w, http.StatusOK, out)
}

// uiTraceRequest is the body of POST /api/trace.
type uiTraceRequest struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

func (s *uiServer) serveTrace(w http.ResponseWriter, r *http.Request) {
	// A JSON body cannot come from a simple cross-site form: another page the
	// operator visits cannot make the view run traces.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeUIError(w, http.StatusUnsupportedMediaType, errors.New("Content-Type must be application/json"))
		return
	}
	var req uiTraceRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		writeUIError(w, http.StatusBadRequest, fmt.Errorf("request body: %w", err))
		return
	}
	src, err := parseEndpoint(strings.TrimSpace(req.Src), false)
	if err != nil {
		writeUIError(w, http.StatusBadRequest, err)
		return
	}
	dst, err := parseEndpoint(strings.TrimSpace(req.Dst), true)
	if err != nil {
		writeUIError(w, http.StatusBadRequest, err)
		return
	}
	if !s.trace.TryLock() {
		writeUIError(w, http.StatusConflict, errors.New("a trace is running; wait for it"))
		return
	}
	defer s.trace.Unlock()
	rep, err := runTrace(r.Context(), s.c, src, dst, 20, 3*time.Second)
	if err != nil {
		writeUIError(w, http.StatusBadGateway, err)
		return
	}
	infraWriteJSON(w, http.StatusOK, struct {
		*traceReport
		Text string `json:"text"`
	}{rep, rep.text()})
}

func infraWriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeUIError(w http.ResponseWriter, code int, err error) {
	infraWriteJSON(w, code, map[string]string{"error": err.Error()})
}

// sample is one series of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics reads the contiv_dataplane_ series of the node's agent (GET /metrics).
func (c *cluster) metrics(ctx context.Context, n node) ([]sample, error) {
	resp, err := c.send(ctx, n, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %s: GET /metrics: %s", n.Name, resp.Status)
	}
	return parseSamples(resp.Body, "contiv_dataplane_")
}

// parseSamples reads the series of the text exposition format whose names start
// with prefix (the agent's own output: no escaped quotes in the label values it
// exports, which are names of Kubernetes objects and VPP nodes).
func parseSamples(r io.Reader, prefix string) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		head, val, ok := cutLast(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		s := sample{name: head, labels: map[string]string{}, value: v}
		if name, rest, ok := strings.Cut(head, "{"); ok {
			s.name = name
			for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					s.labels[k] = strings.Trim(v, `"`)
				}
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

func podsWithCounters(pods []podRow, samples []sample) []uiPod {
	type key struct{ ns, pod string }
	ctr := map[key]*uiPod{}
	out := make([]uiPod, len(pods))
	for i, p := range pods {
		out[i] = uiPod{podRow: p}
		ctr[key{p.Namespace, p.Name}] = &out[i]
	}
	for _, s := range samples {
		p := ctr[key{s.labels["namespace"], s.labels["pod"]}]
		if p == nil {
			continue
		}
		switch s.name {
		case "contiv_dataplane_pod_interface_rx_packets_total":
			p.RxPackets = s.value
		case "contiv_dataplane_pod_interface_tx_packets_total":
			p.TxPackets = s.value
		case "contiv_dataplane_pod_interface_drops_total":
			p.Drops = s.value
		}
	}
	return out
}

func statsUp(samples []sample) bool {
	for _, s := range samples {
		if s.name == "contiv_dataplane_stats_up" {
			return s.value == 1
		}
	}
	return false
}

func tunnelsOf(samples []sample) []uiTunnel {
	byNode := map[string]*uiTunnel{}
	var names []string
	for _, s := range samples {
		remote := s.labels["remote_node"]
		if remote == "" {
			continue
		}
		t := byNode[remote]
		if t == nil {
			t = &uiTunnel{RemoteNode: remote}
			byNode[remote] = t
			names = append(names, remote)
		}
		switch s.name {
		case "contiv_dataplane_vxlan_rx_packets_total":
			t.RxPackets = s.value
		case "contiv_dataplane_vxlan_tx_packets_total":
			t.TxPackets = s.value
		}
	}
	sort.Strings(names)
	out := []uiTunnel{}
	for _, n := range names {
		out = append(out, *byNode[n])
	}
	return out
}

func deniesOf(node string, samples []sample) []uiDeny {
	out := []uiDeny{}
	for _, s := range samples {
		if s.name == "contiv_dataplane_policy_rule_packets_total" && s.labels["verdict"] == "deny" && s.value > 0 {
			out = append(out, uiDeny{Node: node, Policy: s.labels["policy"], ACL: s.labels["acl"], Rule: s.labels["rule"], Packets: s.value})
		}
	}
	return out
}
