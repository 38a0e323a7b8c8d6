package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	k8snode "github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/dbwatcher"
)

// Agent REST paths netctl uses (the agents' constants live in their plugins; the test
// checks these against them).
const (
	readinessPath    = "/readiness"
	ipamPath         = "/contiv/v1/ipam"
	allocationsPath  = "/contiv/v1/ipam/allocations"
	cliPath          = "/vpp/command"
	dumpPath         = "/scheduler/dump"
	eventHistoryPath = "/controller/event-history"
	resyncPath       = "/controller/resync"
)

// node is one node of the cluster as netctl sees it.
type node struct {
	ID   uint32   `json:"id"`
	Name string   `json:"name"`
	IPs  []string `json:"ips"`
	// MgmtIP is the Kubernetes InternalIP of the node, where its agent listens.
	MgmtIP string `json:"managementIP,omitempty"`
	// URL is the base URL of the node's agent REST API.
	URL string `json:"agentURL"`
}

// cluster finds nodes in etcd and talks to their agents.
type cluster struct {
	cfg  Config
	http *http.Client
	// isLocal says whether an IP is an address of this machine.
	isLocal func(net.IP) bool
	// defaultSocket is DefaultAdminSocket (tests move it).
	defaultSocket string
	// sockets are the clients of the admin sockets used, by path.
	sockets map[string]*http.Client
	// demoConfig is the netctl.conf of `make run` in use when none was named (--config,
	// $CONTIV_NETCTL_CONFIG); searched says where it was looked for when none was found.
	demoConfig, searched string
}

// localAddress says whether ip is assigned to an interface of this machine.
func localAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func newCluster(cfg Config) (*cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hc, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	return &cluster{cfg: cfg, http: hc, isLocal: localAddress, defaultSocket: DefaultAdminSocket,
		sockets: map[string]*http.Client{}}, nil
}

// nodes lists the nodes with a node ID (allocated by their agents) and, with no ID
// yet, the Kubernetes nodes known to contiv-ksr, sorted by ID then name. Without an
// etcd.conf, the nodes of the agents section are listed (IDs unknown).
func (c *cluster) nodes(ctx context.Context) ([]node, error) {
	if c.cfg.EtcdConfig == "" {
		if len(c.cfg.Agents) == 0 {
			return nil, c.noEtcdConfigError()
		}
		var out []node
		for name, u := range c.cfg.Agents {
			out = append(out, node{Name: name, URL: u})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
	kvs, err := c.etcdGet(ctx, ksrkey.KsrPrefix)
	if err != nil {
		return nil, err
	}
	byName := map[string]*node{}
	get := func(name string) *node {
		if n, ok := byName[name]; ok {
			return n
		}
		n := &node{Name: name}
		byName[name] = n
		return n
	}
	for key, data := range kvs {
		rel := strings.TrimPrefix(key, ksrkey.KsrPrefix)
		switch {
		case strings.HasPrefix(rel, vppnode.KeyPrefix()):
			id, err := vppnode.ParseVppNodeFromKey(rel)
			if err != nil {
				continue
			}
			v, err := decode(rel, data)
			if err != nil {
				return nil, err
			}
			vn := v.(*vppnode.VppNode)
			n := get(vn.GetName())
			n.ID = id
			n.IPs = vn.GetIpAddresses()
			if len(n.IPs) == 0 && vn.GetIpAddress() != "" {
				n.IPs = []string{vn.GetIpAddress()}
			}
		case strings.HasPrefix(rel, k8snode.KeyPrefix()):
			v, err := decode(rel, data)
			if err != nil {
				return nil, err
			}
			kn := v.(*k8snode.Node)
			n := get(kn.GetName())
			for _, a := range kn.GetAddresses() {
				if a.GetType() == k8snode.NodeAddress_NodeInternalIP && n.MgmtIP == "" {
					n.MgmtIP = a.GetAddress()
				}
			}
		}
	}
	out := make([]node, 0, len(byName))
	for _, n := range byName {
		n.URL = c.agentURL(n)
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].ID == 0) != (out[j].ID == 0) {
			return out[i].ID != 0
		}
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// noEtcdConfigError says why netctl has no etcd.conf and what to do.
func (c *cluster) noEtcdConfigError() error {
	const fix = "give --etcd-config (the agents' etcd.conf) or --config (a netctl.conf)"
	switch {
	case c.searched != "":
		return fmt.Errorf("no etcd.conf to find the nodes in: no netctl.conf of `make run` found (looked for %s); "+
			"start the demo with `make run` in the repository, or %s", c.searched, fix)
	case c.demoConfig != "":
		return fmt.Errorf("no etcd.conf to find the nodes in: %s names none; %s", c.demoConfig, fix)
	default:
		return fmt.Errorf("no etcd.conf to find the nodes in: %s", fix)
	}
}

// agentURL is where the node's agent answers: the agents section, else the node's
// management IP, else its first VPP IP, at the agent port. For an address of this
// machine (netctl run on a node), the agent's admin socket (localAdminSocket), else
// loopback, where agents without admin-socket serve their admin API.
func (c *cluster) agentURL(n *node) string {
	if u, ok := c.cfg.Agents[n.Name]; ok {
		return u
	}
	host := n.MgmtIP
	if host == "" && len(n.IPs) > 0 {
		host, _, _ = strings.Cut(n.IPs[0], "/")
	}
	if host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && c.isLocal(ip) {
		if sock := c.localAdminSocket(); sock != "" {
			return unixScheme + sock
		}
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	port := c.cfg.AgentPort
	if port == 0 {
		port = DefaultAgentPort
	}
	scheme := "http"
	if c.cfg.AgentTLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// localAdminSocket is the admin socket of this machine's agent: admin-socket when set
// (used even if absent, so that the error says so), else DefaultAdminSocket when a
// socket is there; "" means TCP loopback (admin-socket none, or no socket found).
func (c *cluster) localAdminSocket() string {
	switch c.cfg.AdminSocket {
	case NoAdminSocket:
		return ""
	case "":
		if st, err := os.Stat(c.defaultSocket); err == nil && st.Mode().Type() == os.ModeSocket {
			return c.defaultSocket
		}
		return ""
	}
	return c.cfg.AdminSocket
}

// send sends a request to the node's agent, over its admin socket when its URL is
// unix://, and explains the socket's errors.
func (c *cluster) send(ctx context.Context, n node, method, path string, body io.Reader) (*http.Response, error) {
	hc, base := c.http, n.URL
	sock, viaSocket := strings.CutPrefix(n.URL, unixScheme)
	if viaSocket {
		if hc = c.sockets[sock]; hc == nil {
			hc = c.cfg.socketClient(sock)
			c.sockets[sock] = hc
		}
		base = "http://localhost"
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if u, p, ok := strings.Cut(c.cfg.BasicAuth, ":"); ok {
		req.SetBasicAuth(u, p)
	}
	resp, err := hc.Do(req)
	switch {
	case err == nil:
		return resp, nil
	case viaSocket && errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("node %s: agent's admin socket %s: permission denied: run contiv-netctl as root, "+
			"or as a member of the socket's group (http.conf admin-socket-group): %w", n.Name, sock, err)
	case viaSocket && errors.Is(err, syscall.ENOENT):
		return nil, fmt.Errorf("node %s: agent's admin socket %s does not exist: is the agent running, and is this "+
			"its http.conf admin-socket? (--admin-socket names another, --admin-socket=%s uses TCP loopback): %w",
			n.Name, sock, NoAdminSocket, err)
	}
	return nil, fmt.Errorf("node %s: agent at %s: %w", n.Name, n.URL, err)
}

// node returns the named node.
func (c *cluster) node(ctx context.Context, name string) (node, error) {
	nodes, err := c.nodes(ctx)
	if err != nil {
		return node{}, err
	}
	var names []string
	for _, n := range nodes {
		if n.Name == name {
			if n.URL == "" {
				return n, fmt.Errorf("node %s: no address known for its agent (add it to the agents of netctl.conf)", name)
			}
			return n, nil
		}
		names = append(names, n.Name)
	}
	return node{}, fmt.Errorf("node %q: unknown (nodes: %s)", name, strings.Join(names, ", "))
}

func decode(key string, data []byte) (any, error) {
	res, ok := dbresources.GetResourceByKey(key)
	if !ok {
		return nil, fmt.Errorf("etcd key %s: no resource type for it", key)
	}
	v, err := res.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("etcd key %s: %w", key, err)
	}
	return v, nil
}

// etcdGet reads every key under prefix.
func (c *cluster) etcdGet(ctx context.Context, prefix string) (map[string][]byte, error) {
	data, err := os.ReadFile(c.cfg.EtcdConfig)
	if err != nil {
		return nil, fmt.Errorf("etcd-config: %w", err)
	}
	var ec dbwatcher.EtcdConfig
	if err := infra.ParseConfig(data, &ec, false, nil); err != nil {
		return nil, fmt.Errorf("etcd-config %s: %w", c.cfg.EtcdConfig, err)
	}
	if err := ec.Validate(); err != nil {
		return nil, fmt.Errorf("etcd-config %s: %w", c.cfg.EtcdConfig, err)
	}
	if len(ec.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd-config %s: endpoints: none given", c.cfg.EtcdConfig)
	}
	tlsConf, err := ec.TLSConfig(ec.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("etcd-config %s: %w", c.cfg.EtcdConfig, err)
	}
	if err := c.probeEtcd(ctx, ec.Endpoints); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: ec.Endpoints, DialTimeout: c.cfg.timeout(), TLS: tlsConf, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", ec.Endpoints, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout())
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd %v: list %s: %w", ec.Endpoints, prefix, err)
	}
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out, nil
}

// probeEtcd fails at once, naming the cause and the fix, when no endpoint accepts a
// TCP connection (the etcd client would retry until the timeout and then report only
// a deadline): typically the netctl.conf of a `make run` that has stopped.
func (c *cluster) probeEtcd(ctx context.Context, endpoints []string) error {
	var errs []string
	for _, ep := range endpoints {
		host := ep
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			host = u.Host
		}
		dialCtx, cancel := context.WithTimeout(ctx, c.cfg.timeout())
		conn, err := (&net.Dialer{}).DialContext(dialCtx, "tcp", host)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		errs = append(errs, err.Error())
	}
	msg := fmt.Sprintf("etcd %v (etcd-config %s) does not accept connections: %s", endpoints, c.cfg.EtcdConfig, strings.Join(errs, "; "))
	if c.demoConfig != "" {
		return fmt.Errorf("%s: the agent of `make run` that wrote %s is not running; start it with `make run` "+
			"(it serves etcd and the REST API), or name another cluster with --config or --etcd-config", msg, c.demoConfig)
	}
	return fmt.Errorf("%s: is etcd running and are the endpoints of %s right?", msg, c.cfg.EtcdConfig)
}

// agentError is an agent's answer other than 2xx.
type agentError struct {
	Node, Method, Path string
	Code               int
	Message            string
}

func (e *agentError) Error() string {
	return fmt.Sprintf("node %s: %s %s: %d %s", e.Node, e.Method, e.Path, e.Code, e.Message)
}

// call sends a request to the node's agent and decodes a 2xx JSON answer into out
// (nil: discarded). A body is sent as JSON, as the agents require of state changes.
func (c *cluster) call(ctx context.Context, n node, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	} else if method != http.MethodGet {
		rd = strings.NewReader("{}")
	}
	resp, err := c.send(ctx, n, method, path, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &agentError{Node: n.Name, Method: method, Path: path, Code: resp.StatusCode, Message: msg}
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("node %s: %s %s: decode the answer: %w", n.Name, method, path, err)
	}
	return nil
}

// readiness returns the agent's state (OK, INIT, ERROR, ...); a 503 still carries it.
func (c *cluster) readiness(ctx context.Context, n node) (string, error) {
	resp, err := c.send(ctx, n, http.MethodGet, readinessPath, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		State string `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("node %s: readiness: %w", n.Name, err)
	}
	return body.State, nil
}

// vppCLI runs a VPP CLI command on the node.
func (c *cluster) vppCLI(ctx context.Context, n node, command string) (string, error) {
	var out string
	err := c.call(ctx, n, http.MethodPost, cliPath, map[string]string{"vppclicommand": command}, &out)
	return out, err
}

// dumpEntry is one value of /scheduler/dump.
type dumpEntry struct {
	Key        string          `json:"key"`
	Descriptor string          `json:"descriptor"`
	Value      json.RawMessage `json:"value"`
	Origin     string          `json:"origin"`
}

// dump reads the values of one descriptor in the given view (NB, SB, cached).
func (c *cluster) dump(ctx context.Context, n node, descriptor, view string) ([]dumpEntry, error) {
	var out []dumpEntry
	q := url.Values{"descriptor": {descriptor}, "view": {view}}
	err := c.call(ctx, n, http.MethodGet, dumpPath+"?"+q.Encode(), nil, &out)
	return out, err
}
