package cnatplugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/feature"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/core"
	"google.golang.org/protobuf/proto"

	ifmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

func TestMain(m *testing.M) {
	core.SetLogLevel(logrus.PanicLevel) // govpp's package-global logger
	os.Exit(m.Run())
}

func quietLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// env is the simulator, govppmux over it, and one incarnation of the agent side.
type env struct {
	t   *testing.T
	sim *vppsim.Sim
	mux *govppmux.Plugin
	raw govppapi.Channel // a channel of the test's own, to look at and change VPP
	*agent
}

// agent is a scheduler (on a fake clock) with the real interface plugin and this
// plugin registered.
type agent struct {
	kvs   *kvscheduler.Scheduler
	clock *testkit.Clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t}
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, Log: quietLog()})
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
	clk := testkit.NewClock()
	kvs, err := kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog(), Clock: clk})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kvs.Close() })
	for _, p := range []interface {
		Init() error
		Close() error
	}{
		ifplugin.NewPlugin(ifplugin.Deps{Log: quietLog(), Scheduler: kvs, GoVPP: e.mux}),
		&Plugin{Deps: Deps{Log: quietLog(), Scheduler: kvs, GoVPP: e.mux}},
	} {
		if err := p.Init(); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = p.Close() })
	}
	return &agent{kvs: kvs, clock: clk}
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

func (a *agent) state(key string) kvapi.ValueState { return a.kvs.GetValueStatus(key).State }

// loopback is a loopback interface value with addresses.
func loopback(name string, addrs ...string) (string, proto.Message) {
	return ifmodel.InterfaceKey(name), &ifmodel.Interface{Name: name, Type: ifmodel.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: addrs}
}

// vppTranslations describes VPP's translations, one line each, sorted:
// "<id> <vip>:<port>/<proto> lb=<n> paths=[<src>-><dst> ...]" with endpoints as VPP
// dumps them (an interface endpoint as "if<sw_if_index>(<resolved address>)").
func (e *env) vppTranslations() []string {
	e.t.Helper()
	list, err := govppmux.Dump[cnat.CnatTranslationDetails](e.raw, &cnat.CnatTranslationDump{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range list {
		tr := d.Translation
		proto, _ := protocolFromAPI(tr.IPProto)
		s := fmt.Sprintf("%d %s/%s lb=%d paths=[", tr.ID, fmtEP(tr.Vip), proto, tr.LbType)
		for i, p := range tr.Paths {
			if i > 0 {
				s += " "
			}
			s += fmtEP(p.SrcEp) + "->" + fmtEP(p.DstEp)
		}
		out = append(out, s+"]")
	}
	sort.Strings(out)
	return out
}

func fmtEP(ep cnat.CnatEndpoint) string {
	a, _ := vppbase.AddrFromAPI(ep.Addr)
	if uint32(ep.SwIfIndex) != noInterface {
		return fmt.Sprintf("if%d(%s):%d", ep.SwIfIndex, a, ep.Port)
	}
	return fmt.Sprintf("%s:%d", a, ep.Port)
}

// snatAddresses is VPP's answer to cnat_get_snat_addresses.
func (e *env) snatAddresses() string {
	e.t.Helper()
	r := &cnat.CnatGetSnatAddressesReply{}
	if err := vppbase.Call(e.raw, &cnat.CnatGetSnatAddresses{}, r); err != nil {
		e.t.Fatal(err)
	}
	return fmt.Sprintf("ip4=%s ip6=%s sw_if_index=%d", r.SnatIP4, r.SnatIP6, int32(r.SwIfIndex))
}

// featureOn tells whether VPP has the feature of arc on the interface tagged tag.
func (e *env) featureOn(tag, arc, node string) bool {
	e.t.Helper()
	i, ok := e.sim.InterfaceByTag(tag)
	if !ok {
		e.t.Fatalf("no interface tagged %s", tag)
	}
	r := &feature.FeatureIsEnabledReply{}
	req := &feature.FeatureIsEnabled{ArcName: arc, FeatureName: node, SwIfIndex: interface_types.InterfaceIndex(i.SwIfIndex)}
	if err := vppbase.Call(e.raw, req, r); err != nil {
		e.t.Fatal(err)
	}
	return r.IsEnabled
}

// vpp sends a request on the test's own channel (a change behind the agent's back).
func (e *env) vpp(req, reply govppapi.Message) {
	e.t.Helper()
	if err := vppbase.Call(e.raw, req, reply); err != nil {
		e.t.Fatal(err)
	}
}

// dropID is a line of vppTranslations without its id.
func dropID(line string) string {
	_, rest, _ := strings.Cut(line, " ")
	return rest
}
