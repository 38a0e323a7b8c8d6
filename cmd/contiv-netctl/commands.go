package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/version"
)

// Descriptor names netctl dumps (the test checks them against the plugins).
const (
	descVPPInterface   = "vpp-interface"
	descVPPRoute       = "vpp-route"
	descVPPARP         = "vpp-arp"
	descDNAT44         = "vpp-dnat44"
	descNAT44Global    = "vpp-nat44-global"
	descNAT44Interface = "vpp-nat44-interface"
	descNAT44Address   = "vpp-nat44-address"
	descLinuxInterface = "linux-interface"
)

// vppdumpKinds maps the kinds of `vppdump` to the descriptors dumped from VPP (SB
// view) or, for what has no descriptor, to a VPP CLI command.
var vppdumpKinds = map[string]struct {
	descriptors []string
	cli         string
}{
	"interfaces": {descriptors: []string{descVPPInterface}},
	"nat":        {descriptors: []string{descNAT44Global, descNAT44Interface, descNAT44Address, descDNAT44}},
	"routes":     {descriptors: []string{descVPPRoute}},
	"fib":        {cli: "show ip fib"},
	"acl":        {cli: "show acl-plugin acl"},
}

func vppdumpKindNames() []string {
	var out []string
	for k := range vppdumpKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// options are the global flags.
type options struct {
	configPath string
	etcdConfig string
	agents     []string
	agentPort  int
	agentTLS   bool
	adminSock  string
	caFile     string
	certFile   string
	keyFile    string
	insecure   bool
	basicAuth  string
	output     string
	timeout    time.Duration
	searched   string // where the default netctl.conf was looked for, when not found
	stdout     io.Writer
	stderr     io.Writer
}

// cluster loads netctl.conf, applies the flags over it and returns the client.
func (o *options) cluster(cmd *cobra.Command) (*cluster, error) {
	if err := validFormat(o.output); err != nil {
		return nil, err
	}
	path, explicit := o.configPath, o.configPath != ""
	if !explicit {
		if env := os.Getenv(ConfigEnv); env != "" {
			path, explicit = env, true
		} else {
			path = o.findDefaultConfig()
		}
	}
	var cfg Config
	if path != "" {
		var err error
		if cfg, err = loadConfig(path, explicit); err != nil {
			return nil, err
		}
	}
	flags := cmd.Flags()
	if flags.Changed("etcd-config") {
		cfg.EtcdConfig = o.etcdConfig
	}
	for _, a := range o.agents {
		name, u, ok := strings.Cut(a, "=")
		if !ok || name == "" || u == "" {
			return nil, fmt.Errorf("--agent: %q is not NODE=URL", a)
		}
		if cfg.Agents == nil {
			cfg.Agents = map[string]string{}
		}
		cfg.Agents[name] = u
	}
	if flags.Changed("agent-port") {
		cfg.AgentPort = o.agentPort
	}
	if flags.Changed("agent-tls") {
		cfg.AgentTLS = o.agentTLS
	}
	if flags.Changed("admin-socket") {
		cfg.AdminSocket = o.adminSock
	}
	if o.caFile != "" {
		cfg.CAFile = o.caFile
	}
	if o.certFile != "" {
		cfg.CertFile = o.certFile
	}
	if o.keyFile != "" {
		cfg.KeyFile = o.keyFile
	}
	if flags.Changed("insecure-skip-tls-verify") {
		cfg.InsecureSkipTLSVerify = o.insecure
	}
	if o.basicAuth != "" {
		cfg.BasicAuth = o.basicAuth
	} else if env := os.Getenv(BasicAuthEnv); env != "" {
		cfg.BasicAuth = env
	}
	if flags.Changed("timeout") {
		cfg.Timeout = infra.Duration(o.timeout)
	}
	c, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	if !explicit {
		c.demoConfig, c.searched = path, o.searched
	}
	return c, nil
}

// findDefaultConfig returns the netctl.conf of `make run` found from the working
// directory or the binary's (findDefaultConfig), "" if none; o.searched then says
// where it was looked for.
func (o *options) findDefaultConfig() string {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	exeDir := ""
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	found, tried := findDefaultConfig(wd, exeDir)
	if found == "" {
		dirs := make([]string, len(tried))
		for i, p := range tried {
			dirs[i] = strings.TrimSuffix(p, string(filepath.Separator)+DefaultConfigPath)
		}
		o.searched = fmt.Sprintf("%s in %s", DefaultConfigPath, strings.Join(dirs, ", "))
	}
	return found
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &options{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "contiv-netctl",
		Short: "Inspect and operate a contiv-vpp cluster: nodes, pods, IPAM, services, VPP",
		Long: `contiv-netctl finds the nodes in the cluster's etcd and asks their agents over REST.

Configuration: --config (or $` + ConfigEnv + `), default ` + DefaultConfigPath + `
(written by ` + "`make run`" + `), looked for in the working directory and its parents,
then in the repository of the contiv-netctl binary; flags override its keys. Admin commands (vpp, vppdump,
pods, services, history, resync, the VPP version of nodes) need the agent's admin API:
on the node, its admin socket (` + DefaultAdminSocket + ` when it exists, or
--admin-socket; root or the socket's group), else loopback; from elsewhere, a client
certificate when the agents use mutual TLS.`,
		Version:       version.String("contiv-netctl"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&o.configPath, "config", "", "netctl.conf (default $"+ConfigEnv+", else "+DefaultConfigPath+" when it exists)")
	pf.StringVar(&o.etcdConfig, "etcd-config", "", "etcd.conf of the cluster's etcd, in the agents' format")
	pf.StringArrayVar(&o.agents, "agent", nil, "NODE=URL: where the node's agent REST API is (repeatable)")
	pf.IntVar(&o.agentPort, "agent-port", DefaultAgentPort, "agents' REST port, for nodes not given with --agent")
	pf.BoolVar(&o.agentTLS, "agent-tls", false, "reach agents not given with --agent over https")
	pf.StringVar(&o.adminSock, "admin-socket", "", "the agents' admin socket, for the agent of this node (default "+
		DefaultAdminSocket+" when it exists, else loopback; \""+NoAdminSocket+"\": loopback)")
	pf.StringVar(&o.caFile, "ca-file", "", "CA certificates (PEM) that verify the agents' certificates")
	pf.StringVar(&o.certFile, "cert-file", "", "client certificate (PEM) for agents with mutual TLS")
	pf.StringVar(&o.keyFile, "key-file", "", "key of --cert-file (PEM)")
	pf.BoolVar(&o.insecure, "insecure-skip-tls-verify", false, "accept any agent certificate")
	pf.StringVar(&o.basicAuth, "basic-auth", "", "user:password for agents with basic-auth (or $"+BasicAuthEnv+")")
	pf.StringVarP(&o.output, "output", "o", formatTable, "output format: table, json or yaml")
	pf.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound of each request to etcd or an agent")
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{formatTable, formatJSON, formatYAML}, cobra.ShellCompDirectiveNoFileComp
	})

	root.AddCommand(
		o.nodesCommand(), o.podsCommand(), o.ipamCommand(), o.servicesCommand(),
		o.vppCommand(), o.vppdumpCommand(), o.historyCommand(), o.resyncCommand(),
		o.traceCommand(), o.uiCommand(),
	)
	return root
}

// completeNode completes the first argument with the node names found in etcd.
func (o *options) completeNode(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.cluster(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	nodes, err := c.nodes(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// selectNodes returns the named node, or every node with an agent address.
func selectNodes(ctx context.Context, c *cluster, name string) ([]node, error) {
	if name != "" {
		n, err := c.node(ctx, name)
		if err != nil {
			return nil, err
		}
		return []node{n}, nil
	}
	all, err := c.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []node
	for _, n := range all {
		if n.URL != "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// eachNode calls fn for every node. For one named node its error is the command's;
// across all nodes an unreachable agent is reported on stderr and skipped, and the
// command fails only when no node answered.
// rowsOfNodes collects the rows fetch returns for each selected node (every node, or
// the one named), as eachNode visits them.
func rowsOfNodes[R any](o *options, cmd *cobra.Command, nodeName string,
	fetch func(*cluster, context.Context, node) ([]R, error)) ([]R, error) {
	c, err := o.cluster(cmd)
	if err != nil {
		return nil, err
	}
	nodes, err := selectNodes(cmd.Context(), c, nodeName)
	if err != nil {
		return nil, err
	}
	rows := []R{}
	err = o.eachNode(nodes, nodeName != "", func(n node) error {
		r, err := fetch(c, cmd.Context(), n)
		rows = append(rows, r...)
		return err
	})
	return rows, err
}

func (o *options) eachNode(nodes []node, named bool, fn func(node) error) error {
	var failed []error
	for _, n := range nodes {
		if err := fn(n); err != nil {
			if named {
				return err
			}
			fmt.Fprintf(o.stderr, "contiv-netctl: skipped: %v\n", err)
			failed = append(failed, err)
		}
	}
	if len(nodes) > 0 && len(failed) == len(nodes) {
		return fmt.Errorf("no node answered (%d failed)", len(failed))
	}
	return nil
}

// nodeStatus is a row of `nodes`.
type nodeStatus struct {
	node
	State      string `json:"state"`
	VPPVersion string `json:"vppVersion,omitempty"`
	Error      string `json:"error,omitempty"`
}

func (o *options) nodesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "nodes",
		Short: "List the nodes: ID, name, IPs, agent state, VPP version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			nodes, err := c.nodes(ctx)
			if err != nil {
				return err
			}
			out := make([]nodeStatus, 0, len(nodes))
			for _, n := range nodes {
				st := nodeStatus{node: n, State: "NO-AGENT"}
				if n.URL != "" {
					st.State, st.VPPVersion, st.Error = c.nodeStatus(ctx, n)
				}
				out = append(out, st)
			}
			return render(o.stdout, o.output, out, func() *table {
				t := &table{header: []string{"ID", "NAME", "IPS", "STATE", "VPP"}}
				for _, s := range out {
					id := "-"
					if s.ID != 0 {
						id = strconv.FormatUint(uint64(s.ID), 10)
					}
					t.add(id, s.Name, orDash(strings.Join(s.IPs, ",")), s.State, orDash(s.VPPVersion))
				}
				return t
			}, nil)
		},
	}
}

// nodeStatus asks the agent its readiness and VPP version.
func (c *cluster) nodeStatus(ctx context.Context, n node) (state, vppVersion, errText string) {
	state, err := c.readiness(ctx, n)
	if err != nil {
		return "UNREACHABLE", "", err.Error()
	}
	ver, err := c.vppCLI(ctx, n, "show version")
	if err != nil {
		return state, "", err.Error()
	}
	// "vpp v24.10-release built by ... on ... at ...": keep the version.
	fields := strings.Fields(ver)
	if len(fields) >= 2 && fields[0] == "vpp" {
		return state, fields[1], ""
	}
	return state, strings.TrimSpace(ver), ""
}

// podRow is a row of `pods`.
type podRow struct {
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	IP        string `json:"ip"`
	VPPIf     string `json:"vppInterface"`
	LinuxIf   string `json:"linuxInterface"`
	// LinuxHostIf is the interface name inside the pod (eth0).
	LinuxHostIf string `json:"linuxHostInterface,omitempty"`
}

func (o *options) podsCommand() *cobra.Command {
	var nodeName string
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "List the pods wired by the agents: pod, IP, VPP and Linux interface",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := rowsOfNodes(o, cmd, nodeName, (*cluster).pods)
			if err != nil {
				return err
			}
			return render(o.stdout, o.output, rows, func() *table {
				t := &table{header: []string{"NODE", "NAMESPACE", "POD", "IP", "VPP-IF", "LINUX-IF"}}
				for _, r := range rows {
					t.add(r.Node, r.Namespace, r.Name, orDash(r.IP), orDash(r.VPPIf), orDash(r.LinuxIf))
				}
				return t
			}, nil)
		},
	}
	cmd.Flags().StringVar(&nodeName, "node", "", "only the pods of this node")
	_ = cmd.RegisterFlagCompletionFunc("node", o.completeNode)
	return cmd
}

// pods joins the node's IPAM allocations with the interfaces the agent configured: the
// Linux interface holding the pod IP and the VPP interface of the pod's static ARP
// entry.
func (c *cluster) pods(ctx context.Context, n node) ([]podRow, error) {
	var alloc struct {
		Pods []struct {
			PodID  struct{ Name, Namespace string }
			MainIP string
		}
	}
	if err := c.call(ctx, n, http.MethodGet, allocationsPath, nil, &alloc); err != nil {
		return nil, err
	}
	linux, err := c.dump(ctx, n, descLinuxInterface, "NB")
	if err != nil {
		return nil, err
	}
	arps, err := c.dump(ctx, n, descVPPARP, "NB")
	if err != nil {
		return nil, err
	}
	type linuxIf struct {
		Name        string   `json:"name"`
		HostIfName  string   `json:"hostIfName"`
		IPAddresses []string `json:"ipAddresses"`
	}
	linuxByIP := map[string]linuxIf{}
	for _, e := range linux {
		var li linuxIf
		if json.Unmarshal(e.Value, &li) != nil {
			continue
		}
		for _, a := range li.IPAddresses {
			ip, _, _ := strings.Cut(a, "/")
			linuxByIP[ip] = li
		}
	}
	vppByIP := map[string]string{}
	for _, e := range arps {
		var a struct {
			Interface string `json:"interface"`
			IPAddress string `json:"ipAddress"`
		}
		if json.Unmarshal(e.Value, &a) == nil {
			vppByIP[a.IPAddress] = a.Interface
		}
	}
	var rows []podRow
	for _, p := range alloc.Pods {
		li := linuxByIP[p.MainIP]
		rows = append(rows, podRow{
			Node: n.Name, Namespace: p.PodID.Namespace, Name: p.PodID.Name, IP: p.MainIP,
			VPPIf: vppByIP[p.MainIP], LinuxIf: li.Name, LinuxHostIf: li.HostIfName,
		})
	}
	return rows, nil
}

// ipamRow is the answer of GET /contiv/v1/ipam.
type ipamRow struct {
	NodeID            uint32          `json:"nodeId"`
	NodeName          string          `json:"nodeName"`
	NodeIP            string          `json:"nodeIP"`
	PodSubnetThisNode string          `json:"podSubnetThisNode"`
	VppHostNetwork    string          `json:"vppHostNetwork"`
	Config            json.RawMessage `json:"config,omitempty"`
}

func (o *options) ipamCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "ipam [NODE]",
		Short:             "Show the IPAM of one node or all: node ID, node IP, pod and VPP-host subnets",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			nodes, err := selectNodes(cmd.Context(), c, name)
			if err != nil {
				return err
			}
			rows := []ipamRow{}
			err = o.eachNode(nodes, name != "", func(n node) error {
				var r ipamRow
				if err := c.call(cmd.Context(), n, http.MethodGet, ipamPath, nil, &r); err != nil {
					return err
				}
				rows = append(rows, r)
				return nil
			})
			if err != nil {
				return err
			}
			return render(o.stdout, o.output, rows, func() *table {
				t := &table{header: []string{"ID", "NODE", "NODE-IP", "POD-SUBNET", "VPP-HOST-NETWORK"}}
				for _, r := range rows {
					t.add(strconv.FormatUint(uint64(r.NodeID), 10), r.NodeName, orDash(r.NodeIP), orDash(r.PodSubnetThisNode), orDash(r.VppHostNetwork))
				}
				return t
			}, nil)
		},
	}
}

// serviceRow is one frontend of `services`, with its backends.
type serviceRow struct {
	Node     string   `json:"node"`
	Service  string   `json:"service"`
	Protocol string   `json:"protocol"`
	Frontend string   `json:"frontend"`
	Backends []string `json:"backends"`
}

func (o *options) servicesCommand() *cobra.Command {
	var nodeName string
	cmd := &cobra.Command{
		Use:   "services",
		Short: "List the service frontends and their backends as rendered in VPP (NAT44 static mappings)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := rowsOfNodes(o, cmd, nodeName, (*cluster).services)
			if err != nil {
				return err
			}
			return render(o.stdout, o.output, rows, func() *table {
				t := &table{header: []string{"NODE", "SERVICE", "PROTO", "FRONTEND", "BACKENDS"}}
				for _, r := range rows {
					t.add(r.Node, r.Service, r.Protocol, r.Frontend, orDash(strings.Join(r.Backends, ",")))
				}
				return t
			}, nil)
		},
	}
	cmd.Flags().StringVar(&nodeName, "node", "", "only the services of this node")
	_ = cmd.RegisterFlagCompletionFunc("node", o.completeNode)
	return cmd
}

// services reads the DNAT44 static mappings from VPP (SB view).
func (c *cluster) services(ctx context.Context, n node) ([]serviceRow, error) {
	entries, err := c.dump(ctx, n, descDNAT44, "SB")
	if err != nil {
		return nil, err
	}
	var rows []serviceRow
	for _, e := range entries {
		var d struct {
			Label      string `json:"label"`
			StMappings []struct {
				ExternalInterface string `json:"externalInterface"`
				ExternalIP        string `json:"externalIp"`
				ExternalPort      uint32 `json:"externalPort"`
				Protocol          string `json:"protocol"`
				LocalIPs          []struct {
					LocalIP     string `json:"localIp"`
					LocalPort   uint32 `json:"localPort"`
					Probability uint32 `json:"probability"`
				} `json:"localIps"`
			} `json:"stMappings"`
		}
		if err := json.Unmarshal(e.Value, &d); err != nil {
			return nil, fmt.Errorf("node %s: %s: %w", n.Name, e.Key, err)
		}
		for _, m := range d.StMappings {
			fe := m.ExternalIP
			if fe == "" {
				fe = m.ExternalInterface
			}
			row := serviceRow{Node: n.Name, Service: d.Label, Protocol: m.Protocol,
				Frontend: fe + ":" + strconv.FormatUint(uint64(m.ExternalPort), 10), Backends: []string{}}
			if row.Protocol == "" {
				row.Protocol = "TCP" // the zero value, omitted by protojson
			}
			for _, l := range m.LocalIPs {
				b := l.LocalIP + ":" + strconv.FormatUint(uint64(l.LocalPort), 10)
				if l.Probability > 1 {
					b += fmt.Sprintf("(%d)", l.Probability)
				}
				row.Backends = append(row.Backends, b)
			}
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Service != rows[j].Service {
			return rows[i].Service < rows[j].Service
		}
		return rows[i].Frontend < rows[j].Frontend
	})
	return rows, nil
}

// cliResult is the answer of `vpp` and of the CLI kinds of `vppdump`.
type cliResult struct {
	Node    string `json:"node"`
	Command string `json:"command"`
	Output  string `json:"output"`
}

func (o *options) vppCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "vpp NODE CLI...",
		Short:             "Run a VPP CLI command on a node (e.g. vpp k8s-master show interface)",
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: o.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runCLI(cmd, args[0], strings.Join(args[1:], " "))
		},
	}
}

func (o *options) runCLI(cmd *cobra.Command, nodeName, command string) error {
	c, err := o.cluster(cmd)
	if err != nil {
		return err
	}
	n, err := c.node(cmd.Context(), nodeName)
	if err != nil {
		return err
	}
	out, err := c.vppCLI(cmd.Context(), n, command)
	if err != nil {
		return err
	}
	res := cliResult{Node: n.Name, Command: command, Output: out}
	return render(o.stdout, o.output, res, nil, func() string { return out })
}

// dumpRow is a value of `vppdump`.
type dumpRow struct {
	Key        string          `json:"key"`
	Descriptor string          `json:"descriptor"`
	Value      json.RawMessage `json:"value"`
}

func (o *options) vppdumpCommand() *cobra.Command {
	kinds := vppdumpKindNames()
	return &cobra.Command{
		Use:   "vppdump NODE " + strings.Join(kinds, "|"),
		Short: "Dump what VPP holds on a node: interfaces, NAT, routes (read back from VPP), FIB or ACLs (VPP CLI)",
		Args:  cobra.ExactArgs(2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return kinds, cobra.ShellCompDirectiveNoFileComp
			}
			return o.completeNode(cmd, args, s)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, ok := vppdumpKinds[args[1]]
			if !ok {
				return fmt.Errorf("vppdump: %q is not one of %s", args[1], strings.Join(kinds, ", "))
			}
			if kind.cli != "" {
				return o.runCLI(cmd, args[0], kind.cli)
			}
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			n, err := c.node(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			rows := []dumpRow{}
			for _, d := range kind.descriptors {
				entries, err := c.dump(cmd.Context(), n, d, "SB")
				if err != nil {
					return err
				}
				for _, e := range entries {
					rows = append(rows, dumpRow{Key: e.Key, Descriptor: e.Descriptor, Value: e.Value})
				}
			}
			return render(o.stdout, o.output, rows, func() *table {
				t := &table{header: []string{"KEY", "VALUE"}}
				for _, r := range rows {
					var buf bytes.Buffer
					if json.Compact(&buf, r.Value) != nil {
						buf.Reset()
						buf.Write(r.Value)
					}
					t.add(r.Key, buf.String())
				}
				return t
			}, nil)
		},
	}
}

// eventRow is the part of an event record `history` shows.
type eventRow struct {
	SeqNum          uint64
	ProcessingStart time.Time
	ProcessingEnd   time.Time
	Name            string
	Description     string
	IsFollowUp      bool
	FollowUpTo      uint64
	TxnError        string `json:",omitempty"`
	Txn             *struct {
		SeqNum   uint64            `json:"seqNum"`
		Executed []json.RawMessage `json:"executed,omitempty"`
	} `json:",omitempty"`
}

func (o *options) historyCommand() *cobra.Command {
	var last int
	cmd := &cobra.Command{
		Use:               "history NODE",
		Short:             "Show the last events processed by the node's agent",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			if last < 1 || last > 1000 {
				return fmt.Errorf("--last: %d is not between 1 and 1000", last)
			}
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			n, err := c.node(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var events []json.RawMessage
			path := fmt.Sprintf("%s?last=%d&limit=%d", eventHistoryPath, last, last)
			if err := c.call(cmd.Context(), n, http.MethodGet, path, nil, &events); err != nil {
				return err
			}
			if o.output != formatTable {
				return render(o.stdout, o.output, events, nil, nil)
			}
			t := &table{header: []string{"SEQ", "START", "DURATION", "EVENT", "DESCRIPTION", "OPS", "RESULT"}}
			for _, raw := range events {
				var e eventRow
				if err := json.Unmarshal(raw, &e); err != nil {
					return fmt.Errorf("node %s: event history: %w", n.Name, err)
				}
				ops, result := "-", "ok"
				if e.Txn != nil {
					ops = strconv.Itoa(len(e.Txn.Executed))
				}
				if e.TxnError != "" {
					result = "error: " + shorten(e.TxnError, 100)
				}
				name := e.Name
				if e.IsFollowUp {
					name += fmt.Sprintf(" (follow-up to #%d)", e.FollowUpTo)
				}
				t.add(strconv.FormatUint(e.SeqNum, 10), e.ProcessingStart.Format("15:04:05.000"),
					e.ProcessingEnd.Sub(e.ProcessingStart).Round(time.Microsecond).String(), name,
					orDash(shorten(e.Description, 60)), ops, result)
			}
			return t.write(o.stdout)
		},
	}
	cmd.Flags().IntVar(&last, "last", 20, "how many of the latest events (1..1000)")
	return cmd
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

func (o *options) resyncCommand() *cobra.Command {
	var downstream bool
	cmd := &cobra.Command{
		Use:               "resync NODE",
		Short:             "Ask the node's agent for an etcd resync (or, with --downstream, to re-apply its state to VPP and Linux)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.cluster(cmd)
			if err != nil {
				return err
			}
			n, err := c.node(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var answer map[string]any
			path := resyncPath
			if downstream {
				path = downstreamResyncPath
			}
			if err := c.call(cmd.Context(), n, http.MethodPost, path, nil, &answer); err != nil {
				return err
			}
			answer["node"] = n.Name
			return render(o.stdout, o.output, answer, nil, func() string {
				if downstream {
					return fmt.Sprintf("node %s: downstream resync done (transaction #%v)", n.Name, answer["seqNum"])
				}
				return fmt.Sprintf("node %s: %v", n.Name, answer["message"])
			})
		},
	}
	cmd.Flags().BoolVar(&downstream, "downstream", false, "re-apply the agent's desired state to VPP and Linux instead")
	return cmd
}

const downstreamResyncPath = "/scheduler/downstream-resync"
