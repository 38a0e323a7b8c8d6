package controller

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// schedulerTxn stages the values of one event: handlers' values, then the external
// configuration merged over them by the controller. A nil value stands for a delete.
// It is also the handlers' api.FollowUpPusher.
type schedulerTxn struct {
	values map[string]proto.Message
	merged map[string]proto.Message
	// followUp queues a follow-up of the event in progress.
	followUp func(api.Event) error
	order    []string // keys of values in the order they were first staged
	// layer, while set, receives what is staged (the values of one change of a batch);
	// endChange merges it into values unless it touches a key staged before it.
	layer *txnLayer
}

// txnLayer is what one change of a batch staged, in staging order.
type txnLayer struct {
	values map[string]proto.Message
	order  []string
}

func newSchedulerTxn(followUp func(api.Event) error) *schedulerTxn {
	return &schedulerTxn{values: make(map[string]proto.Message), merged: make(map[string]proto.Message), followUp: followUp}
}

// PushFollowUp queues ev as a follow-up of the event whose handlers stage into t.
func (t *schedulerTxn) PushFollowUp(ev api.Event) error {
	if t.followUp == nil {
		return fmt.Errorf("push %s: no event in progress", ev.GetName())
	}
	return t.followUp(ev)
}

// Put stages a value; a nil value is a handler bug (use Delete) and panics, so that it is
// found in tests rather than silently deleting configuration.
func (t *schedulerTxn) Put(key string, value proto.Message) {
	if value == nil {
		panic("controller: Put of a nil value for key " + key + " (use Delete)")
	}
	t.stage(key, value)
}

// Delete stages the removal of key.
func (t *schedulerTxn) Delete(key string) { t.stage(key, nil) }

// stage records a value, keeping the order in which keys were first staged: the
// scheduler reconciles in that order, so a handler that stages a new value, then
// what switches to it, then the deletion of the old one gets exactly that (the
// policy renderer rebinds an interface to a new ACL before the old ACL goes).
func (t *schedulerTxn) stage(key string, value proto.Message) {
	if l := t.layer; l != nil {
		if _, staged := l.values[key]; !staged {
			l.order = append(l.order, key)
		}
		l.values[key] = value
		return
	}
	if _, staged := t.values[key]; !staged {
		t.order = append(t.order, key)
	}
	t.values[key] = value
}

// Get returns the value staged under key by the handlers, or nil.
func (t *schedulerTxn) Get(key string) proto.Message {
	if l := t.layer; l != nil {
		if v, ok := l.values[key]; ok {
			return v
		}
	}
	return t.values[key]
}

// beginChange opens a layer for the values of the next change of a batch.
func (t *schedulerTxn) beginChange() {
	if t.layer == nil {
		t.layer = &txnLayer{values: make(map[string]proto.Message)}
	}
}

// endChange merges the open layer into the transaction and closes it, unless the
// layer stages a key that an earlier change of the batch staged too: merged, the
// earlier change's operation on that key would be lost and the later one would move
// to the earlier one's place, so both changes would no longer be applied as each one
// ordered its operations (e.g. a new ACL before the interfaces that switch to it).
// In that conflict the layer stays open and endChange returns false: the batch
// commits what it merged so far and continues with a transaction that starts with
// the layer (splitLayer).
func (t *schedulerTxn) endChange() bool {
	l := t.layer
	for _, k := range l.order {
		if _, staged := t.values[k]; staged {
			return false
		}
	}
	for _, k := range l.order {
		t.values[k] = l.values[k]
	}
	t.order = append(t.order, l.order...)
	clear(l.values)
	l.order = l.order[:0]
	return true
}

// splitLayer returns a transaction holding what the open layer staged (the change
// that conflicted) and closes the layer of t; the new transaction keeps batching.
func (t *schedulerTxn) splitLayer() *schedulerTxn {
	l := t.layer
	t.layer = nil
	n := newSchedulerTxn(t.followUp)
	n.values, n.order = l.values, l.order
	return n
}

func (t *schedulerTxn) isEmpty() bool { return len(t.values) == 0 && len(t.merged) == 0 }

// commit sends the staged values (handlers' first, merged external values over them) to
// the scheduler in one transaction.
func (t *schedulerTxn) commit(ctx context.Context, s Scheduler) (uint64, error) {
	txn := s.StartNBTransaction()
	for _, k := range t.order {
		if _, overridden := t.merged[k]; overridden {
			continue
		}
		txn.SetValue(k, t.values[k])
	}
	for k, v := range t.merged {
		txn.SetValue(k, v)
	}
	return txn.Commit(ctx)
}

// Scheduler is what the controller needs of the KV scheduler.
type Scheduler interface {
	// StartNBTransaction opens a transaction of desired-state changes.
	StartNBTransaction() kvs.Txn
	// GetRecordedTransaction returns a committed transaction for the event history.
	GetRecordedTransaction(seqNum uint64) *kvs.RecordedTxn
	// GetValueStatus returns the status of the value under key (failing values are
	// named in the health report until they are repaired).
	GetValueStatus(key string) *kvs.ValueStatus
}
