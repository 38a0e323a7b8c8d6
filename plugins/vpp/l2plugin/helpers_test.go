package l2plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	l3model "github.com/contiv-vpp/contiv-vpp/api/models/vpp/l3"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin"
)

const nic = "GigabitEthernet0/8/0"

func TestMain(m *testing.M) {
	core.SetLogLevel(logrus.PanicLevel) // govpp's package-global logger
	os.Exit(m.Run())
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// agent is one incarnation of the agent side: a scheduler with the interface and L2
// plugins registered.
type agent struct {
	kvs *kvscheduler.Scheduler
	ifp *ifplugin.Plugin
	l2p *Plugin
}

type env struct {
	t   *testing.T
	sim *vppsim.Sim
	mux *govppmux.Plugin
	raw govppapi.Channel
	*agent
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t}
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{nic}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	t.Cleanup(func() { _ = sim.Close() })
	e.mux = govppmux.NewPlugin(govppmux.Deps{Log: quietLog(), Config: infra.StaticConfig{
		"binapi-socket-path": sock, "health-check-probe-interval": "100ms", "health-check-reply-timeout": "80ms",
		"retry-connect-timeout": "50ms", "reply-timeout": "2s"}})
	if err := e.mux.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.mux.Close() })
	if e.raw, err = e.mux.NewAPIChannel(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.raw.Close)
	e.agent = e.newAgent()
	if err := e.mux.AfterInit(); err != nil {
		t.Fatalf("message check: %v", err)
	}
	return e
}

// newAgent starts a fresh scheduler with fresh plugins (an agent restart).
func (e *env) newAgent() *agent {
	e.t.Helper()
	kvs, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kvs.Close() })
	a := &agent{kvs: kvs,
		ifp: ifplugin.NewPlugin(ifplugin.Deps{Log: quietLog(), Scheduler: kvs, GoVPP: e.mux}),
		l2p: NewPlugin(Deps{Log: quietLog(), Scheduler: kvs, GoVPP: e.mux})}
	for _, p := range []interface {
		Init() error
		Close() error
	}{a.ifp, a.l2p} {
		if err := p.Init(); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = p.Close() })
	}
	if err := kvs.RegisterKVDescriptor(vrfTableDescriptor(e.raw)); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (a *agent) commit(ctx context.Context, values map[string]proto.Message) error {
	txn := a.kvs.StartNBTransaction()
	for k, v := range values {
		txn.SetValue(k, v)
	}
	_, err := txn.Commit(ctx)
	return err
}

func (e *env) mustCommit(values map[string]proto.Message) {
	e.t.Helper()
	if err := e.commit(context.Background(), values); err != nil {
		e.t.Fatalf("commit: %v", err)
	}
}

func (e *env) fullResync(a *agent, values map[string]proto.Message) error {
	return a.commit(kvapi.WithResync(context.Background(), kvapi.FullResync, true), values)
}

func (e *env) state(key string) kvapi.ValueState { return e.kvs.GetValueStatus(key).State }

func (e *env) simIface(tag string) vppsim.Interface {
	e.t.Helper()
	i, ok := e.sim.InterfaceByTag(tag)
	if !ok {
		e.t.Fatalf("no interface tagged %q in VPP", tag)
	}
	return i
}

// vrfTableDescriptor stands in for the l3plugin's VRF table descriptor.
func vrfTableDescriptor(ch govppapi.Channel) *kvapi.KVDescriptor {
	set := func(v proto.Message, isAdd bool) error {
		t := v.(*l3model.VrfTable)
		return ch.SendRequest(&ip.IPTableAddDel{IsAdd: isAdd, Table: ip.IPTable{TableID: t.Id, IsIP6: t.Protocol == l3model.VrfTable_IPV6}}).
			ReceiveReply(&ip.IPTableAddDelReply{})
	}
	return &kvapi.KVDescriptor{
		Name:        "test-vrf-table",
		NBKeyPrefix: l3model.VrfTablePrefix,
		KeySelector: func(key string) bool { _, _, ok := l3model.ParseVrfTableKey(key); return ok },
		Create:      func(_ string, v proto.Message) (kvapi.Metadata, error) { return nil, set(v, true) },
		Delete:      func(_ string, v proto.Message, _ kvapi.Metadata) error { return set(v, false) },
	}
}

// snapshot describes what VPP holds by tags and names only (no sw_if_index or
// bridge domain ID), so two VPP states built in different orders compare equal. MAC
// addresses VPP chooses (those the desired interfaces leave unset) are masked.
func (e *env) snapshot(desired map[string]proto.Message) []string {
	vppChosenMAC := map[string]bool{}
	for _, v := range desired {
		if i, ok := v.(*ifmodel.Interface); ok && i.PhysAddress == "" {
			vppChosenMAC[i.Name] = true
		}
	}
	ifs := e.sim.Interfaces()
	tagOf := map[uint32]string{}
	for _, i := range ifs {
		tagOf[i.SwIfIndex] = i.Tag
		if i.Tag == "" {
			tagOf[i.SwIfIndex] = "vpp:" + i.Name
		}
	}
	bdTag := map[uint32]string{}
	for _, bd := range e.sim.BridgeDomains() {
		bdTag[bd.ID] = bd.Tag
	}
	var out []string
	for _, i := range ifs {
		mac := i.MAC.String()
		if vppChosenMAC[i.Tag] {
			mac = "(chosen by VPP)"
		}
		s := fmt.Sprintf("if %s type=%s up=%t mac=%s mtu=%d vrf=%d addrs=%v bd=%s bvi=%t shg=%d",
			tagOf[i.SwIfIndex], i.DevType, i.AdminUp, mac, i.MTU[0], i.VRF, i.Addresses, bdTag[i.BridgeDomain], i.BVI, i.SHG)
		if i.Unnumbered != vppsim.NoIndex {
			s += " unnumbered=" + tagOf[i.Unnumbered]
		}
		if i.Tap != nil {
			s += fmt.Sprintf(" tap=%s@%s", i.Tap.HostIfName, i.Tap.HostNamespace)
		}
		if i.Vxlan != nil {
			s += fmt.Sprintf(" vxlan=%s->%s/%d", i.Vxlan.Src, i.Vxlan.Dst, i.Vxlan.VNI)
		}
		out = append(out, s)
	}
	for _, bd := range e.sim.BridgeDomains() {
		var members []string
		for _, m := range bd.Members {
			members = append(members, tagOf[m])
		}
		sort.Strings(members)
		out = append(out, fmt.Sprintf("bd %s flood=%t uu=%t fwd=%t learn=%t arp=%t age=%d bvi=%s members=%v",
			bd.Tag, bd.Flood, bd.UUFlood, bd.Forward, bd.Learn, bd.ArpTerm, bd.MacAge, tagOf[bd.BVI], members))
	}
	for _, f := range e.sim.L2FIB() {
		out = append(out, fmt.Sprintf("fib %s %s -> %s static=%t filter=%t bvi=%t", bdTag[f.BD], f.MAC, tagOf[f.SwIfIndex], f.Static, f.Filter, f.BVI))
	}
	sort.Strings(out)
	return out
}
