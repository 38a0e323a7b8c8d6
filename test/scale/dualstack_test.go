package scale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The IPv6 half of a dual-stack cluster (setup.Dual). The ranges are those of
// docs/CONFIG.md's dual-stack example; node k (its node ID is k) gets the k-th
// prefix of each, as the IPAM cuts them.
const ipamIPv6 = `  ipv6:
    podSubnetCIDR: fd00:10:1::/48
    vppHostSubnetCIDR: fd00:172:30::/96
    vxlanCIDR: fd00:192:168:30::/112
    nodeInterconnectCIDR: fd00:192:168:16::/112
    serviceCIDR: fd00:10:96::/108
`

// nodePodCIDR6 is node k's IPv6 pod CIDR (its /64 of fd00:10:1::/48).
func nodePodCIDR6(k int) string { return fmt.Sprintf("fd00:10:1:%x::/64", k) }

// podIP6 is the IPv6 address of pod p of node k: podIP's host part in the node's /64.
func podIP6(k, p int) string { return fmt.Sprintf("fd00:10:1:%x::%x", k, p%198+2) }

// nodeIP6 is node k's IPv6 InternalIP.
func nodeIP6(k int) string { return fmt.Sprintf("fd00:10:20::%x", k) }

// nodeVPPIP6 is node k's IPv6 VPP address in the IPv6 node interconnect network.
func nodeVPPIP6(k int) string { return fmt.Sprintf("fd00:192:168:16::%x/112", k) }

// contivConf returns the contiv.conf of the agent: the shipped example, with
// ipamConfig.ipv6 added for a dual-stack setup and serviceRenderer set when the setup
// names one (written into dir).
func (s setup) contivConf(root, dir string) (string, error) {
	example := filepath.Join(root, "k8s", "examples", "contiv.conf")
	if !s.Dual && s.Renderer == "" {
		return example, nil
	}
	data, err := os.ReadFile(example)
	if err != nil {
		return "", fmt.Errorf("contiv.conf: %w", err)
	}
	conf := string(data)
	if s.Dual {
		const anchor = "\nipamConfig:\n"
		if !strings.Contains(conf, anchor) {
			return "", fmt.Errorf("dual-stack contiv.conf: %s has no top-level ipamConfig to add ipv6 to", example)
		}
		conf = strings.Replace(conf, anchor, anchor+ipamIPv6, 1)
	}
	if s.Renderer != "" {
		// The example names the default renderer: its line is replaced, or one added.
		line := "serviceRenderer: " + s.Renderer
		if rendererLine.MatchString(conf) {
			conf = rendererLine.ReplaceAllLiteralString(conf, line)
		} else {
			conf += line + "\n"
		}
	}
	path := filepath.Join(dir, "contiv.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", fmt.Errorf("contiv.conf: %w", err)
	}
	return path, nil
}

// rendererLine matches contiv.conf's top-level serviceRenderer line.
var rendererLine = regexp.MustCompile(`(?m)^serviceRenderer:.*$`)

// checkDualStack checks that the agent runs the IPv6 half of the plan: its IPAM
// (GET /contiv/v1/ipam) gives node 1, the agent's node, its IPv6 pod subnet. A
// dual-stack run that fell back to IPv4 would otherwise measure the wrong thing.
func checkDualStack(ac *agentClient) error {
	data, err := ac.get("/contiv/v1/ipam")
	if err != nil {
		return fmt.Errorf("dual-stack check: %w", err)
	}
	var ipam struct {
		PodSubnetThisNodeIPv6 string `json:"podSubnetThisNodeIPv6"`
	}
	if err := json.Unmarshal(data, &ipam); err != nil {
		return fmt.Errorf("dual-stack check: /contiv/v1/ipam: %w", err)
	}
	if want := nodePodCIDR6(1); ipam.PodSubnetThisNodeIPv6 != want {
		return fmt.Errorf("dual-stack check: /contiv/v1/ipam podSubnetThisNodeIPv6 %q, want %q: the agent is not dual-stack",
			ipam.PodSubnetThisNodeIPv6, want)
	}
	return nil
}
