package scale

import (
	"context"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	"go.fd.io/govpp/binapi/cnat"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/core"

	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/contivconf"
)

// These tests run with plain `go test ./test/scale/` (no CONTIV_SCALE): they check
// the harness's settings and its waits, not the agent.

// env returns a getenv of the given settings.
func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestRendererBothRunsOneBuildOfThisTreeWithNAT44AndWithCNAT(t *testing.T) {
	vs, err := variants(env(map[string]string{"CONTIV_SCALE_RENDERER": "both", "CONTIV_SCALE_TAGS": "natpermapping"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 {
		t.Fatalf("%d variants, want 2 (nat44, cnat)", len(vs))
	}
	for i, want := range []string{"nat44", "cnat"} {
		v := vs[i]
		if v.name != want || v.renderer != want || !v.config || v.ref != "" || v.tags != "natpermapping" || v.dual {
			t.Errorf("variant %d = %+v, want %s: this tree with the tags, serviceRenderer %s, a configuration of one build",
				i, *v, want, want)
		}
	}
}

func TestRendererCNATRendersThisTreesVariantsOnly(t *testing.T) {
	vs, err := variants(env(map[string]string{"CONTIV_SCALE_RENDERER": "cnat"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].ref == "" || vs[0].renderer != "" || vs[1].ref != "" || vs[1].renderer != "cnat" {
		t.Fatalf("variants %+v %+v: want the before ref with its own renderer, this tree with cnat", *vs[0], *vs[1])
	}
	vs, err = variants(env(map[string]string{"CONTIV_SCALE_RENDERER": "cnat", "CONTIV_SCALE_FAMILY": "dual"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.renderer != "cnat" || !strings.HasSuffix(v.label(), ", cnat") {
			t.Errorf("family variant %s: renderer %q, label %q: want cnat, named in the label", v.name, v.renderer, v.label())
		}
	}
}

func TestRendererSettingsThatCannotBeRunAreRefusedNamingTheSetting(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CONTIV_SCALE_RENDERER": "ipvs"}, `CONTIV_SCALE_RENDERER="ipvs"`},
		{map[string]string{"CONTIV_SCALE_RENDERER": "both", "CONTIV_SCALE_FAMILY": "dual"}, "CONTIV_SCALE_RENDERER=both"},
		{map[string]string{"CONTIV_SCALE_RENDERER": "both", "CONTIV_SCALE_BEFORE": "bb8e401"}, `CONTIV_SCALE_BEFORE="bb8e401"`},
	} {
		_, err := variants(env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("variants(%v): error %v, want one naming %s", c.env, err, c.want)
		}
	}
}

// The contiv.conf of a cnat run is one the agent reads as serviceRenderer cnat (the
// agent's own parser, strict), and keeps the dual-stack plan when both are asked.
func TestContivConfOfACNATSetupIsReadAsCNATByTheAgent(t *testing.T) {
	root, err := testkit.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []setup{{Renderer: "cnat"}, {Renderer: "cnat", Dual: true}, {Renderer: "nat44"}} {
		path, err := s.contivConf(root, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := contivconf.Parse(data, true, nil)
		if err != nil {
			t.Fatalf("%+v: the agent refuses the harness's contiv.conf: %v", s, err)
		}
		if cfg.ServiceRenderer != s.Renderer || (cfg.IPAMConfig.IPv6 != nil) != s.Dual {
			t.Errorf("%+v: contiv.conf has serviceRenderer %q, ipamConfig.ipv6 %v", s, cfg.ServiceRenderer, cfg.IPAMConfig.IPv6 != nil)
		}
	}
}

// The simulator role's wait for an Endpoints change of a cnat run ends when the cnat
// translation of the Service holds the new backend, woken by the cnat request itself,
// and an absent expectation holds once the translation is deleted.
func TestWaitForACNATTranslationEndsWithTheRequestThatMakesIt(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	tables, err := newServiceTables(sim, "cnat")
	if err != nil {
		t.Skipf("the simulator cannot be read by key: %v", err)
	}
	changes := newChangeNotifier()
	sim.SetRequestHook(func(name string) {
		if strings.HasPrefix(name, tables.prefix) {
			changes.changed()
		}
	})
	conn, err := core.Connect(socketclient.NewVppClient(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Disconnect()
	ch, err := conn.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	ep := func(ip string, port uint16) cnat.CnatEndpoint {
		return cnat.CnatEndpoint{Addr: ip_types.NewAddress(netip.MustParseAddr(ip).AsSlice()), SwIfIndex: ^interface_types.InterfaceIndex(0), Port: port}
	}
	update := func(backend string) uint32 {
		t.Helper()
		rep := &cnat.CnatTranslationUpdateReply{}
		tr := cnat.CnatTranslation{Vip: ep("10.96.0.1", servicePort), IPProto: ip_types.IP_API_PROTO_TCP, NPaths: 1,
			Paths: []cnat.CnatEndpointTuple{{SrcEp: ep("0.0.0.0", 0), DstEp: ep(backend, targetPort)}}}
		if err := ch.SendRequest(&cnat.CnatTranslationUpdate{Translation: tr}).ReceiveReply(rep); err != nil {
			t.Fatalf("cnat_translation_update to %s: %v", backend, err)
		}
		return rep.ID
	}
	id := update("10.1.2.2")
	wait := func(e mappingExpect, after func()) waitReply {
		t.Helper()
		got := make(chan waitReply, 1)
		// A single expectation is not polled: only a cnat request wakes the wait.
		go func() {
			got <- waitMappings(context.Background(), tables, changes, waitRequest{Expect: []mappingExpect{e}, Timeout: 10 * time.Second})
		}()
		after()
		return <-got
	}
	if r := wait(mappingExpect{Proto: 6, IP: "10.96.0.1", Port: servicePort, Backend: "10.1.3.200"}, func() {
		update("10.1.3.200")
	}); r.Error != "" {
		t.Fatalf("wait for the changed backend: %s", r.Error)
	}
	if r := wait(mappingExpect{Proto: 6, IP: "10.96.0.1", Port: servicePort, Absent: true}, func() {
		if err := ch.SendRequest(&cnat.CnatTranslationDel{ID: id}).ReceiveReply(&cnat.CnatTranslationDelReply{}); err != nil {
			t.Fatal(err)
		}
	}); r.Error != "" {
		t.Fatalf("wait for the deleted translation: %s", r.Error)
	}
}
