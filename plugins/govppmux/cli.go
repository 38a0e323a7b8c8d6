package govppmux

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"go.fd.io/govpp/binapi/vlib"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/rest"
)

// CLIPath is where the agent forwards VPP CLI commands, as vpp-agent's REST does:
// POST {"vppclicommand": "show interface"} returns the CLI output as a JSON string.
const CLIPath = "/vpp/command"

// maxCLIRequest bounds the body of a CLI request.
const maxCLIRequest = 4096

// CLIRequest is the body of POST /vpp/command.
type CLIRequest struct {
	// VppCLICommand is the VPP CLI command to run.
	VppCLICommand string `json:"vppclicommand"`
}

// RunCLI runs a VPP CLI command through cli_inband and returns its output.
func (p *Plugin) RunCLI(command string) (string, error) {
	command = strings.TrimSpace(command)
	if command == "" {
		return "", errors.New("empty VPP CLI command")
	}
	ch, err := p.NewAPIChannel()
	if err != nil {
		return "", err
	}
	defer ch.Close()
	reply := &vlib.CliInbandReply{}
	if err := ch.SendRequest(&vlib.CliInband{Cmd: command}).ReceiveReply(reply); err != nil {
		return "", fmt.Errorf("VPP CLI %q: %w", command, err)
	}
	return reply.Reply, nil
}

// RegisterHandlers serves POST /vpp/command.
func (p *Plugin) RegisterHandlers(r infra.HandlerRegistrar) {
	r.HandleFunc("POST "+CLIPath, p.serveCLI)
}

func (p *Plugin) serveCLI(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxCLIRequest+1))
	if err != nil {
		rest.WriteError(w, http.StatusBadRequest, "read request: "+err.Error())
		return
	}
	if len(body) > maxCLIRequest {
		rest.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request larger than %d bytes", maxCLIRequest))
		return
	}
	var cli CLIRequest
	if err := json.Unmarshal(body, &cli); err != nil {
		rest.WriteError(w, http.StatusBadRequest, `body must be {"vppclicommand": "<command>"}: `+err.Error())
		return
	}
	if strings.TrimSpace(cli.VppCLICommand) == "" {
		rest.WriteError(w, http.StatusBadRequest, "vppclicommand: must not be empty")
		return
	}
	if !p.IsConnected() {
		rest.WriteError(w, http.StatusServiceUnavailable, "VPP is not connected")
		return
	}
	out, err := p.RunCLI(cli.VppCLICommand)
	if err != nil {
		rest.WriteError(w, http.StatusInternalServerError, err.Error())
		return
	}
	p.log.WithField("command", cli.VppCLICommand).Debug("VPP CLI command run over REST")
	rest.WriteJSON(w, http.StatusOK, out)
}
