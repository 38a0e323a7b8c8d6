package lab

import (
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// relay forwards TCP connections accepted on a listener to a target reached through
// dial. It joins the lab's namespace and the node namespaces without links in the host's
// namespace: a node's agent reaches the Contiv etcd through a relay listening on its own
// loopback, and a user reaches each agent's REST API through a relay on the host's.
type relay struct {
	ln     net.Listener
	target string
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startRelay serves ln until close, forwarding to target.
func startRelay(ln net.Listener, target string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *relay {
	r := &relay{ln: ln, target: target, dial: dial, conns: make(map[net.Conn]struct{})}
	r.wg.Add(1)
	go r.serve()
	return r
}

// Addr is the address the relay listens on.
func (r *relay) Addr() string { return r.ln.Addr().String() }

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go r.forward(c)
	}
}

// track records an open connection; false once the relay is closed.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *relay) forward(c net.Conn) {
	defer r.wg.Done()
	defer r.untrack(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	up, err := r.dial(ctx, "tcp", r.target)
	cancel()
	if err != nil {
		return // the client sees the connection closed, as with a refused one
	}
	if !r.track(up) {
		up.Close()
		return
	}
	defer r.untrack(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// close stops accepting, closes every open connection and waits for the goroutines.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
}
