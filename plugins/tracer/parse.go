package tracer

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
)

// Line is what one graph node printed about a traced packet.
type Line struct {
	// Node is the graph node (ip4-lookup, acl-plugin-out-ip4-fa, tap3-output ...).
	Node string `json:"node"`
	// Text is the node's trace text, its lines joined by "\n", unindented.
	Text string `json:"text"`
}

// Packet is the trace of one packet (VPP's "Packet N").
type Packet struct {
	// Index is VPP's packet number, from 1.
	Index int `json:"index"`
	// Lines are the nodes the packet visited, in order.
	Lines []Line `json:"lines"`
}

// nodeHeader is the first line of a node's entry: "00:00:01:000123: ip4-lookup".
var nodeHeader = regexp.MustCompile(`^\d+:\d+:\d+:\d+: (\S+)$`)

// Parse splits the output of VPP's "show trace" into packets. Lines it does not
// recognise (thread banners, "No packets in trace buffer") are skipped.
func Parse(showTrace string) []Packet {
	var out []Packet
	var cur *Packet
	sc := bufio.NewScanner(strings.NewReader(showTrace))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(line, "Packet "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "Packet "))
			if err != nil {
				continue
			}
			out = append(out, Packet{Index: n})
			cur = &out[len(out)-1]
		case cur == nil || line == "":
			continue
		case nodeHeader.MatchString(line):
			cur.Lines = append(cur.Lines, Line{Node: nodeHeader.FindStringSubmatch(line)[1]})
		case len(cur.Lines) > 0 && raw != line: // indented: the node's text
			l := &cur.Lines[len(cur.Lines)-1]
			if l.Text != "" {
				l.Text += "\n"
			}
			l.Text += line
		}
	}
	return out
}
