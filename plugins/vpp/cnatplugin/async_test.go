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

// nodePorts are the sets of n NodePort services on two node addresses (.5 and .6),
// by key, and the same sets once the node of .6 left.
func nodePorts(n int) (keys []string, both, left map[string]*cnatmodel.TranslationSet) {
	keys = make([]string, n)
	both = make(map[string]*cnatmodel.TranslationSet, n)
	left = make(map[string]*cnatmodel.TranslationSet, n)
	for i := range n {
		backend := fmt.Sprintf("10.1.1.%d", i+2)
		on5, on6 := backend5(uint32(30000+i), backend), &cnatmodel.Translation{VipAddress: "192.168.16.6", VipPort: uint32(30000 + i),
			Paths: []*cnatmodel.Path{{Dst: ep(backend, 8080)}}}
		label := fmt.Sprintf("default/np-%d", i)
		keys[i] = cnatmodel.TranslationSetKey(label)
		both[keys[i]] = &cnatmodel.TranslationSet{Label: label, Translations: []*cnatmodel.Translation{on5, on6}}
		left[keys[i]] = &cnatmodel.TranslationSet{Label: label, Translations: []*cnatmodel.Translation{on5}}
	}
	return keys, both, left
}

// backend5 is the translation of a node port on 192.168.16.5 to one backend.
func backend5(port uint32, backend string) *cnatmodel.Translation {
	return &cnatmodel.Translation{VipAddress: "192.168.16.5", VipPort: port, Paths: []*cnatmodel.Path{{Dst: ep(backend, 8080)}}}
}

// opCounter is a scheduler with the translation set descriptor alone on a channel of
// its own, its updates and deletions counting the operations started and noting,
// when the first one is done (returned, or its wait called), how many were started
// and how many requests were in flight on the channel's pipe.
type opCounter struct {
	kvs     *kvscheduler.Scheduler
	clock   *testkit.Clock
	pipe    *govppmux.Pipe
	started int
	first   sync.Once
	// startedAtFirst and inFlightAtFirst are noted when the first operation is done.
	startedAtFirst, inFlightAtFirst int
}

func newOpCounter(t *testing.T, e *env) *opCounter {
	t.Helper()
	ch, err := e.mux.NewAPIChannel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ch.Close)
	c := &opCounter{clock: testkit.NewClock(), pipe: govppmux.NewPipe(ch)} // (the channel's one pipe)
	kd := NewTranslationSetDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: ch})
	del, delAsync, upd, updAsync := kd.Delete, kd.DeleteAsync, kd.Update, kd.UpdateAsync
	kd.Delete = func(key string, v proto.Message, md kvapi.Metadata) error {
		c.started++
		err := del(key, v, md)
		c.firstDone()
		return err
	}
	kd.DeleteAsync = func(key string, v proto.Message, md kvapi.Metadata) func() error {
		c.started++
		wait := delAsync(key, v, md)
		return func() error {
			c.firstDone()
			return wait()
		}
	}
	kd.Update = func(key string, old, v proto.Message, md kvapi.Metadata) (kvapi.Metadata, error) {
		c.started++
		md, err := upd(key, old, v, md)
		c.firstDone()
		return md, err
	}
	kd.UpdateAsync = func(key string, old, v proto.Message, md kvapi.Metadata) func() (kvapi.Metadata, error) {
		c.started++
		wait := updAsync(key, old, v, md)
		return func() (kvapi.Metadata, error) {
			c.firstDone()
			return wait()
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
func (c *opCounter) firstDone() {
	c.first.Do(func() { c.startedAtFirst, c.inFlightAtFirst = c.started, c.pipe.InFlight() })
}

// withNodePorts is an opCounter (over a new simulator) that has created the sets of
// n NodePorts on two nodes (nodePorts).
func withNodePorts(t *testing.T, n int) (e *env, c *opCounter, keys []string, left map[string]*cnatmodel.TranslationSet) {
	t.Helper()
	e = newEnv(t)
	c = newOpCounter(t, e)
	keys, both, left := nodePorts(n)
	if err := c.commit(context.Background(), keys, both); err != nil {
		t.Fatal(err)
	}
	if got := e.vppTranslations(); len(got) != 2*n {
		t.Fatalf("VPP has %d translations, want %d", len(got), 2*n)
	}
	return e, c, keys, left
}

// commit commits values in the order of keys (a missing value: a delete).
func (c *opCounter) commit(ctx context.Context, keys []string, values map[string]*cnatmodel.TranslationSet) error {
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

// TestTranslationsOfALeavingNodeAreDeletedAsOnePipeline: a node leaving takes the
// translation of its address out of every NodePort set in one transaction; every
// set's update is started, its cnat_translation_del sent, before the first is
// awaited (issue #29: one round trip at a time, a node leave cost 3x NAT44's), and
// VPP ends without them, the sets' metadata without their ids.
func TestTranslationsOfALeavingNodeAreDeletedAsOnePipeline(t *testing.T) {
	const n = 8
	e, c, keys, left := withNodePorts(t, n)
	e.sim.ResetMessageCounts()
	if err := c.commit(context.Background(), keys, left); err != nil {
		t.Fatal(err)
	}
	if c.startedAtFirst != n || c.inFlightAtFirst != n {
		t.Errorf("when the first update was done, %d of %d were started and %d cnat_translation_del in flight, want all",
			c.startedAtFirst, n, c.inFlightAtFirst)
	}
	if got := e.vppTranslations(); len(got) != n || strings.Contains(strings.Join(got, " "), "192.168.16.6") {
		t.Errorf("VPP has %q, want the translations of 192.168.16.5 alone", got)
	}
	if m, u := e.sim.MessageCount("cnat_translation_del"), e.sim.MessageCount("cnat_translation_update"); m != n || u != 0 {
		t.Errorf("%d cnat_translation_del and %d cnat_translation_update, want %d and none", m, u, n)
	}
	mds := c.kvs.GetMetadataMap(TranslationSetDescriptorName)
	for _, k := range keys {
		md, _ := mds.GetValue(k)
		if md.(*TranslationSetMetadata).Len() != 1 {
			t.Errorf("metadata of %s holds %d ids, want 1", k, md.(*TranslationSetMetadata).Len())
		}
	}
}

// TestFailedDeleteInAPipelineKeepsItsTranslationAndIsRetried: VPP refuses one delete of
// a pipeline of set deletions; that set stays, with the translation whose delete
// failed in VPP and its id in the metadata, the others go, and the retry deletes it.
func TestFailedDeleteInAPipelineKeepsItsTranslationAndIsRetried(t *testing.T) {
	e, c, keys, _ := withNodePorts(t, 4)
	mds := c.kvs.GetMetadataMap(TranslationSetDescriptorName)
	before, _ := mds.GetValue(keys[0])
	id, _ := before.(*TranslationSetMetadata).ID("192.168.16.5", 30000, cnatmodel.Protocol_TCP)
	if err := e.sim.FailMessage("cnat_translation_del", int32(govppapi.UNSPECIFIED), 1); err != nil {
		t.Fatal(err)
	}
	err := c.commit(kvapi.WithRetry(context.Background(), time.Second, 3, false), keys, nil)
	var te *kvapi.TransactionError
	if !errors.As(err, &te) || len(te.FailedKeys()) != 1 || te.FailedKeys()[0] != keys[0] || !errors.Is(err, govppapi.UNSPECIFIED) ||
		!strings.Contains(err.Error(), "delete cnat translation set default/np-0: delete translation 192.168.16.5:30000/TCP (id ") {
		t.Fatalf("commit = %v, want VPP's failure of %s alone, naming it", err, keys[0])
	}
	if got := e.vppTranslations(); len(got) != 1 || !strings.Contains(got[0], "192.168.16.5:30000/TCP") {
		t.Fatalf("VPP's translations %q, want the one whose delete failed", got)
	}
	md, ok := mds.GetValue(keys[0])
	if got, in := md.(*TranslationSetMetadata).ID("192.168.16.5", 30000, cnatmodel.Protocol_TCP); !ok || !in || got != id || md.(*TranslationSetMetadata).Len() != 1 {
		t.Fatalf("metadata of the failed delete = %v, want id %d alone", md, id)
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
	d := NewTranslationSetDescriptor(vppbase.DescriptorDeps{Log: quietLog(), Ch: e.raw})
	keys, values, _ := nodePorts(3)
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
