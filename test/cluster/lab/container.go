package lab

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// Reply is what a pod's container answers on each of its declared ports: the pod's name
// and the client's address as the pod saw it (so tests see which backend answered and
// whether the client IP was preserved), on one line. An HTTP request gets the same line
// as the body of an HTTP/1.0 response, so curl works too.
func Reply(pod, client string) string { return pod + " " + client + "\n" }

// container stands for a pod's containers: a TCP or UDP responder on every declared
// container port, listening inside the pod's network namespace.
type container struct {
	pod string

	mu     sync.Mutex
	closed bool
	lns    []net.Listener
	pcs    []net.PacketConn
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// containerPort is a declared port of the pod.
type containerPort struct {
	proto corev1.Protocol
	port  int32
}

// podPorts returns the declared TCP and UDP container ports of the pod (SCTP is not
// served), without duplicates.
func podPorts(pod *corev1.Pod) []containerPort {
	var out []containerPort
	seen := make(map[containerPort]bool)
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			cp := containerPort{proto, p.ContainerPort}
			if (proto == corev1.ProtocolTCP || proto == corev1.ProtocolUDP) && !seen[cp] {
				seen[cp] = true
				out = append(out, cp)
			}
		}
	}
	return out
}

// startContainer listens on the ports inside the namespace at netnsPath.
func startContainer(podName, netnsPath string, ports []containerPort) (*container, error) {
	c := &container{pod: podName, conns: make(map[net.Conn]struct{})}
	for _, p := range ports {
		addr := ":" + strconv.Itoa(int(p.port))
		switch p.proto {
		case corev1.ProtocolTCP:
			ln, err := nsrun.Listen(netnsPath, "tcp4", addr)
			if err != nil {
				c.stop()
				return nil, fmt.Errorf("pod %s: listen on TCP %d: %w", podName, p.port, err)
			}
			c.lns = append(c.lns, ln)
			c.wg.Add(1)
			go c.serveTCP(ln)
		case corev1.ProtocolUDP:
			pc, err := nsrun.ListenPacket(netnsPath, "udp4", addr)
			if err != nil {
				c.stop()
				return nil, fmt.Errorf("pod %s: listen on UDP %d: %w", podName, p.port, err)
			}
			c.pcs = append(c.pcs, pc)
			c.wg.Add(1)
			go c.serveUDP(pc)
		}
	}
	return c, nil
}

func (c *container) serveTCP(ln net.Listener) {
	defer c.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			conn.Close()
			return
		}
		c.conns[conn] = struct{}{}
		c.wg.Add(1)
		c.mu.Unlock()
		go c.answer(conn)
	}
}

// httpMethods start the requests answered as HTTP.
var httpMethods = [][]byte{[]byte("GET "), []byte("HEAD "), []byte("POST "), []byte("PUT ")}

// answer waits briefly for the client's first bytes (so an HTTP request gets an HTTP
// answer), then writes the reply line and closes the connection.
func (c *container) answer(conn net.Conn) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.conns, conn)
		c.mu.Unlock()
		conn.Close()
	}()
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	n, _ := conn.Read(buf)
	line := Reply(c.pod, conn.RemoteAddr().String())
	isHTTP := false
	for _, m := range httpMethods {
		if bytes.HasPrefix(buf[:n], m) {
			isHTTP = true
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if isHTTP {
		fmt.Fprintf(conn, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(line), line)
		return
	}
	_, _ = conn.Write([]byte(line))
}

func (c *container) serveUDP(pc net.PacketConn) {
	defer c.wg.Done()
	buf := make([]byte, 2048)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		_, _ = pc.WriteTo([]byte(Reply(c.pod, from.String())), from)
	}
}

// stop closes every listener and open connection and waits for the goroutines.
func (c *container) stop() {
	c.mu.Lock()
	c.closed = true
	for _, ln := range c.lns {
		ln.Close()
	}
	for _, pc := range c.pcs {
		pc.Close()
	}
	for conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
