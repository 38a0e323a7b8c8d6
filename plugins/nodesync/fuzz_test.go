package nodesync

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

// FuzzVppNodeRecord feeds arbitrary allocatedIDs/<id> keys and values through what
// nodesync does with them: decode, check the key and record, build the node map and
// derive the nodes (addresses parsed), and pick this node's ID.
func FuzzVppNodeRecord(f *testing.F) {
	for _, seed := range []struct{ key, value string }{
		{"allocatedIDs/1", `{"id":1,"name":"node1","ipAddresses":["192.168.16.1/24","fd00::1/64"]}`},
		{"allocatedIDs/2", `{"id":2,"name":"node2","ipAddress":"192.168.16.2"}`},
		{"allocatedIDs/0", `{"id":0,"name":""}`},
		{"allocatedIDs/4294967295", `{"id":4294967295,"name":"node1","ipAddresses":["x"]}`},
		{"allocatedIDs/abc", "\xff\x00garbage"},
	} {
		f.Add(seed.key, []byte(seed.value))
	}
	log, _ := logtest.NewNullLogger()
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		c := newCluster(thisNode, log)
		rec, err := decodeVppNode(data)
		if err != nil {
			return
		}
		if id, r, ok := c.vppNodeRecord(key, rec); ok && r != nil {
			c.storeVppNode(id, r)
		}
		c.setThisID(c.ownID(0))
		for _, n := range c.nodes {
			_ = n.String()
		}
		if own := c.ownRecord(); own != nil {
			_ = publishedIPs(c, own)
		}
		_, _ = vppnode.ParseVppNodeFromKey(key)
	})
}

// FuzzIDFile feeds arbitrary contents of the node-ID file to its loader: a bad file is
// ignored (0), never a panic.
func FuzzIDFile(f *testing.F) {
	for _, seed := range []string{`{"node":"node1","id":4}`, `{"node":"node7","id":4}`, `{"id":-1}`, "\x00", ""} {
		f.Add([]byte(seed))
	}
	path := filepath.Join(f.TempDir(), "node-id")
	log := logrus.New()
	log.SetOutput(discard{})
	ns := &NodeSync{Deps: Deps{Log: log, NodeName: thisNode, IDFile: path}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if id := ns.loadIDFile(); id != 0 && !validIDFile(data) {
			t.Fatalf("ID %d loaded from %q", id, data)
		}
	})
}

// discard is an io.Writer that drops everything.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// validIDFile is the oracle of FuzzIDFile: a JSON record of this node with a positive ID.
func validIDFile(data []byte) bool {
	var rec idRecord
	return len(data) <= maxIDFileSize && json.Unmarshal(data, &rec) == nil && rec.Node == thisNode && rec.ID != 0
}
