package vppsim

import (
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ethernet_types"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"
)

// Two NICs every test simulator starts with.
const (
	nic1 = "GigabitEthernet0/8/0"
	nic2 = "GigabitEthernet0/9/0"
)

// allIfaces is ~0 as an interface index.
const allIfaces = interface_types.InterfaceIndex(noIndex)

// testEnv is a running simulator with one connected govpp client.
type testEnv struct {
	t    *testing.T
	sim  *Sim
	sock string
	conn *core.Connection
	ch   api.Channel
}

// newEnv starts a simulator on a private socket and connects a real govpp
// client (socketclient + core) to it. Everything is torn down at the end
// of the test.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with options changed by opt.
func newEnvWith(t *testing.T, opt func(*Options)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, sock: filepath.Join(t.TempDir(), "api.sock")}
	o := Options{SocketPath: e.sock, NICs: []string{nic1, nic2}}
	if opt != nil {
		opt(&o)
	}
	sim, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := sim.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	e.sim = sim
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e.conn, e.ch = e.connect()
	return e
}

// connect opens another client connection with a channel.
func (e *testEnv) connect() (*core.Connection, api.Channel) {
	e.t.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(e.sock))
	if err != nil {
		e.t.Fatalf("connect: %v", err)
	}
	e.t.Cleanup(conn.Disconnect)
	ch, err := conn.NewAPIChannel()
	if err != nil {
		e.t.Fatalf("channel: %v", err)
	}
	e.t.Cleanup(ch.Close)
	ch.SetReplyTimeout(2 * time.Second)
	return conn, ch
}

// replyFor returns a new reply message for a request.
func (e *testEnv) replyFor(req api.Message) api.Message {
	e.t.Helper()
	info := e.sim.table.byName[req.GetMessageName()]
	if info == nil || info.reply == nil {
		e.t.Fatalf("%s has no reply", req.GetMessageName())
	}
	return info.reply.newMsg()
}

// call sends a request and decodes its reply into rep, returning the
// reply's retval.
func (e *testEnv) call(req, rep api.Message) int32 {
	e.t.Helper()
	return retvalOf(e.t, e.ch.SendRequest(req).ReceiveReply(rep))
}

// rv sends a request and returns the retval of its reply.
func (e *testEnv) rv(req api.Message) int32 {
	e.t.Helper()
	return e.call(req, e.replyFor(req))
}

// ok sends a request that must succeed.
func (e *testEnv) ok(req api.Message, rep ...api.Message) {
	e.t.Helper()
	r := e.replyFor(req)
	if len(rep) > 0 {
		r = rep[0]
	}
	if rv := e.call(req, r); rv != 0 {
		e.t.Fatalf("%s: retval %d (%v)", req.GetMessageName(), rv, api.VPPApiError(rv))
	}
}

// expect sends a request and checks its retval.
func (e *testEnv) expect(want int32, req api.Message) {
	e.t.Helper()
	if got := e.rv(req); got != want {
		e.t.Fatalf("%s %+v: retval %d, want %d", req.GetMessageName(), req, got, want)
	}
}

func retvalOf(t *testing.T, err error) int32 {
	t.Helper()
	if err == nil {
		return 0
	}
	var ve api.VPPApiError
	if errors.As(err, &ve) {
		return int32(ve)
	}
	t.Fatalf("request failed without a retval: %v", err)
	return 0
}

// dump runs a dump request and returns its details.
func dump[D any, PD interface {
	*D
	api.Message
}](t *testing.T, ch api.Channel, req api.Message) []PD {
	t.Helper()
	var out []PD
	mr := ch.SendMultiRequest(req)
	for {
		d := PD(new(D))
		last, err := mr.ReceiveReply(d)
		if err != nil {
			t.Fatalf("%s: %v", req.GetMessageName(), err)
		}
		if last {
			return out
		}
		out = append(out, d)
	}
}

// loopback creates a loopback and returns its index.
func (e *testEnv) loopback() interface_types.InterfaceIndex {
	e.t.Helper()
	rep := &interfaces.CreateLoopbackReply{}
	e.ok(&interfaces.CreateLoopback{}, rep)
	return rep.SwIfIndex
}

// addAddr adds an address to an interface and returns the retval.
func (e *testEnv) addAddr(sw interface_types.InterfaceIndex, prefix string) int32 {
	e.t.Helper()
	return e.rv(&interfaces.SwInterfaceAddDelAddress{SwIfIndex: sw, IsAdd: true, Prefix: awp(prefix)})
}

func awp(s string) ip_types.AddressWithPrefix {
	p, err := ip_types.ParseAddressWithPrefix(s)
	if err != nil {
		panic(err)
	}
	return p
}

func pfx(s string) ip_types.Prefix {
	p, err := ip_types.ParsePrefix(s)
	if err != nil {
		panic(err)
	}
	return p
}

func ip4(s string) ip_types.IP4Address {
	return netip.MustParseAddr(s).As4()
}

func addr(s string) ip_types.Address {
	return addrToAPI(netip.MustParseAddr(s))
}

func mac(s string) ethernet_types.MacAddress {
	m, err := ethernet_types.ParseMacAddress(s)
	if err != nil {
		panic(err)
	}
	return m
}

// viaPath is a path through an interface to a next hop.
func viaPath(sw interface_types.InterfaceIndex, nh string) fib_types.FibPath {
	p := fib_types.FibPath{SwIfIndex: uint32(sw), Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}
	if nh != "" {
		p.Nh.Address = addr(nh).Un
	}
	return p
}

// lookupPath is a path looking the destination up in another VRF.
func lookupPath(vrf uint32) fib_types.FibPath {
	return fib_types.FibPath{SwIfIndex: noIndex, TableID: vrf, Proto: fib_types.FIB_API_PATH_NH_PROTO_IP4}
}
