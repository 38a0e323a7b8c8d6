package vppsim

import (
	"os"
	"reflect"
	"strings"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/binapi/vpe"
)

// registry maps message IDs to handlers while they are registered.
type registry struct {
	table    *msgTable
	handlers []*handler
}

// on registers fn as the handler of the request type P.
func on[T any, P interface {
	*T
	api.Message
}](r *registry, fn func(*call, P)) {
	r.add(P(new(T)), false, func(cl *call, m api.Message) { fn(cl, m.(P)) })
}

// onStateless registers a handler that does not use the simulator state.
func onStateless[T any, P interface {
	*T
	api.Message
}](r *registry, fn func(*call, P)) {
	r.add(P(new(T)), true, func(cl *call, m api.Message) { fn(cl, m.(P)) })
}

func (r *registry) add(m api.Message, stateless bool, fn func(*call, api.Message)) {
	info := r.table.byType[reflect.TypeOf(m).Elem()]
	if info == nil {
		// Only possible if a handler is written for a message of a binapi
		// package that binapiModules does not list.
		panic("vppsim: handler for message missing from the table: " + m.GetMessageName())
	}
	name := m.GetMessageName()
	readOnly := strings.HasSuffix(name, "_dump") || strings.HasSuffix(name, "_get") || strings.HasPrefix(name, "show_") ||
		name == "cli_inband" || name == "control_ping" || fibNeutral[name]
	r.handlers[info.id] = &handler{fn: fn, stateless: stateless, readOnly: readOnly}
}

// fibNeutral are requests that change state the data plane reads directly
// (not through its compiled FIBs), so they need no recompilation: adding
// or deleting LB mappings registers no FIB entry (natfib.go; identity
// mappings do), and sessions, timeouts,
// forwarding, bridge domains, the L2 FIB and ACLs are read as they are.
var fibNeutral = map[string]bool{
	"nat44_add_del_lb_static_mapping":       true,
	"nat44_lb_static_mapping_add_del_local": true,
	"nat44_del_session":                     true,
	"nat_set_timeouts":                      true,
	"nat44_forwarding_enable_disable":       true,
	"bridge_domain_add_del":                 true,
	"bridge_domain_add_del_v2":              true,
	"bridge_flags":                          true,
	"l2fib_add_del":                         true,
	"acl_add_replace":                       true,
	"acl_del":                               true,
	"acl_interface_set_acl_list":            true,
}

// registerHandlers returns the handlers of all implemented messages,
// indexed by message ID.
func registerHandlers(t *msgTable) []*handler {
	r := &registry{table: t, handlers: make([]*handler, len(t.byID))}
	registerVPE(r)
	registerInterfaces(r)
	registerIP(r)
	registerIP6(r)
	registerL2(r)
	registerNAT(r)
	registerACL(r)
	registerDHCP(r)
	registerSTN(r)
	registerCNAT(r)
	return r.handlers
}

func registerVPE(r *registry) {
	onStateless(r, hSockclntCreate)
	onStateless(r, hSockclntDelete)
	onStateless(r, hControlPing)
	onStateless(r, hShowVersion)
	onStateless(r, hShowThreads)
	onStateless(r, hMemclntKeepalive)
	on(r, hCliInband)
	on(r, hWantInterfaceEvents)
}

// hSockclntCreate answers the handshake with the client index and the
// message table. VPP registers the client when the socket is accepted; the
// message only names it.
func hSockclntCreate(cl *call, m *memclnt.SockclntCreate) {
	name := m.Name
	cl.c.name.Store(&name)
	t := cl.s.table
	cl.send(&memclnt.SockclntCreateReply{
		Response:     0,
		Index:        cl.c.index,
		Count:        uint16(len(t.entries)),
		MessageTable: t.entries,
	})
	cl.c.logger().Debug("client registered")
}

// hSockclntDelete unregisters the client; the socket is closed once the
// reply is written.
func hSockclntDelete(cl *call, _ *memclnt.SockclntDelete) {
	cl.send(&memclnt.SockclntDeleteReply{Response: 0})
	cl.close = true
}

func hControlPing(cl *call, _ *memclnt.ControlPing) {
	cl.send(&memclnt.ControlPingReply{ClientIndex: cl.c.index, VpePID: uint32(os.Getpid())})
}

func hMemclntKeepalive(cl *call, _ *memclnt.MemclntKeepalive) {
	cl.send(&memclnt.MemclntKeepaliveReply{})
}

func hShowVersion(cl *call, _ *vpe.ShowVersion) {
	cl.send(&vpe.ShowVersionReply{
		Program:        "vpe",
		Version:        VPPVersion,
		BuildDate:      "2025-10-29T00:00:00",
		BuildDirectory: "/w/workspace/vpp-simulated",
	})
}

func hShowThreads(cl *call, _ *vlib.ShowThreads) {
	td := []vlib.ThreadData{{ID: 0, Name: "vpp_main", Type: "", PID: uint32(os.Getpid()), CPUID: 0, Core: 0, CPUSocket: 0}}
	cl.send(&vlib.ShowThreadsReply{Count: uint32(len(td)), ThreadData: td})
}

func hCliInband(cl *call, m *vlib.CliInband) {
	cl.send(&vlib.CliInbandReply{Reply: cl.st.cli(m.Cmd)})
}

// hWantInterfaceEvents registers the client for sw_interface_event. Like
// VPP's want_* handlers it refuses to enable twice or to disable what is
// not enabled (VNET_API_ERROR_INVALID_REGISTRATION).
func hWantInterfaceEvents(cl *call, m *interfaces.WantInterfaceEvents) {
	rv := retvalOK
	_, registered := cl.st.ifEventSubs[cl.c.index]
	switch {
	case (m.EnableDisable != 0) == registered:
		rv = retvalInvalidRegistration
	case m.EnableDisable != 0:
		cl.st.ifEventSubs[cl.c.index] = m.PID
	default:
		delete(cl.st.ifEventSubs, cl.c.index)
	}
	cl.send(&interfaces.WantInterfaceEventsReply{Retval: rv})
}
