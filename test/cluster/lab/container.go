package lab

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/contiv-vpp/contiv-vpp/internal/nsrun"
)

// Reply is what a pod's container answers on each of its declared ports: the pod's name,
// the client's address as the pod saw it (so tests see which backend answered and whether
// the client IP was preserved) and the pod's namespace, on one line. An HTTP request gets
// the same line as the body of an HTTP/1.0 response, so curl works too.
func Reply(pod, client, namespace string) string {
	return pod + " " + client + " " + namespace + "\n"
}

// The HTTP paths of a pod's container that are not answered with Reply's line alone:
// the switches a test (or a user with curl) turns through the pod's own server.
const (
	// ReadyPath answers GET with 200 while the container is ready, 503 once it is not;
	// PUT makes it ready, DELETE not ready. A readinessProbe (httpGet) on this path lets
	// the kubelet stand-in report what the test switched.
	ReadyPath = "/lab/ready"
	// ExitPath, on POST, makes the container's server exit after its answer (exit code
	// 0): a terminating pod is then torn down before its grace period ends.
	ExitPath = "/lab/exit"
)

// container stands for a pod's containers: a TCP, UDP or SCTP responder on every
// declared container port, listening inside the pod's network namespace (SCTP when the
// kernel supports it: SCTPSupported; its one-to-one sockets are served as TCP's). Its server keeps serving
// after the pod is deleted (as a server that drains its connections) until the kubelet
// stops it at the end of the grace period, or until it is told to exit (ExitPath).
type container struct {
	pod, namespace string

	ready    atomic.Bool
	exited   chan struct{} // closed when the server exits (stop or ExitPath)
	exitOnce sync.Once

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

// podPorts returns the declared container ports of the pod (TCP, UDP, SCTP), without
// duplicates: those of its containers and of its native sidecars (init containers with
// restartPolicy Always, which run beside the containers as kubelet runs them).
func podPorts(pod *corev1.Pod) []containerPort {
	var out []containerPort
	seen := make(map[containerPort]bool)
	running := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			running = append(running, c)
		}
	}
	for _, c := range running {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			cp := containerPort{proto, p.ContainerPort}
			if !seen[cp] {
				seen[cp] = true
				out = append(out, cp)
			}
		}
	}
	return out
}

// startContainer listens on the ports inside the namespace at netnsPath, on each
// family of the lab (a socket per family: TCP and UDP; SCTP on IPv4 only); the
// container starts ready.
func startContainer(namespace, podName, netnsPath string, ports []containerPort, f IPFamily) (*container, error) {
	c := &container{pod: podName, namespace: namespace, conns: make(map[net.Conn]struct{}), exited: make(chan struct{})}
	c.ready.Store(true)
	var suffixes []string // of the networks "tcp" and "udp"
	if f.HasIPv4() {
		suffixes = append(suffixes, "4")
	}
	if f.HasIPv6() {
		suffixes = append(suffixes, "6")
	}
	for _, p := range ports {
		addr := ":" + strconv.Itoa(int(p.port))
		var err error
		switch p.proto {
		case corev1.ProtocolTCP:
			for _, v := range suffixes {
				if err = c.listenTCP(nsrun.Listen(netnsPath, "tcp"+v, addr)); err != nil {
					break
				}
			}
		case corev1.ProtocolSCTP:
			if !f.HasIPv4() {
				continue
			}
			ln, lerr := listenSCTP(netnsPath, "0.0.0.0"+addr)
			if errors.Is(lerr, ErrNoSCTP) {
				continue // not served on this machine (SCTPSupported tells)
			}
			err = c.listenTCP(ln, lerr)
		case corev1.ProtocolUDP:
			for _, v := range suffixes {
				pc, lerr := nsrun.ListenPacket(netnsPath, "udp"+v, addr)
				if err = lerr; err != nil {
					break
				}
				c.pcs = append(c.pcs, pc)
				c.wg.Add(1)
				go c.serveUDP(pc)
			}
		}
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("pod %s: listen on %s %d: %w", podName, p.proto, p.port, err)
		}
	}
	return c, nil
}

// listenTCP serves a stream listener (TCP, or SCTP one-to-one) that was opened
// without error.
func (c *container) listenTCP(ln net.Listener, err error) error {
	if err != nil {
		return err
	}
	c.lns = append(c.lns, ln)
	c.wg.Add(1)
	go c.serveTCP(ln)
	return nil
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
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE"}

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
	line := Reply(c.pod, conn.RemoteAddr().String(), c.namespace)
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	method, path, isHTTP := httpRequestLine(buf[:n])
	if !isHTTP {
		_, _ = conn.Write([]byte(line))
		return
	}
	status := c.handleHTTP(method, path)
	fmt.Fprintf(conn, "HTTP/1.0 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(line), line)
	if method == http.MethodPost && path == ExitPath {
		go c.exit()
	}
}

// httpRequestLine returns the method and path of an HTTP request's first line.
func httpRequestLine(data []byte) (method, path string, ok bool) {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(first))
	if len(f) < 2 || !slices.Contains(httpMethods, f[0]) {
		return "", "", false
	}
	path, _, _ = strings.Cut(f[1], "?")
	return f[0], path, true
}

// handleHTTP turns the switches of ReadyPath and returns the status to answer.
func (c *container) handleHTTP(method, path string) int {
	if path != ReadyPath {
		return http.StatusOK
	}
	switch method {
	case http.MethodPut:
		c.ready.Store(true)
	case http.MethodDelete:
		c.ready.Store(false)
	}
	if !c.ready.Load() {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
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
		_, _ = pc.WriteTo([]byte(Reply(c.pod, from.String(), c.namespace)), from)
	}
}

// exit stops the server as if its process had exited by itself.
func (c *container) exit() { c.stop() }

// done is closed once the server has exited.
func (c *container) done() <-chan struct{} { return c.exited }

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
	c.exitOnce.Do(func() { close(c.exited) })
}
