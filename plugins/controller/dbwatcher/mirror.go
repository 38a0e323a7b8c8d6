package dbwatcher

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"
)

// mirrorFlushDelay is how long the mirror writer collects updates before it writes them
// in one bolt transaction. The mirror only serves a later start without etcd, so it may
// lag this much; in exchange a burst of changes costs a few bolt commits (each one
// copies the touched pages and syncs the file) instead of one per watched batch, and
// changes arriving one by one are not each followed by a commit competing with the
// next one for the CPU.
const mirrorFlushDelay = time.Second

// mirrorSnapshotDelay is the wait before a queued snapshot (a resync's listing) is
// written: the event loop processes that resync meanwhile, and writing the mirror of a
// large cluster (tens of milliseconds of CPU) would compete with it for the CPUs.
const mirrorSnapshotDelay = 2 * time.Second

// mirrorWriter writes the bolt mirror in its own goroutine, so that neither the first
// snapshot of a large cluster nor the commits of a burst run on the watcher's loop (the
// path from etcd to the event loop). Updates are coalesced per key while they wait: what
// it holds is bounded by the number of keys (the snapshot, whose values the watcher read
// anyway, and the latest value of each changed key), and repeated changes of a key cost
// one write.
type mirrorWriter struct {
	local         *localDB
	clock         clock.Clock
	delay         time.Duration // before changes are written
	snapshotDelay time.Duration // before a snapshot is written
	log           logrus.FieldLogger

	mu sync.Mutex
	// snapshot is a pending replacement of the whole mirror (nil: none); changes are
	// the puts (value) and deletes (nil) to apply after it, by key.
	snapshot map[string][]byte
	changes  map[string][]byte
	wake     chan struct{}

	// afterSnapshot, when set, is called after each snapshot written.
	afterSnapshot func()
	// release returns the memory a snapshot write leaves behind (releaseMemory).
	release func()

	// writing serialises flushes: a synchronous flush (before the mirror is read)
	// waits for the writer goroutine's flush in progress.
	writing sync.Mutex
}

func newMirrorWriter(local *localDB, clk clock.Clock, log logrus.FieldLogger) *mirrorWriter {
	return &mirrorWriter{local: local, clock: clk, delay: mirrorFlushDelay, snapshotDelay: mirrorSnapshotDelay, log: log,
		changes: make(map[string][]byte), wake: make(chan struct{}, 1), release: releaseMemory}
}

// releaseMemory returns what writing a snapshot leaves behind. bolt puts every page
// buffer a transaction allocated one page at a time back into its page pool when the
// transaction is written (go.etcd.io/bbolt db.go pagePool, tx.go write), so after a
// snapshot the pool holds an image of the whole mirror (16 MB for the 10k Services of
// the scale harness, 15% of the agent's live heap at rest), next to the decoded
// values the event loop keeps and the listing's garbage. Only garbage collections
// drain a sync.Pool: the first moves it to its victim cache, the second frees it; an
// idle agent collects every two minutes. Two collections here, the second returning
// the freed memory to the OS (debug.FreeOSMemory): once per snapshot (a resync), on
// the writer's goroutine, some tens of milliseconds of CPU at that size.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// replace queues a replacement of the whole mirror by kvs (keys relative to the KSR
// prefix); the changes pending before it are covered by it and dropped.
func (m *mirrorWriter) replace(kvs map[string][]byte) {
	m.mu.Lock()
	m.snapshot = kvs
	clear(m.changes)
	m.mu.Unlock()
	m.signal()
}

// update queues the put (value != nil) or the delete (nil) of one key.
func (m *mirrorWriter) update(key string, value []byte) {
	m.mu.Lock()
	m.changes[key] = value
	m.mu.Unlock()
	m.signal()
}

func (m *mirrorWriter) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// run writes what is queued, mirrorFlushDelay after the first update of each round
// (mirrorSnapshotDelay when the round holds a snapshot), until ctx is done (the
// watcher's Close then writes what is still queued, once every goroutine that queues
// has stopped).
func (m *mirrorWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		m.mu.Lock()
		delay := m.delay
		if m.snapshot != nil {
			delay = m.snapshotDelay
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-m.clock.After(delay):
		}
		m.flush()
	}
}

// flush writes what is queued now: the pending snapshot first, then the changes after
// it. A failure is logged (the mirror only matters for the next start without etcd;
// the next snapshot rewrites it whole).
func (m *mirrorWriter) flush() {
	m.writing.Lock()
	defer m.writing.Unlock()
	m.mu.Lock()
	snapshot := m.snapshot
	m.snapshot = nil
	var changes map[string][]byte // taken only when not empty: the empty map stays in use
	if len(m.changes) > 0 {
		changes, m.changes = m.changes, make(map[string][]byte)
	}
	m.mu.Unlock()
	if snapshot != nil {
		if err := m.local.replaceAll(snapshot); err != nil {
			m.log.WithError(err).Error("local database not updated; a start without etcd would use older state")
		} else {
			if m.afterSnapshot != nil {
				m.afterSnapshot()
			}
			m.release()
		}
	}
	if len(changes) > 0 {
		if err := m.local.apply(changes); err != nil {
			m.log.WithError(err).Error("local database not updated")
		}
	}
}
