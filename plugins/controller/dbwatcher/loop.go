package dbwatcher

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// change is one event of a watch, tagged with the generation of the watch it came from.
type change struct {
	gen      uint64
	external bool   // under /vnf-agent/<node>/, else under the KSR prefix
	key      string // full etcd key
	deleted  bool
	value    []byte // nil for a deletion
	rev      int64  // revision of the put or the delete
}

// stream indexes loopState.floor: the two watches deliver revisions independently.
func (c change) stream() int {
	if c.external {
		return 1
	}
	return 0
}

// entry is the last processed state of one etcd key.
type entry struct {
	rev   int64
	value proto.Message // nil when the value did not decode or is ignored
}

// loopState is owned by the loop goroutine.
type loopState struct {
	// gen numbers the watches; changes of an older watch are dropped.
	gen         uint64
	watchCancel context.CancelFunc
	// synced is set by a delivered remote resync and cleared by every (re)connection:
	// changes are dropped while it is false.
	synced bool
	// resynced is set by any delivered resync (remote or local).
	resynced bool
	// keys is the state as last delivered to the event loop, by full etcd key.
	keys map[string]entry
	// floor is, per watch stream, the lowest revision still to be processed.
	floor [2]int64
	// retryC fires the retry of a failed resync.
	retryC <-chan time.Time
}

func newLoopState() loopState {
	return loopState{keys: make(map[string]entry)}
}

// run is the loop goroutine: it serialises resyncs, watched changes and connection
// state changes, so the state it keeps needs no lock.
func (w *DBWatcher) run(ctx context.Context) {
	defer w.wg.Done()
	defer w.stopWatch()
	var localC <-chan time.Time
	if w.client == nil {
		w.localResync(true)
	} else {
		t := w.Clock.NewTimer(w.DelayLocalResync)
		defer t.Stop()
		localC = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case up := <-w.connCh:
			w.onConnectionChange(up)
		case <-w.resyncReq:
			w.drainResyncRequests()
			w.resync(ctx)
		case <-w.loop.retryC:
			w.loop.retryC = nil
			w.resync(ctx)
		case c := <-w.changes:
			w.applyChange(c)
		case <-localC:
			localC = nil
			w.localResync(false)
		}
	}
}

// drainResyncRequests empties the request queue: one resync answers them all.
func (w *DBWatcher) drainResyncRequests() {
	for {
		select {
		case <-w.resyncReq:
		default:
			return
		}
	}
}

// resync runs the resync a request asks for.
func (w *DBWatcher) resync(ctx context.Context) {
	w.loop.retryC = nil
	if w.client == nil {
		w.localResync(true)
		return
	}
	w.remoteResync(ctx)
}

// onConnectionChange stops the watch and, when etcd is back, asks for a resync; until
// that resync is delivered every change is dropped (the resync covers them).
func (w *DBWatcher) onConnectionChange(up bool) {
	w.stopWatch()
	w.loop.synced = false
	w.loop.retryC = nil
	if up {
		w.requestResync("etcd connected")
		return
	}
	w.Log.Warn("etcd unreachable: watching stopped until it is back")
}

// stopWatch cancels the current watch; changes it already queued become stale.
func (w *DBWatcher) stopWatch() {
	if w.loop.watchCancel != nil {
		w.loop.watchCancel()
		w.loop.watchCancel = nil
	}
	w.loop.gen++
}

// startWatch replaces the watch by one starting at revision rev.
func (w *DBWatcher) startWatch(ctx context.Context, rev int64) {
	w.stopWatch()
	wctx, cancel := context.WithCancel(ctx)
	w.loop.watchCancel = cancel
	w.loop.floor = [2]int64{rev, rev}
	w.wg.Add(1)
	go w.watch(wctx, cancel, w.loop.gen, rev)
}

// remoteResync lists everything from etcd, mirrors the Kubernetes state into bolt,
// delivers a DBResync and restarts the watch right after the listed revision. On
// failure it retries after the probing interval.
func (w *DBWatcher) remoteResync(ctx context.Context) {
	if !w.connected.Load() {
		w.Log.Debug("remote resync deferred: etcd not connected (the reconnection resyncs)")
		w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeSkipped).Inc()
		return
	}
	start := w.Clock.Now()
	snap, err := w.list(ctx)
	if err != nil {
		w.remoteResyncFailed(ctx, err)
		return
	}
	ev, keys, mirror := w.buildSnapshot(snap)
	// The mirror writer writes the snapshot in its own goroutine while the event loop
	// processes the resync (the mirror matters only for a later start without etcd);
	// the changes watched from now on are queued to it after the snapshot.
	w.mirrorW.replace(mirror)
	w.pending.reset(ev)
	w.loop.keys = keys
	w.loop.synced = true
	w.loop.resynced = true
	w.startWatch(ctx, snap.rev+1)
	w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeOK).Inc()
	w.Log.WithFields(logrus.Fields{
		"revision": snap.rev,
		"objects":  len(mirror),
		"external": len(ev.ExternalConfig),
		"took":     w.Clock.Since(start).Round(time.Millisecond),
	}).Info("remote resync delivered")
}

// remoteResyncFailed counts the failure and schedules a new attempt.
func (w *DBWatcher) remoteResyncFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return // closing
	}
	w.metrics.resyncs.WithLabelValues(sourceRemote, outcomeError).Inc()
	w.Log.WithError(err).WithField("retry-in", w.RemoteDBProbingInterval).Warn("remote resync failed")
	w.loop.retryC = w.Clock.After(w.RemoteDBProbingInterval)
}

// buildSnapshot decodes a listing into the DBResync to deliver, the per-key state to
// keep and the Kubernetes values to mirror (keys relative to the KSR prefix).
func (w *DBWatcher) buildSnapshot(snap *snapshot) (*api.DBResync, map[string]entry, map[string][]byte) {
	ev := api.NewDBResync()
	ev.KubeState = api.NewKubeStateData(dbresources.Keywords()...)
	keys := make(map[string]entry, len(snap.ksr)+len(snap.ext))
	mirror := make(map[string][]byte, len(snap.ksr))
	decoded := w.decodeAll(snap.ksr)
	for i, kv := range snap.ksr {
		d := decoded[i]
		if d.res == nil {
			continue
		}
		key, rel, res, v := d.key, d.rel, d.res, d.value
		keys[key] = entry{rev: kv.ModRevision, value: v}
		if v != nil {
			ev.KubeState[res.Keyword][rel] = v
			mirror[rel] = kv.Value
		}
	}
	prefix := w.agentPrefix()
	for _, kv := range snap.ext {
		key := string(kv.Key)
		rel := strings.TrimPrefix(key, prefix)
		v := w.decodeExternal(key, rel, kv.Value)
		keys[key] = entry{rev: kv.ModRevision, value: v}
		if v != nil {
			ev.ExternalConfig[rel] = v
		}
	}
	return ev, keys, mirror
}

// decodedKV is one listed Kubernetes value decoded: res is nil for a key of no known
// resource, value nil for a bad value (logged and counted).
type decodedKV struct {
	key, rel string
	res      *dbresources.DBResource
	value    proto.Message
}

// decodeAll decodes the listed Kubernetes values, on every CPU the process may use:
// decoding (JSON) is most of the CPU time of listing a large cluster, and nothing else
// runs in the agent before the first resync is delivered.
func (w *DBWatcher) decodeAll(kvs []*mvccpb.KeyValue) []decodedKV {
	out := make([]decodedKV, len(kvs))
	decodeRange := func(from, to int) {
		for i := from; i < to; i++ {
			key := string(kvs[i].Key)
			rel := strings.TrimPrefix(key, ksrkey.KsrPrefix)
			res, ok := dbresources.GetResourceByKey(rel)
			if !ok {
				w.Log.WithField("key", key).Debug("key of no known resource ignored")
				continue
			}
			out[i] = decodedKV{key: key, rel: rel, res: res, value: w.decodeKube(res, key, rel, kvs[i].Value)}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(kvs)/decodeChunk+1)
	if workers <= 1 {
		decodeRange(0, len(kvs))
		return out
	}
	var wg sync.WaitGroup
	per := (len(kvs) + workers - 1) / workers
	for from := 0; from < len(kvs); from += per {
		to := min(from+per, len(kvs))
		wg.Go(func() { decodeRange(from, to) })
	}
	wg.Wait()
	return out
}

// decodeChunk is the fewest values worth a decoding goroutine of their own.
const decodeChunk = 512

// localResync delivers the state kept in the bolt mirror. Unless forced (etcd disabled,
// or asked for explicitly without etcd) it is skipped once any resync was delivered,
// while etcd is connected, and when the mirror is empty.
func (w *DBWatcher) localResync(force bool) {
	if !force && (w.loop.resynced || w.connected.Load()) {
		w.Log.Debug("local resync skipped: state already resynced or etcd connected")
		w.metrics.resyncs.WithLabelValues(sourceLocal, outcomeSkipped).Inc()
		return
	}
	w.mirrorW.flush() // what is still queued belongs to the mirror being read
	kvs, err := w.local.loadAll()
	if err != nil {
		w.metrics.resyncs.WithLabelValues(sourceLocal, outcomeError).Inc()
		w.Log.WithError(err).Error("local resync failed")
		return
	}
	if len(kvs) == 0 && !force {
		w.metrics.resyncs.WithLabelValues(sourceLocal, outcomeSkipped).Inc()
		w.Log.WithField("path", w.local.path).Info("local database empty: waiting for etcd")
		return
	}
	ev := api.NewDBResync()
	ev.Local = true
	ev.KubeState = api.NewKubeStateData(dbresources.Keywords()...)
	for rel, data := range kvs {
		res, ok := dbresources.GetResourceByKey(rel)
		if !ok {
			w.Log.WithField("key", rel).Debug("local key of no known resource ignored")
			continue
		}
		if v := w.decodeKube(res, rel, rel, data); v != nil {
			ev.KubeState[res.Keyword][rel] = v
		}
	}
	w.pending.reset(ev)
	w.loop.resynced = true
	w.metrics.resyncs.WithLabelValues(sourceLocal, outcomeOK).Inc()
	w.Log.WithFields(logrus.Fields{"path": w.local.path, "objects": len(kvs)}).Info("local resync delivered")
}

// applyChange turns one watched change into an event, unless it is stale (older watch,
// not resynced since the connection came back) or already processed (by revision).
func (w *DBWatcher) applyChange(c change) {
	st := &w.loop
	dropped := func(why string) {
		if infra.LevelEnabled(w.Log, logrus.DebugLevel) {
			w.Log.WithFields(logrus.Fields{"key": c.key, "revision": c.rev}).Debug("change dropped: " + why)
		}
	}
	if c.gen != st.gen || !st.synced {
		dropped("the next resync covers it")
		return
	}
	if c.rev < st.floor[c.stream()] {
		dropped("revision already processed")
		return
	}
	if e, ok := st.keys[c.key]; ok && c.rev <= e.rev {
		dropped("key already at this revision")
		return
	}
	st.floor[c.stream()] = c.rev
	if c.external {
		w.applyExternalChange(c)
		return
	}
	w.applyKubeChange(c)
}

// applyKubeChange delivers a KubeStateChange and mirrors it into bolt.
func (w *DBWatcher) applyKubeChange(c change) {
	st := &w.loop
	rel := strings.TrimPrefix(c.key, ksrkey.KsrPrefix)
	res, ok := dbresources.GetResourceByKey(rel)
	if !ok {
		w.Log.WithField("key", c.key).Debug("change of no known resource ignored")
		return
	}
	prev := st.keys[c.key].value
	if c.deleted {
		delete(st.keys, c.key)
		w.mirror(rel, nil)
		if prev == nil {
			return // never known
		}
		w.pending.record(c.key, rel, res.Keyword, prev, nil)
		return
	}
	v := w.decodeKube(res, c.key, rel, c.value)
	if v == nil {
		// Keep what the event loop knows: the next valid value is a change from it.
		st.keys[c.key] = entry{rev: c.rev, value: prev}
		return
	}
	st.keys[c.key] = entry{rev: c.rev, value: v}
	w.mirror(rel, c.value)
	if prev != nil && proto.Equal(prev, v) {
		w.Log.WithField("key", c.key).Debug("value rewritten unchanged")
		return
	}
	w.pending.record(c.key, rel, res.Keyword, prev, v)
}

// applyExternalChange delivers an ExternalConfigChange of source "db".
func (w *DBWatcher) applyExternalChange(c change) {
	st := &w.loop
	rel := strings.TrimPrefix(c.key, w.agentPrefix())
	prev := st.keys[c.key].value
	if c.deleted {
		delete(st.keys, c.key)
		if prev == nil {
			return
		}
		w.pending.record(c.key, rel, externalResource, prev, nil)
		return
	}
	v := w.decodeExternal(c.key, rel, c.value)
	if v == nil {
		st.keys[c.key] = entry{rev: c.rev, value: prev}
		return
	}
	st.keys[c.key] = entry{rev: c.rev, value: v}
	if prev != nil && proto.Equal(prev, v) {
		return
	}
	w.pending.record(c.key, rel, externalResource, prev, v)
}

// mirror queues the write (value != nil) or the delete of one key of the bolt mirror.
func (w *DBWatcher) mirror(rel string, value []byte) {
	w.mirrorW.update(rel, value)
}

// decodeKube decodes a Kubernetes value read under key (rel: relative to the KSR
// prefix). A value that does not decode, or whose identity (name, namespace) is not the
// one of its key, is logged, counted and nil: an object has one identity, whether the
// controller finds it by key (changes) or by the name inside it (resyncs).
func (w *DBWatcher) decodeKube(res *dbresources.DBResource, key, rel string, data []byte) proto.Message {
	v, err := res.Unmarshal(data)
	if err != nil {
		w.badValue(res.Keyword, key, err)
		return nil
	}
	if err := res.CheckKey(rel, v); err != nil {
		w.metrics.identityMismatches.WithLabelValues(res.Keyword).Inc()
		w.Log.WithError(err).WithFields(logrus.Fields{"key": key, "resource": res.Keyword}).
			Warn("value named for another key rejected")
		return nil
	}
	return v
}

// decodeExternal decodes an external configuration value; nil when the codec ignores
// the key or the value is bad (logged and counted).
func (w *DBWatcher) decodeExternal(key, rel string, data []byte) proto.Message {
	v, err := w.ExternalConfigCodec(rel, data)
	if err != nil {
		w.badValue(externalResource, key, err)
		return nil
	}
	if v == nil {
		w.Log.WithField("key", key).Debug("key is not external configuration: ignored")
	}
	return v
}

// badValue logs and counts a value that cannot be decoded.
func (w *DBWatcher) badValue(resource, key string, err error) {
	w.metrics.badValues.WithLabelValues(resource).Inc()
	w.Log.WithError(err).WithFields(logrus.Fields{"key": key, "resource": resource}).Warn("undecodable value skipped")
}
