package dbwatcher

import (
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// pendingChange is the coalesced change of one key that the event loop has not taken yet.
type pendingChange struct {
	rel      string // key relative to the KSR prefix or to /vnf-agent/<node>/
	resource string // resource keyword, or externalResource
	// prev is the value the event loop saw last (nil: it saw none); it is kept while
	// further changes of the key coalesce into next.
	prev proto.Message
	// next is the latest value (nil: deleted).
	next proto.Message
	// coalesced is set once a second change of the key merged into this one: only
	// then can next equal prev (the watcher records a change only when the value
	// differs from the one before it).
	coalesced bool
}

// changeTracker holds the events the watcher produced and the event loop has not taken
// yet, the way kube-proxy's change trackers do: one pending change per key (the latest
// value wins, the previous value the loop saw is kept), in the order in which the keys
// first changed, and at most one pending resync, which comes first and discards the
// changes it covers. What it holds is bounded by the number of keys, so a burst of
// changes never overflows: it shrinks into fewer, equivalent events.
//
// The watcher's loop records; the event loop (or the watcher's pump) takes with Next.
type changeTracker struct {
	mu     sync.Mutex
	resync api.Event
	byKey  map[string]*pendingChange // by full etcd key
	order  []string                  // full etcd keys in order of first pending change
	head   int                       // order[:head] is taken
	// wake tells the consumer that something is pending; it must not block.
	wake func()
	// delivered counts a change handed to the event loop, by resource.
	delivered func(resource string)
	// coalesced counts a change merged into a pending one of its key.
	coalesced func()
}

func newChangeTracker() *changeTracker {
	return &changeTracker{byKey: make(map[string]*pendingChange), wake: func() {}, delivered: func(string) {}, coalesced: func() {}}
}

// record adds a change of key from prev (the latest value the watcher knew, delivered
// or pending) to next (nil: deleted); next must differ from prev (the watcher does not
// record a value rewritten unchanged), so only coalesced changes are compared again.
func (t *changeTracker) record(key, rel, resource string, prev, next proto.Message) {
	t.mu.Lock()
	if p, ok := t.byKey[key]; ok {
		p.next = next
		p.coalesced = true
		t.coalesced()
	} else {
		t.byKey[key] = &pendingChange{rel: rel, resource: resource, prev: prev, next: next}
		t.order = append(t.order, key)
	}
	t.mu.Unlock()
	t.wake()
}

// reset replaces everything pending by a resync (which covers the pending changes).
func (t *changeTracker) reset(resync api.Event) {
	t.mu.Lock()
	t.resync = resync
	clear(t.byKey)
	t.order, t.head = nil, 0
	t.mu.Unlock()
	t.wake()
}

// Next returns the pending resync, else the oldest pending change that still changes
// something, as one event; nil when nothing is pending.
func (t *changeTracker) Next() api.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev := t.resync; ev != nil {
		t.resync = nil
		return ev
	}
	for t.head < len(t.order) {
		key := t.order[t.head]
		t.order[t.head] = ""
		t.head++
		p := t.byKey[key]
		delete(t.byKey, key)
		switch {
		case t.head == len(t.order):
			t.order, t.head = t.order[:0], 0
		case t.head > 1024 && t.head*2 > len(t.order):
			t.order, t.head = append([]string(nil), t.order[t.head:]...), 0
		}
		if p.coalesced && equalOrNil(p.prev, p.next) {
			continue // e.g. created and deleted before the loop saw it
		}
		t.delivered(p.resource)
		if p.resource == externalResource {
			ev := api.NewExternalConfigChange(ExternalSource, false)
			ev.UpdatedKVs[p.rel] = p.next
			return ev
		}
		return &api.KubeStateChange{Key: p.rel, Resource: p.resource, PrevValue: p.prev, NewValue: p.next}
	}
	t.order, t.head = t.order[:0], 0
	return nil
}

// len returns the number of pending changes (a pending resync not included).
func (t *changeTracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// equalOrNil is true when both are nil or both are equal values.
func equalOrNil(a, b proto.Message) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return proto.Equal(a, b)
}
