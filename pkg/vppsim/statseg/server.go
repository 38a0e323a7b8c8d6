package statseg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Server serves a segment on VPP's stats socket: a SOCK_SEQPACKET unix socket that,
// on every connection, sends the segment's memfd as SCM_RIGHTS with an empty payload
// and closes (vlib/stats/init.c stats_socket_accept_ready). govpp's statsclient dials
// it as "unixpacket", maps the fd read-only and reads the header.
type Server struct {
	seg  *Segment
	ln   *net.UnixListener
	path string
	done chan struct{}
	wg   sync.WaitGroup

	closeOnce sync.Once
}

// Serve listens on path (an existing file there is removed first, as VPP does) and
// hands the segment to every client until ctx ends or Close is called.
func (s *Segment) Serve(ctx context.Context, path string) (*Server, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("statseg: remove stale stats socket %s: %w", path, err)
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("statseg: listen on stats socket %s: %w", path, err)
	}
	srv := &Server{seg: s, ln: ln, path: path, done: make(chan struct{})}
	srv.wg.Add(2)
	go func() {
		defer srv.wg.Done()
		select {
		case <-ctx.Done():
		case <-srv.done:
		}
		ln.Close() // ends accept
	}()
	go srv.accept()
	return srv, nil
}

func (srv *Server) accept() {
	defer srv.wg.Done()
	for {
		c, err := srv.ln.AcceptUnix()
		if err != nil {
			return
		}
		// A failed hand-over only loses that client, which sees no fd and fails its
		// connect; VPP likewise just closes the connection.
		_ = srv.handOver(c)
		c.Close()
	}
}

// handOver sends the memfd on c: one SCM_RIGHTS control message and a zero-length
// payload, as clib_socket_sendmsg(client, 0, 0, &memfd, 1) does. (Go's Sendmsg would
// add a dummy byte to an empty payload on a non-datagram socket, so the message is
// sent with a raw sendmsg.)
func (srv *Server) handOver(c *net.UnixConn) error {
	srv.seg.mu.RLock()
	defer srv.seg.mu.RUnlock()
	if srv.seg.closed {
		return ErrClosed
	}
	oob := unix.UnixRights(int(srv.seg.file.Fd()))
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	err = rc.Write(func(fd uintptr) bool {
		var msg unix.Msghdr
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
		_, _, errno := unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&msg)), 0)
		if errno == unix.EAGAIN {
			return false
		}
		if errno != 0 {
			sendErr = errno
		}
		return true
	})
	return errors.Join(err, sendErr)
}

// Path is the socket's path.
func (srv *Server) Path() string { return srv.path }

// Close stops serving and removes the socket file (govpp's statsclient watches the
// directory and reconnects when the socket reappears).
func (srv *Server) Close() error {
	srv.closeOnce.Do(func() { close(srv.done) })
	srv.wg.Wait()
	if err := os.Remove(srv.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("statseg: remove stats socket %s: %w", srv.path, err)
	}
	return nil
}
