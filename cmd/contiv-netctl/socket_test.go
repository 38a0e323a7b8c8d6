package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// startSocketAgent runs the agent's REST server (plugins/rest) with its admin API on
// the unix socket sock only, and a VPP CLI handler that answers the command it got.
func startSocketAgent(t *testing.T, sock string) *rest.Plugin {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	p := rest.NewPlugin(rest.Deps{Log: log, Config: infra.StaticConfig{"endpoint": "127.0.0.1:0", "admin-socket": sock}})
	p.RegisterAdmin("POST "+cliPath, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Cmd string `json:"vppclicommand"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		rest.WriteJSON(w, 200, "ran: "+req.Cmd)
	})
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestNetctlOnTheNodeUsesTheAgentsAdminSocket: netctl on a node (the node's address is
// local) reaches that node's agent, whose admin API is on its admin socket only, at
// the default socket path; agents of other nodes stay on TCP.
func TestNetctlOnTheNodeUsesTheAgentsAdminSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	p := startSocketAgent(t, sock)
	_, port, _ := net.SplitHostPort(p.Addr().String())

	portNum, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newCluster(Config{AgentPort: portNum})
	if err != nil {
		t.Fatal(err)
	}
	c.defaultSocket = sock
	c.isLocal = func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.20.0.10")) }
	n := node{Name: "this-node", MgmtIP: "10.20.0.10"}
	n.URL = c.agentURL(&n)
	if n.URL != "unix://"+sock {
		t.Fatalf("URL of this node's agent = %q, want its admin socket", n.URL)
	}
	out, err := c.vppCLI(t.Context(), n, "show version")
	if err != nil || out != "ran: show version" {
		t.Errorf("VPP CLI over the admin socket = %q, %v", out, err)
	}
	if state, err := c.readiness(t.Context(), n); err != nil || state == "" {
		t.Errorf("readiness over the admin socket = %q, %v", state, err)
	}

	// Over TCP loopback (admin-socket none), the agent refuses and names its socket.
	c.cfg.AdminSocket = NoAdminSocket
	n.URL = c.agentURL(&n)
	_, err = c.vppCLI(t.Context(), n, "show version")
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), sock) {
		t.Errorf("VPP CLI over TCP loopback = %v, want 403 naming the admin socket", err)
	}
}

func TestAgentURLOfThisNodeFallsBackToLoopbackWithoutASocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	c, err := newCluster(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.isLocal = func(net.IP) bool { return true }
	c.defaultSocket = sock
	here := node{Name: "here", MgmtIP: "10.20.0.10"}
	if got := c.agentURL(&here); got != "http://127.0.0.1:9999" {
		t.Errorf("no socket at the default path: %q, want TCP loopback", got)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.agentURL(&here); got != "http://127.0.0.1:9999" {
		t.Errorf("a regular file at the default path: %q, want TCP loopback", got)
	}
	c.cfg.AdminSocket = "/elsewhere/admin.sock"
	if got := c.agentURL(&here); got != "unix:///elsewhere/admin.sock" {
		t.Errorf("admin-socket named: %q, want it used", got)
	}
	_, err = c.vppCLI(t.Context(), node{Name: "here", URL: c.agentURL(&here)}, "show version")
	if err == nil || !strings.Contains(err.Error(), "admin socket /elsewhere/admin.sock does not exist") {
		t.Errorf("missing admin socket: %v, want it named", err)
	}
}

// TestNetctlReachesAnAgentGivenByItsSocket runs the netctl command line with
// --agent NODE=unix://PATH.
func TestNetctlReachesAnAgentGivenByItsSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	startSocketAgent(t, sock)
	conf := filepath.Join(dir, "netctl.conf")
	if err := os.WriteFile(conf, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustNetctl(t, "--config="+conf, "--agent=n1=unix://"+sock, "vpp", "n1", "show", "version")
	if !strings.Contains(out, "ran: show version") {
		t.Errorf("vpp over --agent n1=unix://: %q", out)
	}
}
