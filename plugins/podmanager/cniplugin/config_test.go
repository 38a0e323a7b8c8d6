package cniplugin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		command  string
		conf     string
		wantCode uint // 0 = no error
		wantMsg  string
		check    func(t *testing.T, c *netConf)
	}{
		{
			name:    "deployment config",
			command: "ADD",
			conf:    `{"cniVersion":"1.1.0","name":"k8s-pod-network","type":"contiv-cni","grpcServer":"/var/run/contiv/cni.sock","logFile":"/var/run/contiv/cni.log"}`,
			check: func(t *testing.T, c *netConf) {
				if c.GRPCServer != "/var/run/contiv/cni.sock" || c.logTarget() != "/var/run/contiv/cni.log" || c.ipamType() != "" {
					t.Errorf("conf = %+v", c)
				}
				if got := c.describe(); got != `network "k8s-pod-network" cniVersion 1.1.0 grpcServer /var/run/contiv/cni.sock` {
					t.Errorf("describe = %q", got)
				}
			},
		},
		{
			name:    "defaults and chained IPAM",
			command: "ADD",
			conf:    `{"cniVersion":"0.3.1","name":"n","type":"contiv-cni","grpcServer":"10.0.0.1:9111","etcdEndpoints":"127.0.0.1:32379","ipam":{"type":"host-local"}}`,
			check: func(t *testing.T, c *netConf) {
				if c.logTarget() != defaultLogFile || c.ipamType() != "host-local" || c.EtcdEndpoints != "127.0.0.1:32379" {
					t.Errorf("conf = %+v", c)
				}
			},
		},
		{
			name:    "empty logFile means stderr",
			command: "DEL",
			conf:    `{"name":"n","grpcServer":"/s","logFile":""}`,
			check: func(t *testing.T, c *netConf) {
				if c.logTarget() != "" {
					t.Errorf("logTarget = %q", c.logTarget())
				}
			},
		},
		{
			name: "missing grpcServer", command: "ADD", conf: `{"cniVersion":"1.1.0","name":"n"}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: "lacks grpcServer",
		},
		{
			name: "missing grpcServer on DEL", command: "DEL", conf: `{"name":"n","grpcServer":""}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: "lacks grpcServer",
		},
		{
			name: "grpcServer neither path nor host:port", command: "ADD", conf: `{"name":"n","grpcServer":"var/run/contiv/cni.sock"}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: `grpcServer "var/run/contiv/cni.sock": neither a unix socket path (starting with /) nor host:port`,
		},
		{
			name: "grpcServer with a bad port", command: "DEL", conf: `{"name":"n","grpcServer":"10.0.0.1:grpc"}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: `grpcServer "10.0.0.1:grpc": port "grpc" is not a number from 1 to 65535`,
		},
		{
			name: "grpcServer with port 0", command: "ADD", conf: `{"name":"n","grpcServer":"10.0.0.1:0"}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: `port "0" is not a number`,
		},
		{
			name: "grpcServer without host", command: "ADD", conf: `{"name":"n","grpcServer":":9111"}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: `grpcServer ":9111": no host before the port`,
		},
		{
			name: "grpcServer host:port", command: "ADD", conf: `{"name":"n","grpcServer":"[fd00::1]:9111"}`,
		},
		{
			name: "prevResult on ADD", command: "ADD",
			conf:     `{"cniVersion":"1.1.0","name":"n","grpcServer":"/s","prevResult":{"cniVersion":"1.1.0","ips":[]}}`,
			wantCode: types.ErrInvalidNetworkConfig, wantMsg: "must be the first plugin of the chain",
		},
		{
			name: "prevResult on CHECK", command: "CHECK",
			conf: `{"cniVersion":"1.1.0","name":"n","grpcServer":"/s","prevResult":{"cniVersion":"1.1.0","ips":[]}}`,
		},
		{
			name: "not JSON", command: "ADD", conf: `{"name":`,
			wantCode: types.ErrDecodingFailure, wantMsg: "cannot decode",
		},
		{
			name: "grpcServer of the wrong type", command: "ADD", conf: `{"name":"n","grpcServer":42}`,
			wantCode: types.ErrDecodingFailure, wantMsg: "cannot decode",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tc.conf), tc.command)
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("parseConfig: %v", err)
				}
				if tc.check != nil {
					tc.check(t, c)
				}
				return
			}
			var cniErr *types.Error
			if !errors.As(err, &cniErr) || cniErr.Code != tc.wantCode || !strings.Contains(cniErr.Error(), tc.wantMsg) {
				t.Errorf("parseConfig = %v, want code %d with %q", err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestOpenLogFallsBackToStderr(t *testing.T) {
	var stderr bytes.Buffer
	log, closeLog := openLog(filepath.Join(t.TempDir(), "missing-dir", "cni.log"), &stderr)
	log.Info("hello")
	closeLog()
	if !strings.Contains(stderr.String(), "cannot open log file") || !strings.Contains(stderr.String(), "hello") {
		t.Errorf("stderr = %q", stderr.String())
	}

	path := filepath.Join(t.TempDir(), "cni.log")
	stderr.Reset()
	log, closeLog = openLog(path, &stderr)
	log.WithField("cmd", "ADD").Info("request")
	closeLog()
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "cmd=ADD") || stderr.Len() != 0 {
		t.Errorf("log file = %q, %v; stderr = %q", data, err, stderr.String())
	}
}

func TestLogIsRotatedWhenFull(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cni.log")
	full := strings.Repeat("x", maxLogSize)
	if err := os.WriteFile(path+".1", []byte("oldest"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	log, closeLog := openLog(path, &stderr)
	log.Info("after rotation")
	closeLog()
	if data, err := os.ReadFile(path + ".1"); err != nil || string(data) != full {
		t.Errorf("%s.1 holds %d bytes (%v), want the full log", path, len(data), err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "after rotation") || len(data) > 1024 {
		t.Errorf("new log = %q, %v", data, err)
	}

	// Below the limit nothing moves.
	log, closeLog = openLog(path, &stderr)
	log.Info("appended")
	closeLog()
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "after rotation") || !strings.Contains(string(data), "appended") {
		t.Errorf("log below the limit was rotated: %q", data)
	}
}

// TestConcurrentRotationKeepsTheFullLog: plugin processes that find the log full at the
// same time rotate it once; none renames the fresh log over the full backup.
func TestConcurrentRotationKeepsTheFullLog(t *testing.T) {
	for round := range 20 {
		path := filepath.Join(t.TempDir(), "cni.log")
		full := strings.Repeat("x", 4096)
		if err := os.WriteFile(path, []byte(full), 0o600); err != nil {
			t.Fatal(err)
		}
		const writers = 8
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				f, err := openLogFile(path, int64(len(full)))
				if err != nil {
					t.Error(err)
					return
				}
				fmt.Fprintf(f, "line %d\n", i)
				f.Close()
			})
		}
		wg.Wait()
		if data, err := os.ReadFile(path + ".1"); err != nil || string(data) != full {
			t.Fatalf("round %d: backup holds %d bytes (%v), want the full log", round, len(data), err)
		}
		data, err := os.ReadFile(path)
		if err != nil || strings.Count(string(data), "line ") != writers {
			t.Fatalf("round %d: new log = %q, %v; want the %d lines", round, data, err, writers)
		}
	}
}
