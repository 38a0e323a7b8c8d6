package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	k8ssvc "github.com/contiv-vpp/contiv-vpp/api/k8s/service"

	"github.com/contiv-vpp/contiv-vpp/plugins/tracer"
)

// endpoint is one side of `trace` as the operator wrote it.
type endpoint struct {
	// Kind is "pod", "node", "svc" or "addr"; Name is ns/name, the node name or the
	// address.
	Kind, Name string
	// Port and Proto are the destination's (0 and "" when not given).
	Port  uint16
	Proto string
}

func (e endpoint) String() string {
	s := e.Name
	if e.Kind == "svc" || e.Kind == "node" {
		s = e.Kind + ":" + e.Name
	}
	if e.Port != 0 {
		s += ":" + strconv.Itoa(int(e.Port)) + "/" + e.Proto
	}
	return s
}

// parseEndpoint reads a source (withPort false) or a destination: ns/name,
// node:NAME, svc:ns/name, an IPv4 address; a destination may end in :PORT[/PROTO]
// (tcp when no protocol; ICMP echo when no port) or /icmp.
func parseEndpoint(s string, dst bool) (endpoint, error) {
	what := "source"
	if dst {
		what = "destination"
	}
	var e endpoint
	rest := s
	switch {
	case strings.HasPrefix(rest, "node:"):
		if dst {
			return e, fmt.Errorf("%s %q: a node is not a destination (give its address)", what, s)
		}
		e.Kind, rest = "node", strings.TrimPrefix(rest, "node:")
	case strings.HasPrefix(rest, "svc:"):
		if !dst {
			return e, fmt.Errorf("%s %q: a Service is not a source", what, s)
		}
		e.Kind, rest = "svc", strings.TrimPrefix(rest, "svc:")
	}
	if dst {
		if base, proto, ok := strings.Cut(rest, "/icmp"); ok && proto == "" {
			rest, e.Proto = base, tracer.ProtoICMP
		}
		if i := strings.LastIndex(rest, ":"); i >= 0 && e.Proto == "" {
			portProto := rest[i+1:]
			port, proto, hasProto := strings.Cut(portProto, "/")
			if !hasProto {
				proto = tracer.ProtoTCP
			}
			n, err := strconv.ParseUint(port, 10, 16)
			if err != nil || n == 0 {
				return e, fmt.Errorf("%s %q: port %q is not a port (1-65535)", what, s, port)
			}
			proto = strings.ToLower(proto)
			if proto != tracer.ProtoTCP && proto != tracer.ProtoUDP {
				return e, fmt.Errorf("%s %q: protocol %q is not tcp or udp", what, s, proto)
			}
			rest, e.Port, e.Proto = rest[:i], uint16(n), proto
		}
	}
	if rest == "" {
		return e, fmt.Errorf("%s %q: empty name", what, s)
	}
	e.Name = rest
	if e.Kind != "" {
		if e.Kind == "svc" && !isNamespacedName(rest) {
			return e, fmt.Errorf("%s %q: %q is not namespace/name", what, s, rest)
		}
		return e, nil
	}
	if a, err := netip.ParseAddr(rest); err == nil {
		if !a.Is4() {
			return e, fmt.Errorf("%s %q: only IPv4 is traced", what, s)
		}
		e.Kind = "addr"
		return e, nil
	}
	if !isNamespacedName(rest) {
		return e, fmt.Errorf("%s %q: not a pod (namespace/name), node:NAME, svc:namespace/name or an IPv4 address", what, s)
	}
	e.Kind = "pod"
	return e, nil
}

func isNamespacedName(s string) bool {
	ns, name, ok := strings.Cut(s, "/")
	return ok && ns != "" && name != "" && !strings.Contains(name, "/")
}

// tracePlan is what `trace` resolved: who sends, to what, on which nodes to trace.
type tracePlan struct {
	Src, Dst endpoint
	// SrcNode sends the probe; SrcPod is its pod ("" for the node itself).
	SrcNode node
	SrcPod  string
	// DstIP, Port, Proto are the probe's destination.
	DstIP string
	Port  uint16
	Proto string
	// DstPod names the destination pod, when known; Service the Service.
	DstPod, Service string
	// Nodes are the nodes to trace, the source's first.
	Nodes []node
}

// traceReport is the output of `trace`.
type traceReport struct {
	Source      string              `json:"source"`
	Destination string              `json:"destination"`
	Probe       tracer.ProbeResult  `json:"probe"`
	Nodes       []tracer.Result     `json:"nodes"`
	Verdict     string              `json:"verdict"`
	Reason      string              `json:"reason"`
	Decisive    *tracer.Explained   `json:"decisive,omitempty"`
	Probed      tracer.ProbeRequest `json:"probeRequest"`
	Matched     tracer.Match        `json:"match"`
	plan        *tracePlan
}

// Verdicts of `trace` (the first word of its last line).
const (
	verdictAllowed     = "ALLOWED"
	verdictDenied      = "DENIED"
	verdictNoEndpoints = "NO-ENDPOINTS"
	verdictNoRoute     = "NO-ROUTE"
	verdictDropped     = "DROPPED"
	verdictUnknown     = "UNKNOWN"
)

func (o *options) traceCommand() *cobra.Command {
	var count int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "trace SRC DST[:PORT[/PROTO]]",
		Short: "Send a probe from SRC to DST with VPP tracing on, and explain its path in Kubernetes terms",
		Long: `trace sends a real probe (TCP SYN, UDP datagram, or ICMP echo without a port) from SRC
while VPP traces packets on every node the probe can cross, and explains its path: the pod
interfaces, the NAT mapping (Service and backend), the NetworkPolicy rule that allowed or
denied it, the VXLAN tunnel to another node, and the verdict.

SRC: a pod (namespace/name), a node (node:NAME: its host namespace) or an IPv4 address
     of a pod or a node.
DST: a pod, a Service (svc:namespace/name), or an IPv4 address; :PORT[/tcp|/udp] picks
     the port (tcp by default), none sends an ICMP echo (a Service without a port: its
     first port).

Verdicts: ALLOWED, DENIED (by a policy, named), NO-ENDPOINTS, NO-ROUTE, DROPPED (VPP's
node and reason), UNKNOWN. Needs the agents' admin API.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := parseEndpoint(args[0], false)
			if err != nil {
				return err
			}
			dst, err := parseEndpoint(args[1], true)
			if err != nil {
				return err
			}
			if count < 1 || count > tracer.MaxCount {
				return fmt.Errorf("--count: %d is not between 1 and %d", count, tracer.MaxCount)
			}
			if wait < time.Second || wait > tracer.MaxProbeWait {
				return fmt.Errorf("--wait: %v is not between 1s and %v", wait, tracer.MaxProbeWait)
			}
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			rep, err := runTrace(cmd.Context(), c, src, dst, count, wait)
			if err != nil {
				return err
			}
			return render(o.stdout, o.output, rep, nil, rep.text)
		},
	}
	cmd.Flags().IntVar(&count, "count", 20, "packets VPP traces per input node and node")
	cmd.Flags().DurationVar(&wait, "wait", 3*time.Second, "how long the probe waits for an answer")
	return cmd
}

// runTrace resolves the endpoints, traces and explains.
func runTrace(ctx context.Context, c *cluster, src, dst endpoint, count int, wait time.Duration) (*traceReport, error) {
	plan, err := c.plan(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	return c.trace(ctx, plan, count, wait)
}

// plan resolves the endpoints against the cluster's nodes, pods and Services.
func (c *cluster) plan(ctx context.Context, src, dst endpoint) (*tracePlan, error) {
	nodes, err := c.nodes(ctx)
	if err != nil {
		return nil, err
	}
	// A node that does not answer (a stale record of a node that left, an agent
	// restarting) does not stop the trace: its pods are only missing, and an endpoint
	// not found names the nodes that did not answer.
	var pods []podRow
	var silent []string
	for _, n := range nodes {
		if n.URL == "" {
			continue
		}
		rows, err := c.pods(ctx, n)
		if err != nil {
			silent = append(silent, fmt.Sprintf("%s (%v)", n.Name, err))
			continue
		}
		pods = append(pods, rows...)
	}
	notWired := func(role, name string) error {
		if len(silent) == 0 {
			return fmt.Errorf("%s %s: no such pod wired by the agents", role, name)
		}
		return fmt.Errorf("%s %s: no such pod wired by the agents that answered; not answering: %s",
			role, name, strings.Join(silent, ", "))
	}
	byName := map[string]node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	podByName, podByIP := map[string]podRow{}, map[string]podRow{}
	for _, p := range pods {
		podByName[p.Namespace+"/"+p.Name] = p
		if p.IP != "" {
			podByIP[p.IP] = p
		}
	}
	nodeByIP := map[string]node{}
	for _, n := range nodes {
		for _, a := range n.IPs {
			ip, _, _ := strings.Cut(a, "/")
			nodeByIP[ip] = n
		}
		if n.MgmtIP != "" {
			nodeByIP[n.MgmtIP] = n
		}
	}
	plan := &tracePlan{Src: src, Dst: dst, Port: dst.Port, Proto: dst.Proto}
	// the source
	switch src.Kind {
	case "pod":
		p, ok := podByName[src.Name]
		if !ok {
			return nil, notWired("source", src.Name)
		}
		plan.SrcNode, plan.SrcPod = byName[p.Node], src.Name
	case "node":
		n, ok := byName[src.Name]
		if !ok {
			return nil, fmt.Errorf("source node:%s: no such node", src.Name)
		}
		plan.SrcNode = n
	case "addr":
		if p, ok := podByIP[src.Name]; ok {
			plan.SrcNode, plan.SrcPod = byName[p.Node], p.Namespace+"/"+p.Name
		} else if n, ok := nodeByIP[src.Name]; ok {
			plan.SrcNode = n
		} else {
			return nil, fmt.Errorf("source %s: the address of no pod and no node", src.Name)
		}
	}
	if plan.SrcNode.URL == "" {
		return nil, fmt.Errorf("source %s: no address known for the agent of its node %q", src, plan.SrcNode.Name)
	}
	plan.Nodes = []node{plan.SrcNode}
	addNode := func(name string) {
		n, ok := byName[name]
		if !ok || n.URL == "" {
			return
		}
		for _, have := range plan.Nodes {
			if have.Name == name {
				return
			}
		}
		plan.Nodes = append(plan.Nodes, n)
	}
	// the destination
	switch dst.Kind {
	case "pod":
		p, ok := podByName[dst.Name]
		if !ok || p.IP == "" {
			return nil, notWired("destination", dst.Name)
		}
		plan.DstIP, plan.DstPod = p.IP, dst.Name
		addNode(p.Node)
	case "svc":
		if err := c.planService(ctx, plan, podByIP, addNode); err != nil {
			return nil, err
		}
	case "addr":
		plan.DstIP = dst.Name
		if p, ok := podByIP[dst.Name]; ok {
			plan.DstPod = p.Namespace + "/" + p.Name
			addNode(p.Node)
		} else if n, ok := nodeByIP[dst.Name]; ok {
			addNode(n.Name)
		}
	}
	if plan.Proto == "" {
		plan.Proto = tracer.ProtoICMP
	}
	return plan, nil
}

// planService picks the Service's frontend as the source node renders it, and the
// nodes of its backends.
func (c *cluster) planService(ctx context.Context, plan *tracePlan, podByIP map[string]podRow, addNode func(string)) error {
	rows, err := c.services(ctx, plan.SrcNode)
	if err != nil {
		return err
	}
	var found *serviceRow
	for i, r := range rows {
		if r.Service != plan.Dst.Name {
			continue
		}
		host, port, _ := strings.Cut(r.Frontend, ":")
		if a, err := netip.ParseAddr(host); err != nil || !a.Is4() || !isServiceFrontend(a, plan.SrcNode) {
			continue
		}
		if plan.Dst.Port != 0 && (port != strconv.Itoa(int(plan.Dst.Port)) || !strings.EqualFold(r.Protocol, plan.Dst.Proto)) {
			continue
		}
		found = &rows[i]
		break
	}
	if found == nil {
		// A Service without ready endpoints has no NAT mapping: its ClusterIP is in
		// the Service the KSR reflected.
		row, err := c.serviceFromKSR(ctx, plan.Dst)
		if err != nil {
			return fmt.Errorf("destination svc:%s: node %s renders no frontend of that Service%s, and %w",
				plan.Dst.Name, plan.SrcNode.Name, portHint(plan.Dst), err)
		}
		found = row
	}
	host, port, _ := strings.Cut(found.Frontend, ":")
	n, _ := strconv.ParseUint(port, 10, 16)
	plan.DstIP, plan.Port, plan.Proto, plan.Service = host, uint16(n), strings.ToLower(found.Protocol), plan.Dst.Name
	for _, b := range found.Backends {
		ip, _, _ := strings.Cut(b, ":")
		if p, ok := podByIP[ip]; ok {
			addNode(p.Node)
		}
	}
	return nil
}

// serviceFromKSR returns the Service's ClusterIP frontend (the one of dst's port, or
// its first) from the Service contiv-ksr reflected into etcd.
func (c *cluster) serviceFromKSR(ctx context.Context, dst endpoint) (*serviceRow, error) {
	if c.cfg.EtcdConfig == "" {
		return nil, errors.New("without an etcd.conf its ClusterIP is unknown")
	}
	ns, name, _ := strings.Cut(dst.Name, "/")
	key := ksrkey.KsrPrefix + k8ssvc.Key(name, ns)
	kvs, err := c.etcdGet(ctx, key)
	if err != nil {
		return nil, err
	}
	data, ok := kvs[key]
	if !ok {
		return nil, fmt.Errorf("no such Service in etcd (%s)", key)
	}
	v, err := decode(strings.TrimPrefix(key, ksrkey.KsrPrefix), data)
	if err != nil {
		return nil, err
	}
	svc := v.(*k8ssvc.Service)
	if a, err := netip.ParseAddr(svc.GetClusterIp()); err != nil || !a.Is4() {
		return nil, fmt.Errorf("it has no IPv4 ClusterIP (%q)", svc.GetClusterIp())
	}
	for _, p := range svc.GetPort() {
		proto := strings.ToLower(p.GetProtocol())
		if proto == "" {
			proto = tracer.ProtoTCP
		}
		if dst.Port != 0 && (int(dst.Port) != int(p.GetPort()) || proto != dst.Proto) {
			continue
		}
		return &serviceRow{Service: dst.Name, Protocol: proto,
			Frontend: svc.GetClusterIp() + ":" + strconv.Itoa(int(p.GetPort())), Backends: []string{}}, nil
	}
	return nil, fmt.Errorf("it has no port%s", portHint(dst))
}

// isServiceFrontend tells a ClusterIP (or external IP) frontend from the node-port
// frontends on the node's own addresses.
func isServiceFrontend(a netip.Addr, n node) bool {
	for _, ip := range n.IPs {
		if p, err := netip.ParsePrefix(ip); err == nil && p.Addr() == a {
			return false
		}
	}
	return n.MgmtIP != a.String()
}

func portHint(e endpoint) string {
	if e.Port == 0 {
		return ""
	}
	return fmt.Sprintf(" at port %d/%s", e.Port, e.Proto)
}

// trace runs the plan: start tracing on every node, probe, stop and explain.
func (c *cluster) trace(ctx context.Context, plan *tracePlan, count int, wait time.Duration) (*traceReport, error) {
	timeout := int((wait + 20*time.Second) / time.Second)
	var started []node
	stopAll := func() {
		// best effort: a node whose trace was already read answers 409
		for _, n := range started {
			_ = c.call(context.WithoutCancel(ctx), n, http.MethodPost, tracer.StopPath,
				tracer.StopRequest{Match: tracer.Match{Srcs: []string{"0.0.0.0"}, Dsts: []string{"0.0.0.0"}}}, nil)
		}
	}
	for _, n := range plan.Nodes {
		err := c.call(ctx, n, http.MethodPost, tracer.StartPath, tracer.StartRequest{Count: count, TimeoutSeconds: timeout}, nil)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("start tracing: %w", err)
		}
		started = append(started, n)
	}
	req := tracer.ProbeRequest{Pod: plan.SrcPod, Dst: plan.DstIP, Port: plan.Port, Proto: plan.Proto, WaitSeconds: int(wait / time.Second)}
	rep := &traceReport{Source: plan.Src.String(), Destination: plan.Dst.String(), plan: plan, Probed: req}
	if err := c.call(ctx, plan.SrcNode, http.MethodPost, tracer.ProbePath, req, &rep.Probe); err != nil {
		stopAll()
		return nil, fmt.Errorf("probe: %w", err)
	}
	m := tracer.Match{Srcs: []string{rep.Probe.Src}, Dsts: []string{plan.DstIP}, Port: plan.Port, Proto: plan.Proto}
	var errs []error
	for _, n := range plan.Nodes {
		var res tracer.Result
		if err := c.call(ctx, n, http.MethodPost, tracer.StopPath, tracer.StopRequest{Match: m}, &res); err != nil {
			errs = append(errs, err)
			continue
		}
		// what NAT made of the probe is what the next nodes see
		for _, p := range res.Packets {
			if p.NewSrc != "" && !slices.Contains(m.Srcs, p.NewSrc) {
				m.Srcs = append(m.Srcs, p.NewSrc)
			}
			if p.NewDst != "" && !slices.Contains(m.Dsts, p.NewDst) {
				m.Dsts = append(m.Dsts, p.NewDst)
			}
		}
		rep.Nodes = append(rep.Nodes, res)
	}
	if len(rep.Nodes) == 0 {
		return nil, fmt.Errorf("read the traces: %w", errors.Join(errs...))
	}
	rep.Matched = m
	rep.decide()
	return rep, nil
}
