package cnatplugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	cnatmodel "github.com/contiv-vpp/contiv-vpp/api/models/vpp/cnat"
	"github.com/contiv-vpp/contiv-vpp/internal/testkit"
	"github.com/contiv-vpp/contiv-vpp/plugins/govppmux"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// nodePorts are the translations of n NodePorts on one node address, by key.
func nodePorts(n int) ([]string, map[string]*cnatmodel.Translation) {
	keys := make([]string, n)
	values := make(map[string]*cnatmodel.Translation, n)
	for i := range n {
		v := &cnatmodel.Translation{Vip: ep("192.168.16.5", uint32(30000+i)),
			Paths: []*cnatmodel.Path{{Dst: ep(fmt.Sprintf("10.1.1.%d", i+2), 8080)}}}
		keys[i], _ = cnatmodel.ModelKey(v)
		values[keys[i]] = v
	}
	return keys, values
}

// deleteCounter is a scheduler with the translation descriptor alone on a channel of
// its own, its Delete and DeleteAsync counting the deletions started and noting, when
// the first one is done (Delete returned, or the first wait called), how many were
// started and how many requests were in flight on the channel's pipe.
type deleteCounter struct {
	kvs     *kvscheduler.Scheduler
	clock   *testkit.Clock
	pipe    *govppmux.Pipe
	started int
	first   sync.Once
	// startedAtFirst and inFlightAtFirst are noted when the first deletion is done.
	startedAtFirst, inFlightAtFirst int
}

func newDeleteCounter(t *testing.T, e *env) *deleteCounter {
	t.Helper()
	ch, err := e.mux.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	c := &deleteCounter{clock: testkit.NewClock(), pipe: govppmux.NewPipe(ch)} // (the channel's one pipe)
	kd := NewTranslationDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: ch})
	del, delAsync := kd.Delete, kd.DeleteAsync
	kd.Delete = func(key string, v proto.Message, md kvapi.Metadata) error {
		c.started++
		err := del(key, v, md)
		c.firstDone()
		return err
	}
	if delAsync != nil {
		kd.DeleteAsync = func(key string, v proto.Message, md kvapi.Metadata) func() error {
			c.started++
			wait := delAsync(key, v, md)
			return func() error {
				c.firstDone()
				return wait()
			}
		}
	}
	if c.kvs, err = kvscheduler.NewScheduler(kvscheduler.Deps{Log: quietLog(), Clock: c.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.kvs.Close() })
	if err := c.kvs.RegisterKVDescriptor(kd); err != nil {
		t.Fatal(err)
	}
	return c
}

// firstDone notes the counts the first time it is called (the scheduler's goroutine).
func (c *deleteCounter) firstDone() {
	c.first.Do(func() { c.startedAtFirst, c.inFlightAtFirst = c.started, c.pipe.InFlight() })
}

// withNodePorts is a deleteCounter (over a new simulator) that has created the
// translations of n NodePorts (nodePorts).
func withNodePorts(t *testing.T, n int) (*env, *deleteCounter, []string) {
	t.Helper()
	e := newEnv(t)
	c := newDeleteCounter(t, e)
	keys, values := nodePorts(n)
	if err := c.commit(context.Background(), keys, values); err != nil {
		t.Fatal(err)
	}
	if got := e.vppTranslations(); len(got) != n {
		t.Fatalf("VPP has %d translations, want %d", len(got), n)
	}
	return e, c, keys
}

// commit commits values in the order of keys (a missing value: a delete).
func (c *deleteCounter) commit(ctx context.Context, keys []string, values map[string]*cnatmodel.Translation) error {
	txn := c.kvs.StartNBTransaction()
	for _, k := range keys {
		if v := values[k]; v != nil {
			txn.SetValue(k, v)
		} else {
			txn.SetValue(k, nil)
		}
	}
	_, err := txn.Commit(ctx)
	return err
}

// TestTranslationsOfALeavingNodeAreDeletedAsOnePipeline: a node leaving deletes the
// NodePort translations of its address in one transaction; every deletion is started,
// its cnat_translation_del sent, before the first is awaited (issue #29: one round trip
// at a time, a node leave cost 3x NAT44's), and VPP ends without them, their metadata
// gone.
func TestTranslationsOfALeavingNodeAreDeletedAsOnePipeline(t *testing.T) {
	const n = 8
	e, c, keys := withNodePorts(t, n)
	e.sim.ResetMessageCounts()
	if err := c.commit(context.Background(), keys, nil); err != nil {
		t.Fatal(err)
	}
	if c.startedAtFirst != n || c.inFlightAtFirst != n {
		t.Errorf("when the first deletion was done, %d of %d were started and %d cnat_translation_del in flight, want all",
			c.startedAtFirst, n, c.inFlightAtFirst)
	}
	if got := e.vppTranslations(); len(got) != 0 {
		t.Errorf("VPP still has %q", got)
	}
	if m := e.sim.MessageCount("cnat_translation_del"); m != n {
		t.Errorf("%d cnat_translation_del, want %d", m, n)
	}
	if names := c.kvs.GetMetadataMap(TranslationDescriptorName).ListAllNames(); len(names) != 0 {
		t.Errorf("metadata left for %v", names)
	}
}

// TestFailedDeleteInAPipelineKeepsItsTranslationAndIsRetried: VPP refuses one delete of
// a pipeline; that translation stays, in VPP and in the metadata map with its id, the
// others go, and the retry deletes it.
func TestFailedDeleteInAPipelineKeepsItsTranslationAndIsRetried(t *testing.T) {
	e, c, keys := withNodePorts(t, 4)
	mds := c.kvs.GetMetadataMap(TranslationDescriptorName)
	before, _ := mds.GetValue(keys[0])
	if err := e.sim.FailMessage("cnat_translation_del", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	err := c.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), keys, nil)
	var te *kvapi.TransactionError
	if !errors.As(err, &te) || len(te.FailedKeys()) != 1 || te.FailedKeys()[0] != keys[0] || !errors.Is(err, govppapi.UNSPECIFIED) ||
		!strings.Contains(err.Error(), "delete cnat translation 192.168.16.5:30000/TCP (id ") {
		t.Fatalf("commit = %v, want VPP's failure of %s alone, naming it", err, keys[0])
	}
	if got := e.vppTranslations(); len(got) != 1 || !strings.Contains(got[0], "192.168.16.5:30000/TCP") {
		t.Fatalf("VPP's translations %q, want the one whose delete failed", got)
	}
	if md, ok := mds.GetValue(keys[0]); !ok || md.(*TranslationMetadata).ID != before.(*TranslationMetadata).ID {
		t.Fatalf("metadata of the failed delete = %v, want %v", md, before)
	}
	if st := c.kvs.GetValueStatus(keys[0]).State; st != kvapi.StateRetrying {
		t.Fatalf("%s is %v, want RETRYING", keys[0], st)
	}
	c.clock.AwaitWaiting(t)
	c.clock.Step(time.Second)
	testkit.EventuallyTrue(t, testkit.DefaultTimeout, "the retried delete", func() bool {
		return c.kvs.GetValueStatus(keys[0]).State == kvapi.StateNonexistent
	})
	if got := e.vppTranslations(); len(got) != 0 {
		t.Fatalf("VPP's translations after the retry %q", got)
	}
}

// TestDeleteWithoutMetadataWaitsForTheRepliesInFlight: a deletion without metadata
// dumps VPP to find the id; the replies of the requests started before it are read
// first, and every one of them still reaches its own wait.
func TestDeleteWithoutMetadataWaitsForTheRepliesInFlight(t *testing.T) {
	e := newEnv(t)
	d := NewTranslationDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	keys, values := nodePorts(3)
	mds := make([]kvapi.Metadata, len(keys))
	for i, k := range keys {
		md, err := d.Create(k, values[k])
		if err != nil {
			t.Fatal(err)
		}
		mds[i] = md
	}
	first := d.DeleteAsync(keys[0], values[keys[0]], mds[0])
	second := d.DeleteAsync(keys[1], values[keys[1]], nil)
	third := d.DeleteAsync(keys[2], values[keys[2]], mds[2])
	for i, wait := range []func() error{first, second, third} {
		if err := wait(); err != nil {
			t.Errorf("delete %s: %v", keys[i], err)
		}
	}
	if got := e.vppTranslations(); len(got) != 0 {
		t.Errorf("VPP still has %q", got)
	}
}
