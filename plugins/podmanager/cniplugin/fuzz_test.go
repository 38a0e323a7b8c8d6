package cniplugin

import (
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// FuzzParseConfig feeds arbitrary network configurations (contiv-cni's stdin) to the
// parser, for every command: a configuration or a CNI error with a spec code, never a
// panic.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"cniVersion":"1.1.0","name":"k8s-pod-network","type":"contiv-cni","grpcServer":"/var/run/contiv/cni.sock","logFile":"/var/run/contiv/cni.log"}`,
		`{"cniVersion":"0.4.0","name":"n","type":"contiv-cni","grpcServer":"127.0.0.1:9111","ipam":{"type":"host-local","subnet":"10.9.0.0/24"}}`,
		`{"cniVersion":"1.1.0","name":"n","type":"contiv-cni","grpcServer":"/x.sock","prevResult":{"cniVersion":"1.1.0","interfaces":[{"name":"eth0","sandbox":"/ns"}],"ips":[{"address":"10.0.0.2/24","interface":0}]}}`,
		`{"cniVersion":"1.1.0","name":"n","type":"contiv-cni","grpcServer":"host:99999"}`,
		`{"cniVersion":`,
		``,
	} {
		for _, cmd := range []string{"ADD", "DEL", "CHECK", "STATUS", "GC"} {
			f.Add([]byte(seed), cmd)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, command string) {
		conf, err := parseConfig(data, command)
		if err != nil {
			e, ok := err.(*types.Error)
			if !ok || e.Code == 0 {
				t.Fatalf("parseConfig error %v is no CNI error with a code", err)
			}
			return
		}
		_ = conf.describe()
		_ = conf.logTarget()
		_ = errorVersion(data)
	})
}

// FuzzCNIArgs feeds arbitrary CNI_ARGS to contiv-cni's reading of them: a pod name that
// passes checkPodArgs follows the Kubernetes name rules.
func FuzzCNIArgs(f *testing.F) {
	for _, seed := range []string{
		"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=c1",
		"K8S_POD_NAME=../../etc;K8S_POD_NAMESPACE=default",
		"K8S_POD_NAME=" + strings.Repeat("a", 300) + ";K8S_POD_NAMESPACE=default",
		"K8S_POD_NAME==;;",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		pod := podFromArgs(args)
		if err := checkPodArgs(args); err == nil && pod != "" {
			ns, name, _ := strings.Cut(pod, "/")
			if ns != "" && strings.ContainsAny(name, "/;= \x00") {
				t.Fatalf("checkPodArgs(%q) accepted pod %q", args, pod)
			}
		} else if err != nil {
			if e, ok := err.(*types.Error); !ok || e.Code != types.ErrInvalidEnvironmentVariables {
				t.Fatalf("checkPodArgs error %v, want code 4", err)
			}
		}
	})
}
