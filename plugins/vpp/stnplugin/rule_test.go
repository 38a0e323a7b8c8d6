package stnplugin

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"go.fd.io/govpp/adapter/socketclient"
	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/stn"
	"go.fd.io/govpp/core"

	stnmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/stn"
	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/ifplugin/ifaceidx"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// ifaces is the interface metadata map the descriptor sees.
type ifaces map[string]kvapi.Metadata

func (m ifaces) GetValue(label string) (kvapi.Metadata, bool) { v, ok := m[label]; return v, ok }
func (m ifaces) ListAllNames() []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

// startSim starts a simulator and returns a function that connects a new client (as
// a restarted agent would) and returns descriptor deps over it.
func startSim(t *testing.T, ifs ifaces) func() vppbase.DescriptorDeps {
	sock := filepath.Join(t.TempDir(), "api.sock")
	sim, err := vppsim.New(vppsim.Options{SocketPath: sock, NICs: []string{"GigabitEthernet0/8/0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	log := logrus.New()
	log.SetOutput(io.Discard)
	return func() vppbase.DescriptorDeps {
		conn, err := core.Connect(socketclient.NewVppClient(sock))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Disconnect)
		ch, err := conn.NewAPIChannel()
		if err != nil {
			t.Fatal(err)
		}
		ch.SetReplyTimeout(2 * time.Second)
		t.Cleanup(ch.Close)
		return vppbase.DescriptorDeps{Log: log, Ch: ch, Ifaces: func() kvapi.MetadataMap { return ifs }}
	}
}

func vppRules(t *testing.T, ch govppapi.Channel) []string {
	t.Helper()
	list, err := govppmux.Dump[stn.StnRulesDetails](ch, &stn.StnRulesDump{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list {
		out = append(out, fmt.Sprintf("%s@%d", r.IPAddress, r.SwIfIndex))
	}
	return out
}

func TestRuleCreateRetrieveDelete(t *testing.T) {
	ifs := ifaces{}
	connect := startSim(t, ifs)
	deps := connect()
	rep := &interfaces.CreateLoopbackReply{}
	if err := vppbase.Call(deps.Ch, &interfaces.CreateLoopback{}, rep); err != nil {
		t.Fatal(err)
	}
	ifs["tap-vpp2"] = &ifaceidx.Metadata{SwIfIndex: uint32(rep.SwIfIndex)}
	d := NewRuleDescriptor(deps)
	v := &stnmodel.Rule{IpAddress: "192.168.16.5", Interface: "tap-vpp2"}
	key := stnmodel.RuleKey("tap-vpp2", "192.168.16.5")
	if err := d.Validate(key, v); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(key, v); err != nil {
		t.Fatal(err)
	}
	if got := vppRules(t, deps.Ch); len(got) != 1 || got[0] != "192.168.16.5@2" {
		t.Fatalf("VPP's rules %v, want 192.168.16.5 on sw_if_index 2", got)
	}
	got, err := NewRuleDescriptor(connect()).Retrieve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != key || !equivalent(got[0].Value.(*stnmodel.Rule), v) {
		t.Fatalf("retrieved %v, want %s", got, key)
	}
	if err := d.Delete(key, v, nil); err != nil {
		t.Fatal(err)
	}
	if got := vppRules(t, deps.Ch); len(got) != 0 {
		t.Fatalf("VPP's rules after Delete: %v", got)
	}
	if err := d.Delete(key, v, nil); err == nil || !strings.Contains(err.Error(), "delete STN rule 192.168.16.5 -> tap-vpp2") {
		t.Errorf("second Delete = %v, want VPP's NO_SUCH_ENTRY with the rule named", err)
	}
}
