package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// ServiceRenderer is contiv.conf's serviceRenderer (Config.ServiceRenderer): the renderer
// of IPv4 Services. IPv6 Services are cnat's whatever it says (docs/dev-guide/SERVICES.md,
// "The cnat renderer").
type ServiceRenderer string

const (
	// RendererNAT44 renders IPv4 Services with NAT44-ED (the agent's default).
	RendererNAT44 ServiceRenderer = "nat44"
	// RendererCNAT renders IPv4 Services with VPP's cnat plugin too.
	RendererCNAT ServiceRenderer = "cnat"
)

// ParseServiceRenderer parses the name of a ServiceRenderer ("" is RendererNAT44).
func ParseServiceRenderer(s string) (ServiceRenderer, error) {
	switch r := ServiceRenderer(s); r {
	case "":
		return RendererNAT44, nil
	case RendererNAT44, RendererCNAT:
		return r, nil
	}
	return "", fmt.Errorf("service renderer %q: want %s or %s", s, RendererNAT44, RendererCNAT)
}

// rendererConfLine is contiv.conf's line choosing the renderer.
func rendererConfLine(r ServiceRenderer) string { return "serviceRenderer: " + string(r) + "\n" }

// ServiceRenderer returns the renderer the node's contiv.conf names (what its agent
// runs with since its last start).
func (n *Node) ServiceRenderer() ServiceRenderer {
	n.lab.mu.Lock()
	defer n.lab.mu.Unlock()
	return n.renderer
}

// SetServiceRenderer rewrites the node's contiv.conf with serviceRenderer r; the agent
// reads it at its next start (StopAgent, StartAgent).
func (n *Node) SetServiceRenderer(r ServiceRenderer) error {
	if _, err := ParseServiceRenderer(string(r)); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	path := filepath.Join(n.Dir, "contiv.conf")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.lab.mu.Lock()
	defer n.lab.mu.Unlock()
	old := rendererConfLine(n.renderer)
	if !bytes.Contains(data, []byte(old)) {
		return fmt.Errorf("node %s: %s has no line %q", n.Name, path, strings.TrimSpace(old))
	}
	data = bytes.Replace(data, []byte(old), []byte(rendererConfLine(r)), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.renderer = r
	return nil
}

// VPPCLI runs a command of VPP's CLI on the node (vpp-sim's cli_inband, through the
// agent's POST /vpp/command) and returns its output.
func (n *Node) VPPCLI(command string) (string, error) {
	body, err := json.Marshal(map[string]string{"vppclicommand": command})
	if err != nil {
		return "", err
	}
	code, data, err := n.do(http.MethodPost, "/vpp/command", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("VPP CLI %q on %s: %d %s", command, n.Name, code, bytes.TrimSpace(data))
	}
	var out string
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("VPP CLI %q on %s: %w: %s", command, n.Name, err, data)
	}
	return out, nil
}
