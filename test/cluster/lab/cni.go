package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CNINetworkName and CNIVersion are those of k8s/10-contiv-vpp.conflist.
const (
	CNINetworkName = "k8s-pod-network"
	CNIVersion     = "1.1.0"
)

// cniTimeout bounds one plugin run.
const cniTimeout = 90 * time.Second

// cniPlugin runs contiv-cni for one node as the container runtime does for kubelet: one
// plugin execution per command, the parameters in CNI_* variables, the plugin's network
// configuration on stdin.
type cniPlugin struct {
	binDir string // CNI_PATH; holds contiv-cni
	conf   []byte // the network configuration of contiv-cni
}

// CNIConfig returns the network configuration the runtime gives contiv-cni on stdin: the
// contiv-cni entry of k8s/10-contiv-vpp.conflist with the list's name and cniVersion
// added (as libcni does), the node's socket and log file. The portmap entry of the list
// is not run: the lab has no hostPort pods.
func CNIConfig(grpcServer, logFile string) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": CNIVersion,
		"name":       CNINetworkName,
		"type":       "contiv-cni",
		"grpcServer": grpcServer,
		"logFile":    logFile,
	}
	return json.Marshal(conf)
}

// cniRequest is one call: which sandbox, which pod.
type cniRequest struct {
	containerID string
	netnsPath   string
	namespace   string
	name        string
	uid         string
}

// args is the CNI_ARGS of kubelet's runtime for the pod.
func (r cniRequest) args() string {
	return strings.Join([]string{
		"IgnoreUnknown=1",
		"K8S_POD_NAMESPACE=" + r.namespace,
		"K8S_POD_NAME=" + r.name,
		"K8S_POD_INFRA_CONTAINER_ID=" + r.containerID,
		"K8S_POD_UID=" + r.uid,
	}, ";")
}

// cniResult is the part of a CNI result the lab uses.
type cniResult struct {
	IPs []struct {
		Address string `json:"address"`
		Gateway string `json:"gateway"`
	} `json:"ips"`
}

// add runs ADD and returns the pod's addresses: one of each family of the lab, as
// the result lists them. A result without an address of a family the lab has is an
// error.
func (p *cniPlugin) add(ctx context.Context, r cniRequest, f IPFamily) ([]net.IP, error) {
	out, err := p.run(ctx, "ADD", r)
	if err != nil {
		return nil, err
	}
	var res cniResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("CNI ADD %s/%s: result: %w: %q", r.namespace, r.name, err, out)
	}
	var ips []net.IP
	var has4, has6 bool
	for _, ip := range res.IPs {
		addr, _, err := net.ParseCIDR(ip.Address)
		if err != nil {
			return nil, fmt.Errorf("CNI ADD %s/%s: address %q of the result: %w", r.namespace, r.name, ip.Address, err)
		}
		if a4 := addr.To4(); a4 != nil {
			addr, has4 = a4, true
		} else {
			has6 = true
		}
		ips = append(ips, addr)
	}
	if has4 != f.HasIPv4() || has6 != f.HasIPv6() {
		return nil, fmt.Errorf("CNI ADD %s/%s: the result's addresses %v are not those of a %s lab: %s", r.namespace, r.name, ips, f, out)
	}
	return ips, nil
}

// del runs DEL.
func (p *cniPlugin) del(ctx context.Context, r cniRequest) error {
	_, err := p.run(ctx, "DEL", r)
	return err
}

func (p *cniPlugin) run(ctx context.Context, command string, r cniRequest) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, cniTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(p.binDir, "contiv-cni"))
	cmd.Env = append(envWithoutCNI(),
		"CNI_COMMAND="+command,
		"CNI_CONTAINERID="+r.containerID,
		"CNI_NETNS="+r.netnsPath,
		"CNI_IFNAME=eth0",
		"CNI_PATH="+p.binDir,
		"CNI_ARGS="+r.args())
	cmd.Stdin = bytes.NewReader(p.conf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("CNI %s %s/%s (container %s): %v: %s %s", command, r.namespace, r.name,
			shortID(r.containerID), err, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// envWithoutCNI is the process environment without CNI variables.
func envWithoutCNI() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CNI_") {
			env = append(env, kv)
		}
	}
	return env
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
