package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// Inside every node namespace (a private loopback, so fixed ports are safe):
const (
	// NodeEtcdAddr is where a node's agent finds the Contiv etcd: a relay on the node's
	// loopback to the lab's etcd (the deployment's client port).
	NodeEtcdAddr = "127.0.0.1:12379"
	// NodeRESTAddr is where the agent serves its REST API in the node namespace.
	NodeRESTAddr = "127.0.0.1:9990"
	// NIC is the name of the node's VPP NIC (the first DPDK interface, the main one).
	NIC = "GigabitEthernet0/8/0"
	// NICLink is the Linux end, in the node namespace, of the node's link to the bridge.
	NICLink = "nic0"
)

// Node is one node of the lab: a network namespace with vpp-sim, contiv-agent and a
// kubelet stand-in.
type Node struct {
	// Name is the Kubernetes node name (node1, node2, ...).
	Name string
	// Netns is the name of the node's network namespace.
	Netns string
	// Dir holds the node's configuration files, sockets, state and logs.
	Dir string
	// ID is the node ID the agent allocated.
	ID uint32
	// IP is the node IP (on the VPP NIC), also the Node's first InternalIP: IPv4, or
	// IPv6 in a single-stack IPv6 lab.
	IP net.IP
	// IPv6 is the node's IPv6 on the VPP NIC (the Node's second InternalIP in a
	// dual-stack lab; IP in an IPv6 one); nil without IPv6.
	IPv6 net.IP
	// Zone is the node's zone (label topology.kubernetes.io/zone).
	Zone string
	// PodSubnet is the node's pod subnet (of the primary family: IPv4, or IPv6 in a
	// single-stack IPv6 lab).
	PodSubnet *net.IPNet
	// PodSubnetIPv6 is the node's IPv6 pod subnet (PodSubnet in an IPv6 lab); nil
	// without IPv6.
	PodSubnetIPv6 *net.IPNet
	// HostIPv6 is the IPv6 of the node's own namespace on its link to VPP (the host
	// end of the VPP-host interconnect, ::2 of its subnet); nil without IPv6.
	HostIPv6 net.IP
	// RESTAddr is the agent REST API as reachable from the lab's namespace (a relay).
	RESTAddr string
	// VPPSocket is the simulator's binary API socket.
	VPPSocket string
	// StatsSocket is the simulator's stats socket (VPP's stats segment), which the
	// agent's statscollector reads (govpp.conf stats-socket-path).
	StatsSocket string
	// CNISocket is the agent's CNI socket.
	CNISocket string
	// Sim and Agent are the node's processes.
	Sim, Agent *Process
	// STN is the node's contiv-stn (single-NIC nodes only).
	STN *Process
	// dhcpServer is the server of the node's DHCP lease (single-NIC nodes only).
	dhcpServer net.IP

	lab       *Lab
	index     int
	kubelet   *kubelet
	rest      *http.Client
	cl        cleanups
	etcdRelay *relay
	renderer  ServiceRenderer // contiv.conf's serviceRenderer (lab.mu)
}

// NetnsPath is the path of the node's network namespace.
func (n *Node) NetnsPath() string { return netnsPath(n.Netns) }

// contivConf is the lab's contiv.conf: the values of k8s/examples/contiv.conf (the
// ConfigMap's), the service range of the API server, a default gateway on the node
// network (the "internet" namespace) for SNAT of traffic leaving the cluster, and
// routeServiceCIDRToVPP: the lab runs no kube-proxy, so a node's own namespace reaches
// ClusterIPs and NodePorts through VPP. With IPv6 it has the ipamConfig.ipv6 section
// (family.go); a single-stack IPv6 lab has no IPv4 range, no IPv4 gateway and no
// overlay (IPv6). serviceRenderer is r (renderer.go).
func contivConf(f IPFamily, r ServiceRenderer) string {
	overlay := "useNoOverlay: false\n"
	if f == IPv6 {
		overlay = "useNoOverlay: true\n"
	}
	ipam := "ipamConfig:\n  nodeInterconnectDHCP: false\n"
	if f.HasIPv4() {
		ipam += `  nodeInterconnectCIDR: ` + NodeNetwork + `
  defaultGateway: ` + GatewayIP + `
  serviceCIDR: ` + ServiceCIDR + `
  podSubnetCIDR: ` + PodCIDR + `
  podSubnetOneNodePrefixLen: ` + strconv.Itoa(PodCIDRNodeMask) + `
  vppHostSubnetCIDR: 172.30.0.0/16
  vppHostSubnetOneNodePrefixLen: 24
  vxlanCIDR: 192.168.30.0/24
`
	}
	return overlay + `useTAPInterfaces: true
tapInterfaceVersion: 2
tapv2RxRingSize: 256
tapv2TxRingSize: 256
tcpChecksumOffloadDisabled: true
natExternalTraffic: true
mtuSize: 1450
scanIPNeighbors: true
ipNeighborScanInterval: 1
ipNeighborStaleThreshold: 4
routeServiceCIDRToVPP: true
crdNodeConfigurationDisabled: true
` + rendererConfLine(r) + ipam + f.ipamConfigIPv6()
}

// startNode creates the node's namespace and link, starts vpp-sim and the agent, waits
// for the node ID and registers the Node with a kubelet stand-in. Readiness of the agent
// is awaited separately (waitReady), so nodes can become ready in parallel.
func (l *Lab) startNode(ctx context.Context, index int) (_ *Node, err error) {
	name := "node" + strconv.Itoa(index)
	n := &Node{Name: name, Netns: l.Name + "-" + name, Dir: filepath.Join(l.Dir, name), lab: l, index: index,
		Zone: l.cfg.Zones[(index-1)%len(l.cfg.Zones)], renderer: l.cfg.ServiceRenderer}
	defer func() {
		if err != nil {
			err = fmt.Errorf("node %s: %w", name, err)
			if cerr := n.cl.run(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := addNetns(n.Netns); err != nil {
		return nil, err
	}
	n.cl.add("netns "+n.Netns, func() error { return deleteNetns(n.Netns) })
	bridgePort := "n" + strconv.Itoa(index)
	if err := runIP("-n", n.Netns, "link", "add", NICLink, "type", "veth", "peer", "name", bridgePort, "netns", l.netNS); err != nil {
		return nil, err
	}
	if err := runIP("-n", l.netNS, "link", "set", bridgePort, "master", bridgeName, "up"); err != nil {
		return nil, err
	}
	if err := runIP("-n", n.Netns, "link", "set", NICLink, "up"); err != nil {
		return nil, err
	}

	// The agent's path to the Contiv etcd.
	ln, err := nsrun.Listen(n.NetnsPath(), "tcp", NodeEtcdAddr)
	if err != nil {
		return nil, fmt.Errorf("etcd relay: %w", err)
	}
	etcdHostPort := strings.TrimPrefix(l.contivEtcd.ClientURL, "http://")
	n.etcdRelay = startRelay(ln, etcdHostPort, (&net.Dialer{}).DialContext)
	n.cl.add("etcd relay", func() error { n.etcdRelay.close(); return nil })

	n.VPPSocket = filepath.Join(n.Dir, "api.sock")
	n.StatsSocket = filepath.Join(n.Dir, "stats.sock")
	n.CNISocket = filepath.Join(n.Dir, "cni.sock")
	files := map[string]string{
		"contiv.conf":     contivConf(l.cfg.IPFamily, l.cfg.ServiceRenderer),
		"etcd.conf":       "endpoints:\n  - " + NodeEtcdAddr + "\nallow-delayed-start: true\n",
		"bolt.conf":       "db-path: " + filepath.Join(n.Dir, "bolt.db") + "\n",
		"govpp.conf":      "binapi-socket-path: " + n.VPPSocket + "\nstats-socket-path: " + n.StatsSocket + "\n",
		"podmanager.conf": "socketPath: " + n.CNISocket + "\nstateFile: " + filepath.Join(n.Dir, "pods.json") + "\n",
		"http.conf":       "endpoint: " + NodeRESTAddr + "\n",
	}
	if l.cfg.SingleNIC {
		files["contiv.conf"] += "stealInterface: " + NICLink + "\nstnRecordFile: " + n.stnRecordFile() + "\n"
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, f), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}

	if l.cfg.SingleNIC {
		if err := n.setUpSingleNIC(); err != nil {
			return nil, err
		}
	}
	simArgs := []string{filepath.Join(l.cfg.ContivBinDir, "vpp-sim"), "-linux", "-socket", n.VPPSocket,
		"-stats-socket", n.StatsSocket}
	if !l.cfg.SingleNIC {
		nic := NIC
		if l.NICBound {
			nic += "=" + NICLink
		}
		simArgs = append(simArgs, "-nic", nic)
	} // single-NIC: no DPDK NIC; the agent drives the stolen nic0 as af_packet host-nic0
	n.Sim = newProcess(name+"/vpp-sim", filepath.Join(n.Dir, "vpp-sim.log"), n.Netns, nil, simArgs...)
	n.cl.add("vpp-sim", func() error { return n.Sim.Stop(syscall.SIGTERM, 10*time.Second) })
	if err := n.startSim(ctx); err != nil {
		return nil, err
	}

	argv := []string{filepath.Join(l.cfg.ContivBinDir, "contiv-agent"), "-node-name", name,
		"-node-id-file", filepath.Join(n.Dir, "node-id")}
	for _, f := range []string{"contiv", "etcd", "bolt", "govpp", "podmanager", "http"} {
		argv = append(argv, "-"+f+"-config", filepath.Join(n.Dir, f+".conf"))
	}
	n.Agent = newProcess(name+"/contiv-agent", filepath.Join(n.Dir, "contiv-agent.log"), n.Netns,
		[]string{"MICROSERVICE_LABEL=" + name, "CONFIG_DIR=" + n.Dir}, argv...)
	n.cl.add("contiv-agent", func() error { return n.Agent.Stop(syscall.SIGTERM, 15*time.Second) })
	if err := n.Agent.Start(); err != nil {
		return nil, err
	}

	restLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("REST relay: %w", err)
	}
	restRelay := startRelay(restLn, NodeRESTAddr, DialerIn(n.NetnsPath()))
	n.cl.add("REST relay", func() error { restRelay.close(); return nil })
	n.RESTAddr = restRelay.Addr()
	tr := &http.Transport{DisableKeepAlives: true}
	n.rest = &http.Client{Transport: tr, Timeout: 10 * time.Second}

	var ipam IPAMInfo
	err = testkit.Wait(ctx, 60*time.Second, "the agent's node ID", func() error {
		if err := n.Agent.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		if err := n.GetJSON("/contiv/v1/ipam", &ipam); err != nil {
			return err
		}
		if ipam.NodeID == 0 || ipam.NodeIP == "" || ipam.PodSubnetThisNode == "" {
			return fmt.Errorf("IPAM not complete yet: %+v", ipam)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := n.takeIPAM(ipam, l.cfg.IPFamily); err != nil {
		return nil, err
	}

	conf, err := CNIConfig(n.CNISocket, filepath.Join(n.Dir, "cni.log"))
	if err != nil {
		return nil, err
	}
	nodeIPs, podCIDRs := []net.IP{n.IP}, []string{n.PodSubnet.String()}
	if l.cfg.IPFamily == DualStack {
		nodeIPs, podCIDRs = append(nodeIPs, n.IPv6), append(podCIDRs, n.PodSubnetIPv6.String())
	}
	n.kubelet = &kubelet{
		node: name, nodeIPs: nodeIPs, podCIDRs: podCIDRs, family: l.cfg.IPFamily, zone: n.Zone, prefix: l.Name, kube: l.Kube,
		cni: &cniPlugin{binDir: l.cfg.ContivBinDir, conf: conf}, logf: l.logf,
	}
	n.cl.add("kubelet", func() error { return n.kubelet.stop(true) })
	if err := n.kubelet.start(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// startSim (re)starts vpp-sim, waits until it serves its socket and gives its NIC the
// node's MAC.
func (n *Node) startSim(ctx context.Context) error {
	started := n.Sim.LogCount("msg=started") // the log is appended to across restarts
	if err := n.Sim.Start(); err != nil {
		return err
	}
	return testkit.Wait(ctx, 20*time.Second, "vpp-sim serves its API socket", func() error {
		if err := n.Sim.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		if n.Sim.LogCount("msg=started") <= started {
			return errors.New("no start message in its log yet")
		}
		if n.lab.cfg.SingleNIC {
			return nil // no NIC in vpp-sim: the af_packet on nic0 takes the NIC's MAC from the STN record
		}
		return n.setNICMAC()
	})
}

// WaitReady waits until the agent reports ready (GET /readiness: OK).
func (n *Node) WaitReady(ctx context.Context, timeout time.Duration) error {
	return testkit.Wait(ctx, timeout, n.Name+": the agent is ready", func() error {
		if err := n.Agent.exitError(); err != nil {
			return testkit.Permanent(err)
		}
		return n.Ready()
	})
}

// Ready returns nil when the agent's GET /readiness answers 200 with state OK.
func (n *Node) Ready() error {
	code, data, err := n.do(http.MethodGet, "/readiness", nil)
	if err != nil {
		return err
	}
	var r struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("GET /readiness: %d %w: %s", code, err, data)
	}
	if code != http.StatusOK || r.State != "OK" {
		return fmt.Errorf("GET /readiness: %d %s", code, bytes.TrimSpace(data))
	}
	return nil
}

// StopAgent stops the agent with SIGTERM (SIGKILL: a crash).
func (n *Node) StopAgent(sig syscall.Signal) error {
	return n.Agent.Stop(sig, 15*time.Second)
}

// StartAgent starts the agent again and waits until it is ready.
func (n *Node) StartAgent(ctx context.Context) error {
	if err := n.Agent.Start(); err != nil {
		return err
	}
	return n.WaitReady(ctx, 60*time.Second)
}

// RestartVPP kills vpp-sim (a VPP crash) and starts it again with empty state.
func (n *Node) RestartVPP(ctx context.Context) error {
	if err := n.Sim.Kill(); err != nil {
		return err
	}
	return n.startSim(ctx)
}

// IPAMInfo is the part of GET /contiv/v1/ipam the lab reads.
type IPAMInfo struct {
	NodeID            uint32 `json:"nodeId"`
	NodeName          string `json:"nodeName"`
	NodeIP            string `json:"nodeIP"`
	PodSubnetThisNode string `json:"podSubnetThisNode"`
	VppHostNetwork    string `json:"vppHostNetwork"`
	// PodSubnetThisNodeIPv6 and VppHostNetworkIPv6: a dual-stack node's IPv6 ones.
	PodSubnetThisNodeIPv6 string `json:"podSubnetThisNodeIPv6"`
	VppHostNetworkIPv6    string `json:"vppHostNetworkIPv6"`
}

// takeIPAM sets the node's ID, addresses and subnets from its agent's IPAM.
func (n *Node) takeIPAM(ipam IPAMInfo, f IPFamily) error {
	n.ID = ipam.NodeID
	ip, _, err := net.ParseCIDR(ipam.NodeIP)
	if err != nil {
		if ip = net.ParseIP(ipam.NodeIP); ip == nil {
			return fmt.Errorf("node IP %q from the agent: not an IP", ipam.NodeIP)
		}
	}
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	n.IP = ip
	if _, n.PodSubnet, err = net.ParseCIDR(ipam.PodSubnetThisNode); err != nil {
		return fmt.Errorf("pod subnet %q from the agent: %w", ipam.PodSubnetThisNode, err)
	}
	hostNet := ipam.VppHostNetwork
	switch f {
	case IPv6:
		n.IPv6, n.PodSubnetIPv6 = n.IP, n.PodSubnet
	case DualStack:
		n.IPv6, hostNet = nodeIPv6(n.ID), ipam.VppHostNetworkIPv6
		if _, n.PodSubnetIPv6, err = net.ParseCIDR(ipam.PodSubnetThisNodeIPv6); err != nil {
			return fmt.Errorf("IPv6 pod subnet %q from the agent: %w", ipam.PodSubnetThisNodeIPv6, err)
		}
	default:
		return nil
	}
	_, hn, err := net.ParseCIDR(hostNet)
	if err != nil || hn.IP.To4() != nil {
		return fmt.Errorf("IPv6 VPP-host network %q from the agent: not an IPv6 subnet (%v)", hostNet, err)
	}
	n.HostIPv6 = slices.Clone(hn.IP)
	n.HostIPv6[15] += 2 // VPP has ::1, the host ::2 (ipam's VPP-host interconnect)
	return nil
}

func (n *Node) do(method, path string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://"+n.RESTAddr+path, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.rest.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s on %s: %w", method, path, n.Name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// GetJSON GETs path from the agent's REST API and decodes a 200 answer into out.
func (n *Node) GetJSON(path string, out any) error {
	code, data, err := n.do(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s on %s: %d %s", path, n.Name, code, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("GET %s on %s: %w: %s", path, n.Name, err, data)
	}
	return nil
}

// Metrics GETs the agent's /metrics (Prometheus text format).
func (n *Node) Metrics() ([]byte, error) {
	code, data, err := n.do(http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics on %s: %d %s", n.Name, code, bytes.TrimSpace(data))
	}
	return data, nil
}

// PodNetns returns the network namespace name and IP of a pod running on this node.
func (n *Node) PodNetns(namespace, name string) (netns string, ip net.IP, ok bool) {
	return n.kubelet.podSandbox(namespace, name)
}
