package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
)

// TestTrafficStandaloneDemo runs the demo as `make run` does as root (README, "The demo
// carries traffic"): the agent with -standalone-demo-pods creates the example cluster's
// pods of k8s-master as network namespaces through its CNI server, each answering on its
// container ports with its name. It checks what the README shows: the client pod
// reaching web-1 directly and through the web Service, kube-dns over UDP, the trace of
// such a packet, and that the pods are gone when the agent exits.
func TestTrafficStandaloneDemo(t *testing.T) {
	t.Parallel()
	e := requireEnv(t)
	bin := binaries(t, e)
	dir := t.TempDir()
	httpConf := filepath.Join(dir, "http.conf")
	if err := os.WriteFile(httpConf, []byte("endpoint: "+restEndpoint+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%s%d-%d-", nsPrefix, os.Getpid(), nsSeq.Add(1))
	t.Cleanup(func() { // after the agent stopped (cleanups run last registered first)
		names, _ := listTestNetns()
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				(&netns{e: e, name: name}).delete()
			}
		}
	})
	ns := newNodeNetns(t, e)
	ns.keepMounts = true // the demo pods' namespaces must be visible to the test
	agent := startProcess(t, ns, dir, "contiv-agent", filepath.Join(bin, "contiv-agent"),
		"-standalone", "-standalone-dir", filepath.Join(dir, "standalone"),
		"-cluster", filepath.Join(e.root, "k8s", "examples", "demo-cluster.yaml"),
		"-contiv-config", filepath.Join(e.root, "k8s", "examples", "contiv.conf"),
		"-http-config", httpConf, "-node-name", nodeName,
		"-standalone-demo-pods", "-standalone-demo-netns-prefix", prefix)
	node := &contivNode{tb: t, e: e, ns: ns, rest: newRESTClient(t, ns, restEndpoint), agent: agent}

	// The local pods of the example cluster, with the addresses of their status.
	pods := map[string]string{"default-web-1": "10.1.1.2", "kube-system-coredns-1": "10.1.1.3", "default-client": "10.1.1.4"}
	podNS := map[string]*netns{}
	for name := range pods {
		podNS[name] = &netns{e: e, name: prefix + name, path: filepath.Join(netnsDir, prefix+name)}
	}
	testkit.Eventually(t, 60*time.Second, "the demo pods are wired", func() error {
		if err := agent.exitedError(); err != nil {
			return err
		}
		for name, ip := range pods {
			if _, err := os.Stat(podNS[name].path); err != nil {
				return err
			}
			if _, err := checkPodWired(podNS[name], ip+"/32", podGateway); err != nil {
				return err
			}
		}
		return nil
	})
	client := podNS["default-client"]

	// As in the README: curl http://10.1.1.2/ and http://10.96.0.100/ from the client.
	httpGet := func(url string) (answer, error) {
		tr := &http.Transport{DialContext: nsrun.Dialer(client.path), DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 2 * time.Second}).Get(url)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return answer{name: strings.TrimSpace(string(body))}, err
	}
	node.expect(t, "client -> web-1 (pod IP)", func() (answer, error) { return httpGet("http://10.1.1.2/") }, "web-1")

	// web has web-1 here and web-2 on k8s-worker1, a node the demo only declares:
	// connections NAT sends there leave through VXLAN and get no answer. Every answer
	// must come from web-1, and some must.
	answered := 0
	for i := 0; i < 10 && answered < 3; i++ {
		node.armTrace(t)
		a, err := httpGet("http://10.96.0.100/")
		if err != nil {
			continue
		}
		if a.name != "web-1" {
			t.Fatalf("the web service answered %q, want web-1", a.name)
		}
		answered++
		trace, err := node.rest.vppCLI("show trace")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"virtio-input", "nat44-ed-out2in", "10.96.0.100", "ip4-rewrite"} {
			if !strings.Contains(trace, want) {
				t.Errorf("show trace of a connection to the web service lacks %q:\n%s", want, trace)
			}
		}
	}
	if answered == 0 {
		node.diagnose(t)
		t.Fatal("10 connections from the client to the web service (10.96.0.100:80): none answered")
	}

	// kube-dns over UDP: coredns-1 answers (coredns-2 is on k8s-worker1).
	dnsAnswered := false
	for i := 0; i < 10 && !dnsAnswered; i++ {
		a, err := askUDPRaw(client, "10.96.0.10:53")
		if err != nil {
			continue
		}
		if a != "coredns-1" {
			t.Fatalf("kube-dns answered %q, want coredns-1", a)
		}
		dnsAnswered = true
	}
	if !dnsAnswered {
		node.diagnose(t)
		t.Fatal("10 datagrams from the client to kube-dns (10.96.0.10:53): none answered")
	}

	// Ctrl-C: the agent deletes the pods (CNI) and their namespaces.
	if code, err := agent.stop(os.Interrupt, 20*time.Second); err != nil || code != 0 {
		t.Fatalf("the agent exited with %d, %v after SIGINT, want 0", code, err)
	}
	names, err := listTestNetns()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			t.Errorf("the namespace %s of a demo pod survived the agent", name)
		}
	}
}

// askUDPRaw sends a datagram from inside ns to addr and returns the answer's text.
func askUDPRaw(ns *netns, addr string) (string, error) {
	var answer string
	err := nsrun.Run(ns.path, func() error {
		c, err := net.Dial("udp4", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("?")); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		n, err := c.Read(buf)
		answer = strings.TrimSpace(string(buf[:n]))
		return err
	})
	return answer, err
}
