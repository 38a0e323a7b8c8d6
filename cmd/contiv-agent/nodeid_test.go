package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contiv-vpp/contiv-vpp/pkg/health"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/nodesync"
)

// nodeSyncIDFile returns the node ID file of the nodesync of the agent that args
// compose.
func nodeSyncIDFile(t *testing.T, args ...string) string {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o := defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := checkNodeIDFile(fs, o); err != nil {
		t.Fatal(err)
	}
	logs, err := infra.NewLogRegistry(io.Discard, infra.LogFormatText)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := composeCells(o, "node-1", logs, health.NewRegistry(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	asm, err := infra.Assemble(cells...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range asm.Plugins {
		if ns, ok := p.(*nodesync.NodeSync); ok {
			return ns.IDFile
		}
	}
	t.Fatal("the agent has no nodesync")
	return ""
}

// TestNodeIDFileFlagIsWhereNodesyncKeepsTheID: -node-id-file sets the file nodesync
// keeps the node ID in (several agents on one host, as in the lab, each need their
// own); without it the file is the default one, empty means none, and standalone mode
// keeps it in its directory.
func TestNodeIDFileFlagIsWhereNodesyncKeepsTheID(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "node1", "node-id")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"flag", []string{"-node-id-file", own}, own},
		{"default", nil, nodesync.DefaultIDFile},
		{"none", []string{"-node-id-file="}, ""},
		{"standalone", []string{"-standalone", "-standalone-dir", dir}, filepath.Join(dir, "node-id")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeSyncIDFile(t, tc.args...); got != tc.want {
				t.Errorf("nodesync keeps the node ID in %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBadNodeIDFileStopsTheStartNamingTheFlag: a relative path, or the flag with
// -standalone (which would ignore it), exits with status 2 naming the flag and the
// value.
func TestBadNodeIDFileStopsTheStartNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-node-id-file=run/node-id"}, `contiv-agent: -node-id-file: node ID file "run/node-id": must be an absolute path (or empty for none)`},
		{[]string{"-standalone", "-node-id-file=/run/x/node-id"}, `contiv-agent: -node-id-file "/run/x/node-id": not used with -standalone, which keeps the node ID in -standalone-dir`},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"-node-name=n1"}, tc.args...), &out, &errOut); code != 2 {
			t.Errorf("%v: exit code %d, want 2; stderr: %s", tc.args, code, errOut.String())
		}
		if !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: stderr lacks %q:\n%s", tc.args, tc.want, errOut.String())
		}
	}
}
