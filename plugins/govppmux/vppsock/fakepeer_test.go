package vppsock

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/codec"
)

// Message IDs of the fake peer's table.
const (
	fakeDeleteID    = 20
	fakeDeleteRepID = 21
	fakeEchoID      = 30
	fakeClientIndex = 0x80000007
)

// fakePeer is a minimal VPP socket server for framing tests: it answers the
// handshake with a small table and then, per mode, echoes every frame back as it is
// (echo) or stops reading (stall).
type fakePeer struct {
	t     *testing.T
	path  string
	ln    *net.UnixListener
	stall bool
	// after, when set, takes over the connection after the handshake.
	after func(c net.Conn)
	done  chan struct{} // closed by close: a stalled peer stops waiting
	once  sync.Once

	mu    sync.Mutex
	conns []net.Conn
	got   [][]byte // payloads received after the handshake (echo mode)
	wg    sync.WaitGroup
}

func newFakePeer(t *testing.T, stall bool) *fakePeer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePeer{t: t, path: path, ln: ln, stall: stall, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *fakePeer) close() {
	p.once.Do(func() {
		close(p.done)
		_ = p.ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}

func (p *fakePeer) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func readTestFrame(r io.Reader) ([]byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(hdr[8:12]))
	_, err := io.ReadFull(r, buf)
	return buf, err
}

func (p *fakePeer) serve(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	rd := bufio.NewReader(c)
	req, err := readTestFrame(rd)
	if err != nil {
		return
	}
	if id := binary.BigEndian.Uint16(req[0:2]); id != sockclntCreateID {
		p.t.Errorf("first message has ID %d, want sockclnt_create (%d)", id, sockclntCreateID)
		return
	}
	var create memclnt.SockclntCreate
	if err := codec.DecodeMsg(req, &create); err != nil || create.Name != "fake-test" {
		p.t.Errorf("sockclnt_create = %+v (%v)", create, err)
	}
	del, delRep := &memclnt.SockclntDelete{}, &memclnt.SockclntDeleteReply{}
	reply, err := codec.EncodeMsg(&memclnt.SockclntCreateReply{
		Index: fakeClientIndex,
		Count: 3,
		MessageTable: []memclnt.MessageTableEntry{
			{Index: fakeDeleteID, Name: del.GetMessageName() + "_" + del.GetCrcString()},
			{Index: fakeDeleteRepID, Name: delRep.GetMessageName() + "_" + delRep.GetCrcString()},
			{Index: fakeEchoID, Name: "echo_12345678"},
		},
	}, 16)
	if err != nil {
		p.t.Error(err)
		return
	}
	if _, err := c.Write(appendFrame(nil, reply)); err != nil {
		return
	}
	if p.after != nil {
		p.after(c)
		<-p.done
		return
	}
	if p.stall {
		<-p.done // never reads again
		return
	}
	w := bufio.NewWriter(c)
	for {
		if rd.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		msg, err := readTestFrame(rd)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.t.Logf("fake peer read: %v", err)
			}
			return
		}
		if binary.BigEndian.Uint16(msg[0:2]) == fakeDeleteID {
			rep, _ := codec.EncodeMsg(&memclnt.SockclntDeleteReply{}, fakeDeleteRepID)
			_, _ = w.Write(appendFrame(nil, rep))
			_ = w.Flush()
			return
		}
		p.mu.Lock()
		p.got = append(p.got, msg)
		p.mu.Unlock()
		if _, err := w.Write(appendFrame(nil, msg)); err != nil {
			return
		}
	}
}

func (p *fakePeer) received() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.got...)
}
