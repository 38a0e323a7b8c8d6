package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/contiv-vpp/contiv-vpp/plugins/podmanager"
)

// The configuration given to contiv-cni is the contiv-cni entry of the shipped conflist,
// with the list's name and version, and the lab's socket and log file.
func TestCNIConfigIsTheShippedEntryWithTheNodesPaths(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "k8s", "10-contiv-vpp.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Name       string           `json:"name"`
		CNIVersion string           `json:"cniVersion"`
		Plugins    []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list.Plugins, func(p map[string]any) bool { return p["type"] == "contiv-cni" })
	if i < 0 {
		t.Fatalf("no contiv-cni entry in the conflist: %s", data)
	}
	want := list.Plugins[i]
	want["name"], want["cniVersion"] = list.Name, list.CNIVersion
	want["grpcServer"], want["logFile"] = "/lab/node1/cni.sock", "/lab/node1/cni.log"

	conf, err := CNIConfig("/lab/node1/cni.sock", "/lab/node1/cni.log")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(conf, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CNI config %v, want %v", got, want)
	}
}

func TestCNIArgsAreKubeletsForThePod(t *testing.T) {
	r := cniRequest{containerID: "abc", netnsPath: "/var/run/netns/x", namespace: "ns1", name: "web-1", uid: "u-1"}
	want := "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1"
	if got := r.args(); got != want {
		t.Errorf("CNI_ARGS %q, want %q", got, want)
	}
}

func TestPodPortsAreTheDeclaredPortsOnce(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
		{Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 9, Protocol: corev1.ProtocolSCTP}}},
	}}}
	want := []containerPort{{corev1.ProtocolTCP, 80}, {corev1.ProtocolUDP, 53}, {corev1.ProtocolSCTP, 9}}
	if got := podPorts(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("ports %v, want %v", got, want)
	}
}

func TestPodPortsIncludeNativeSidecarsNotPlainInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", Ports: []corev1.ContainerPort{{ContainerPort: 7}}},
			{Name: "proxy", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 9090}}},
		},
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
	}}
	want := []containerPort{{corev1.ProtocolTCP, 80}, {corev1.ProtocolTCP, 9090}}
	if got := podPorts(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("ports %v, want %v", got, want)
	}
}

func TestCleanupsRunInReverseOrderAndJoinErrors(t *testing.T) {
	var c cleanups
	var order []string
	c.add("a", func() error { order = append(order, "a"); return nil })
	c.add("b", func() error { order = append(order, "b"); return errors.New("boom") })
	c.add("c", func() error { order = append(order, "c"); return nil })
	err := c.run()
	if !slices.Equal(order, []string{"c", "b", "a"}) {
		t.Errorf("order %v, want c b a", order)
	}
	if err == nil || !strings.Contains(err.Error(), "remove b: boom") {
		t.Errorf("error %v, want it to name b", err)
	}
	if err := c.run(); err != nil || len(order) != 3 {
		t.Errorf("a second run did something: %v %v", err, order)
	}
}

func TestRelayForwardsBothWaysAndCloseEndsOpenConnections(t *testing.T) {
	// An echo server as the target.
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := startRelay(ln, target.Addr().String(), (&net.Dialer{}).DialContext)
	conn, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo through the relay: %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() { r.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return with a connection open")
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the client connection survived close")
	}
}

// The container answers on its ports inside a network namespace, as TCP line, HTTP and
// UDP, with the pod's name, the client's address and the pod's namespace; its readiness
// switch and its exit path work.
func TestContainerAnswersWithThePodNameOnTCPHTTPAndUDP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lab: needs root (a network namespace)")
	}
	name := fmt.Sprintf("ctvlab-unit-%d", os.Getpid())
	if err := addNetns(name); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := deleteNetns(name); err != nil {
			t.Error(err)
		}
	}()
	path := netnsPath(name)
	c, err := startContainer("ns-a", "web-1", path, []containerPort{{corev1.ProtocolTCP, 8080}, {corev1.ProtocolUDP, 8081}}, DualStack)
	if err != nil {
		t.Fatal(err)
	}
	dial := DialerIn(path)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A dual-stack pod answers on both families, each seeing the client's address.
	for _, host := range []string{"127.0.0.1", "::1"} {
		conn, err := dial(ctx, "tcp", net.JoinHostPort(host, "8080"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("hello\n"))
		line, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if f := strings.Fields(line); err != nil || len(f) != 3 || f[0] != "web-1" || !strings.HasPrefix(f[1], net.JoinHostPort(host, "")) || f[2] != "ns-a" {
			t.Errorf("TCP answer over %s: %q, %v; want web-1, the client address and ns-a", host, line, err)
		}
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 5 * time.Second}
	resp, err := hc.Get("http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "web-1 ") {
		t.Errorf("HTTP answer %d %q", resp.StatusCode, body)
	}

	for _, host := range []string{"127.0.0.1", "::1"} {
		uc, err := dial(ctx, "udp", net.JoinHostPort(host, "8081"))
		if err != nil {
			t.Fatal(err)
		}
		_ = uc.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = uc.Write([]byte("x"))
		buf := make([]byte, 256)
		n, err := uc.Read(buf)
		uc.Close()
		if err != nil || !strings.HasPrefix(string(buf[:n]), "web-1 ") {
			t.Errorf("UDP answer over %s: %q, %v", host, buf[:n], err)
		}
	}

	httpDo := func(method, path string) int {
		req, _ := http.NewRequestWithContext(ctx, method, "http://127.0.0.1:8080"+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, step := range []struct {
		method string
		want   int
	}{{http.MethodGet, 200}, {http.MethodDelete, 503}, {http.MethodGet, 503}, {http.MethodPut, 200}, {http.MethodGet, 200}} {
		if got := httpDo(step.method, ReadyPath); got != step.want {
			t.Errorf("%s %s: %d, want %d", step.method, ReadyPath, got, step.want)
		}
	}
	if got := httpDo(http.MethodPost, ExitPath); got != http.StatusOK {
		t.Errorf("POST %s: %d", ExitPath, got)
	}
	select {
	case <-c.done():
	case <-ctx.Done():
		t.Fatal("the server did not exit after POST " + ExitPath)
	}
	if conn, err := dial(ctx, "tcp", "127.0.0.1:8080"); err == nil {
		conn.Close()
		t.Error("the container still listens after its exit")
	}
	c.stop() // the kubelet stops it again: no effect
}

// Any valid pod (namespace of 63 characters, name of 253) gets a network namespace whose
// path the agent accepts; short names stay readable; two pods never share one.
func TestPodNetnsNamesFitTheAgentsLimitForTheLongestPodNames(t *testing.T) {
	pod := func(ns, name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	longNS, longName := strings.Repeat("n", 63), strings.Repeat("p", 253)
	seen := make(map[string]bool)
	for _, p := range []*corev1.Pod{
		pod(longNS, longName, "u1"), pod(longNS, longName, "u2"), pod(longNS, longName[:252]+"q", "u1"),
		pod("default", longName, "u3"), pod(longNS, "web", "u4"),
	} {
		name := podNetnsName("ctvlab-abcdef", p)
		if err := podmanager.ValidateNetnsPath(netnsPath(name)); err != nil {
			t.Errorf("pod %s/%s: %v", p.Namespace, p.Name, err)
		}
		if seen[name] {
			t.Errorf("pod %s/%s (%s): netns %s given twice", p.Namespace, p.Name, p.UID, name)
		}
		seen[name] = true
	}
	if got := podNetnsName("ctvlab-abcdef", pod("default", "web-1", "u")); got != "ctvlab-abcdef-default-web-1" {
		t.Errorf("short name %q, want ctvlab-abcdef-default-web-1", got)
	}
}

// A lab whose owner died without Close is swept by the next SweepStale: its namespaces,
// its temporary directory and its registry entry go; a live owner's lab stays.
func TestSweepStaleRemovesWhatADeadLabLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lab: needs root (network namespaces, " + RunDir + ")")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ctvlab-sweep%d", os.Getpid())
	dir := t.TempDir() + "/" + name + "-dir"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := addNetns(name + "-node1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = deleteNetns(name + "-node1"); _ = unregisterLab(name) })
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := fmt.Sprintf("%d\n%s\n", dead.Process.Pid, dir)
	if err := os.WriteFile(filepath.Join(RunDir, name), []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	live := name + "-live"
	if err := registerLab(live, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unregisterLab(live) })

	swept, err := SweepStale()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(swept, name) || slices.Contains(swept, live) {
		t.Errorf("swept %v, want %s and not %s", swept, name, live)
	}
	if _, err := os.Stat(netnsPath(name + "-node1")); !os.IsNotExist(err) {
		t.Errorf("the dead lab's namespace survived (%v)", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dead lab's directory survived (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(RunDir, live)); err != nil {
		t.Errorf("the live lab's entry was removed: %v", err)
	}
}

// A container's SCTP port answers as its TCP ports do, where the kernel has SCTP.
func TestContainerAnswersOnSCTP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("lab: needs root (a network namespace)")
	}
	if err := SCTPSupported(); err != nil {
		t.Skipf("lab: SCTP: %v (modprobe sctp, where the kernel has the module)", err)
	}
	name := fmt.Sprintf("ctvlab-sctp-%d", os.Getpid())
	if err := addNetns(name); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = deleteNetns(name) }()
	c, err := startContainer("ns-a", "web-1", netnsPath(name), []containerPort{{corev1.ProtocolSCTP, 9000}}, IPv4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := DialSCTP(ctx, netnsPath(name), "127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Write([]byte("hello\n"))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if f := strings.Fields(line); err != nil || len(f) != 3 || f[0] != "web-1" || f[2] != "ns-a" {
		t.Errorf("SCTP answer %q, %v", line, err)
	}
}
