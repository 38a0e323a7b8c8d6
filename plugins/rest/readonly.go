package rest

import (
	"encoding/json"
	"strings"
)

// VPPCommandPattern is the pattern of the VPP CLI endpoint (plugins/govppmux), whose
// body is {"vppclicommand": "<command>"}. It is a POST, but most of what it runs only
// reads (operators and scripts poll "show ..."): see ReadOnlyVPPCLI.
const VPPCommandPattern = "POST /vpp/command"

// decodeVPPCommand decodes the command of a POST /vpp/command body as its handler does
// (encoding/json into a vppclicommand field: whitespace anywhere, keys in any order, the
// key's case ignored, the last of duplicate keys taken); ok is false when the body is
// not such JSON or holds no command.
func decodeVPPCommand(body []byte) (command string, ok bool) {
	var req struct {
		Command *string `json:"vppclicommand"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Command == nil {
		return "", false
	}
	return *req.Command, true
}

// ReadOnlyVPPCLI tells whether a VPP CLI command only reads VPP's state: a conservative
// allow-list, one line whose first word is "show" or one of its abbreviations VPP
// accepts ("sh", "sho"). Anything else is taken as state-changing, including a command
// with a line break or a control character (VPP's cli_inband runs every line it is
// given) or a ';'.
func ReadOnlyVPPCLI(command string) bool {
	command = strings.TrimSpace(command)
	for _, c := range command {
		if (c < ' ' && c != '\t') || c == 0x7f || c == ';' {
			return false
		}
	}
	word, _, _ := strings.Cut(strings.ReplaceAll(command, "\t", " "), " ")
	switch word {
	case "show", "sho", "sh":
		return true
	}
	return false
}
