package nodesync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/pkg/etcdtest"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// newPluginWithIDFile is newPlugin with a node-ID file.
func newPluginWithIDFile(t *testing.T, nodeName string, db DB, idFile string) (*NodeSync, *test.Hook) {
	t.Helper()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	ns := NewNodeSync(Deps{Log: log, NodeName: nodeName, DB: db, EventLoop: &fakeLoop{}, IDFile: idFile})
	if err := ns.Init(); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns, hook
}

func TestCorruptOwnRecordIsRepairedFromTheIDFile(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	idFile := filepath.Join(t.TempDir(), "node-id")
	putVppNode(t, c, vppNode(1, "a"))

	// First start: the node gets ID 2 and remembers it.
	ns, _ := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
	if err := resync(ns, 1, kubeState(vppNode(1, "a"))); err != nil {
		t.Fatal(err)
	}
	if ns.GetNodeID() != 2 {
		t.Fatalf("GetNodeID = %d, want 2", ns.GetNodeID())
	}
	if _, err := os.Stat(idFile); err != nil {
		t.Fatalf("the node ID was not written to its file: %v", err)
	}

	// Its record is overwritten with garbage; the agent restarts. The snapshot has no
	// record for it (dbwatcher skips undecodable values).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, etcdKey(2), "\xff\x00garbage"); err != nil {
		t.Fatal(err)
	}
	ns2, logs := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
	if err := resync(ns2, 1, kubeState(vppNode(1, "a"))); err != nil {
		t.Fatalf("Resync: %v", err)
	}
	if ns2.GetNodeID() != 2 {
		t.Fatalf("restarted node took ID %d, want its own ID 2", ns2.GetNodeID())
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=a 2=node1" {
		t.Errorf("etcd holds %q, want the record repaired: 1=a 2=node1", got)
	}
	repaired := false
	for _, e := range logs.AllEntries() {
		if strings.Contains(e.Message, "repaired") {
			repaired = true
		}
	}
	if !repaired {
		t.Error("the repair was not logged")
	}
}

func TestOwnIDTakenByAnotherNodeIsRefused(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	idFile := filepath.Join(t.TempDir(), "node-id")
	ns, _ := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
	if err := resync(ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if ns.GetNodeID() != 1 {
		t.Fatalf("GetNodeID = %d, want 1", ns.GetNodeID())
	}
	// Another node's valid record now holds ID 1.
	putVppNode(t, c, vppNode(1, "intruder"))
	ns2, _ := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
	err := resync(ns2, 1, kubeState(vppNode(1, "intruder")))
	if !api.IsFatal(err) {
		t.Fatalf("Resync error %v, want a fatal refusal", err)
	}
	for _, want := range []string{"node ID 1", `"intruder"`, idFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if ns2.GetNodeID() != 0 {
		t.Errorf("the node took ID %d instead of refusing", ns2.GetNodeID())
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "1=intruder" {
		t.Errorf("etcd holds %q: the refusing node must write nothing", got)
	}
}

func TestMissingOwnRecordIsReclaimedFromTheIDFile(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client(t)
	idFile := filepath.Join(t.TempDir(), "node-id")
	if err := os.WriteFile(idFile, []byte(`{"node":"node1","id":4}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, _ := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
	if err := resync(ns, 1, kubeState()); err != nil {
		t.Fatal(err)
	}
	if ns.GetNodeID() != 4 {
		t.Fatalf("GetNodeID = %d, want 4 from the ID file", ns.GetNodeID())
	}
	recs, _ := allocations(t, c)
	if got := names(recs); got != "4=node1" {
		t.Errorf("etcd holds %q", got)
	}
}

func TestIDFileOfAnotherNodeOrCorruptIsIgnored(t *testing.T) {
	for name, content := range map[string]string{
		"other node": `{"node":"node7","id":4}`,
		"corrupt":    "\x00\x01",
		"zero id":    `{"node":"node1","id":0}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := etcdtest.Start(t)
			c := srv.Client(t)
			idFile := filepath.Join(t.TempDir(), "node-id")
			if err := os.WriteFile(idFile, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			ns, _ := newPluginWithIDFile(t, thisNode, clientDB{c}, idFile)
			if err := resync(ns, 1, kubeState()); err != nil {
				t.Fatal(err)
			}
			if ns.GetNodeID() != 1 {
				t.Fatalf("GetNodeID = %d, want a fresh ID 1", ns.GetNodeID())
			}
			data, err := os.ReadFile(idFile)
			if err != nil || !strings.Contains(string(data), `"id":1`) || !strings.Contains(string(data), `"node":"node1"`) {
				t.Errorf("ID file %q (%v), want it rewritten for node1 ID 1", data, err)
			}
		})
	}
}

// TestValidateIDFileWantsAnAbsolutePathOrNone: the agent's -node-id-file is checked
// before start, naming the value.
func TestValidateIDFileWantsAnAbsolutePathOrNone(t *testing.T) {
	for path, want := range map[string]string{
		"":                        "",
		"/var/run/contiv/node-id": "",
		"node-id":                 `node ID file "node-id": must be an absolute path (or empty for none)`,
		"./run/node-id":           `node ID file "./run/node-id": must be an absolute path (or empty for none)`,
	} {
		err := ValidateIDFile(path)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("ValidateIDFile(%q) = %v, want %q", path, err, want)
		}
	}
}
