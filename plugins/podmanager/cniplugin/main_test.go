package cniplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

func TestMainPrintsSpecErrors(t *testing.T) {
	// add runs the ADD handler with conf, as skel would, and returns its error.
	add := func(conf string) pluginMain {
		return func(funcs skel.CNIFuncs, _ version.PluginInfo, _ string) *types.Error {
			err := funcs.Add(&skel.CmdArgs{ContainerID: "c1", Netns: "/var/run/netns/p", IfName: "eth0", StdinData: []byte(conf)})
			if err == nil {
				return nil
			}
			var e *types.Error
			if !errors.As(err, &e) {
				e = types.NewError(types.ErrInternal, err.Error(), "")
			}
			return e
		}
	}
	tests := []struct {
		name     string
		run      pluginMain
		wantExit int
		want     map[string]any // the error JSON; nil = no output
	}{
		{name: "success", run: func(skel.CNIFuncs, version.PluginInfo, string) *types.Error { return nil }},
		{name: "error before any configuration was read (bad environment)",
			run: func(skel.CNIFuncs, version.PluginInfo, string) *types.Error {
				return types.NewError(types.ErrInvalidEnvironmentVariables, "required env variables [CNI_NETNS] missing", "")
			},
			wantExit: 1,
			want:     map[string]any{"cniVersion": "1.1.0", "code": 4.0, "msg": "required env variables [CNI_NETNS] missing"}},
		{name: "the configuration's version",
			run:      add(`{"cniVersion":"0.4.0","name":"n","type":"contiv-cni","logFile":""}`),
			wantExit: 1,
			want: map[string]any{"cniVersion": "0.4.0", "code": 7.0,
				"msg": "contiv-cni: the network configuration lacks grpcServer (the contiv agent's socket, e.g. /var/run/contiv/cni.sock)"}},
		{name: "an unsupported version gives the latest",
			run:      add(`{"cniVersion":"9.9.9","name":"n","type":"contiv-cni","grpcServer":"/x.sock","logFile":""}`),
			wantExit: 1},
		{name: "undecodable configuration",
			run:      add(`{"cniVersion":`),
			wantExit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := mainWith(tt.run, "about", &out); got != tt.wantExit {
				t.Errorf("exit = %d, want %d", got, tt.wantExit)
			}
			if tt.wantExit == 0 {
				if out.Len() != 0 {
					t.Errorf("output on success: %s", out.String())
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("error output is no JSON: %v\n%s", err, out.String())
			}
			if tt.want == nil {
				// Only the version is asserted: the latest, since the configuration's is unusable.
				if got["cniVersion"] != "1.1.0" || got["code"] == nil || got["msg"] == "" {
					t.Errorf("error output = %v, want cniVersion 1.1.0 with a code and a message", got)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Errorf("error output = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (output %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// TestAddIntoTheNodesOwnNamespaceIsRefusedBeforeTheAgentIsAsked: CNI_NETNS naming the
// namespace the plugin runs in (the node's) is an error of code 4 naming it, and the
// request is never served (the agent is not asked).
func TestAddIntoTheNodesOwnNamespaceIsRefusedBeforeTheAgentIsAsked(t *testing.T) {
	conf := `{"cniVersion":"1.1.0","name":"n","type":"contiv-cni","grpcServer":"/x.sock","logFile":""}`
	for _, netns := range []string{"/proc/self/ns/net", fmt.Sprintf("/proc/%d/ns/net", os.Getpid())} {
		args := &skel.CmdArgs{ContainerID: "c1", Netns: netns, IfName: "eth0", StdinData: []byte(conf),
			Args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web"}
		served := false
		err := runWith("ADD", args, nil, io.Discard, io.Discard, func(*request) error { served = true; return nil })
		var cniErr *types.Error
		if !errors.As(err, &cniErr) || cniErr.Code != types.ErrInvalidEnvironmentVariables ||
			!strings.Contains(cniErr.Msg, "CNI_NETNS "+netns+" is the node's own network namespace") {
			t.Errorf("ADD into %s: %v", netns, err)
		}
		if served {
			t.Errorf("ADD into %s was served", netns)
		}
	}
	// Another namespace, a missing path: served as usual (the agent decides).
	for _, netns := range []string{"/proc/self/ns/mnt", "/var/run/netns/missing"} {
		args := &skel.CmdArgs{ContainerID: "c1", Netns: netns, IfName: "eth0", StdinData: []byte(conf),
			Args: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web"}
		served := false
		if err := runWith("ADD", args, nil, io.Discard, io.Discard, func(*request) error { served = true; return nil }); err != nil || !served {
			t.Errorf("ADD into %s: served %v, %v", netns, served, err)
		}
	}
}
