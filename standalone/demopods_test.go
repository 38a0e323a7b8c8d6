package standalone

import (
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLocalDemoPodsOfTheExampleCluster(t *testing.T) {
	data, err := os.ReadFile(demoFile)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := localDemoPods(data, "k8s-master")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods {
		s := p.namespace + "/" + p.name
		for _, port := range p.ports {
			s += " " + port.proto + ":" + strconv.Itoa(port.port)
		}
		got = append(got, s)
	}
	want := []string{"default/web-1 TCP:80", "kube-system/coredns-1 UDP:53 TCP:53", "default/client"}
	if !slices.Equal(got, want) {
		t.Errorf("local pods of k8s-master: %q, want %q", got, want)
	}
	if pods, err := localDemoPods(data, "no-such-node"); err != nil || len(pods) != 0 {
		t.Errorf("pods of an unknown node: %v, %v; want none", pods, err)
	}
	if _, err := localDemoPods([]byte("kind: Pod\nspec: [\n"), "k8s-master"); err == nil {
		t.Error("a broken document was accepted")
	}
}

func TestDemoResponderAnswersWithTheName(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go serveDemoTCP(l, "web-1")
	ask := func(req string) string {
		t.Helper()
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if req != "" {
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
		}
		data, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := ask(""); got != "web-1\n" {
		t.Errorf("a silent client got %q, want the name and a newline", got)
	}
	got := ask("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.0 200 OK\r\n") || !strings.HasSuffix(got, "\r\n\r\nweb-1\n") {
		t.Errorf("an HTTP client got %q, want a 200 answer with the name as body", got)
	}

	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	go serveDemoUDP(u, "coredns-1")
	c, err := net.Dial("udp4", u.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "coredns-1\n" {
		t.Errorf("UDP answer %q, %v; want the name", buf[:n], err)
	}
}
