package kvscheduler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// txnExec runs one transaction (or its simulation) over the graph. Everything here
// runs on the transaction goroutine with Scheduler.mu held, except the descriptor
// calls that change or read the dataplane, which run with the lock released so that
// callbacks may read status and metadata.
type txnExec struct {
	s   *Scheduler
	g   *graph
	seq uint64
	// opTime is the time spent in descriptor callbacks since the last recorded
	// operation: the duration of the operation record() records next.
	opTime time.Duration
	// sim: plan only, no descriptor calls that touch the dataplane; the caller rolls
	// the graph back afterwards.
	sim bool

	retry      *api.RetryOpt // retry policy for failures (nil: no retry)
	attempt    int           // retry attempt executed by this txn (0 for the first try)
	origSeq    uint64        // for retries: the transaction whose failures are retried
	isRetry    bool
	withRevert bool
	reverting  bool

	ops       []api.RecordedOp
	errs      []api.KeyWithError
	retryKeys []retryKey
	failures  int
	// repeatedFailures counts the failures logged at debug only (failureLog): a
	// transaction whose every error is one of them logs its summary at debug too.
	repeatedFailures int

	// stageBuf holds what stage returns for a small transaction (the usual one: one
	// value), so that staging it allocates nothing.
	stageBuf struct {
		nodes [4]*node
		vals  [4]proto.Message
	}
}

// retryKey identifies one failure to retry: the key and the failure generation, so a
// retry is dropped if the value changed (or failed again) in the meantime.
type retryKey struct {
	key     string
	failGen uint64
	// opt is the value's own policy when the transaction has none (see node.retry).
	opt *api.RetryOpt
}

// reconcile makes the dataplane match what n should be, given its desired value, its
// dependencies and its parent. It is the single entry point for "this value may need
// work"; everything else (dependents, derived values) follows from it.
func (t *txnExec) reconcile(n *node) {
	if n.dead || n.removing {
		return
	}
	if n.failedIn == t.seq && !t.reverting {
		return // already failed in this transaction: wait for the retry
	}
	tgt := t.target(n)
	switch {
	case n.applied == nil && tgt == nil:
		t.settle(n)
	case tgt == nil:
		if !n.managed() {
			t.settle(n) // never delete what the dataplane owns
			return
		}
		t.delete(n)
		if n.applied == nil && n.nb != nil && !n.dead && t.target(n) != nil {
			// Deleting it moved its dependents to their new values, which created
			// what its own new value waits for (a value of the same transaction):
			// that value goes in now instead of waiting for a later change.
			t.reconcile(n)
		}
	case n.applied == nil:
		t.create(n, tgt)
	default:
		t.update(n, tgt)
	}
	if n.adopted && !n.dead {
		// a resync changed what the dataplane holds: re-derive
		t.syncChildren(n)
	}
}

// target is the value n should have in the dataplane now, nil if none.
func (t *txnExec) target(n *node) proto.Message {
	if n.nb == nil || n.nbErr != nil {
		return nil
	}
	if n.parent != nil {
		if !n.parent.available() {
			return nil
		}
	} else if n.desc == nil {
		return nil
	}
	if !t.g.depsSatisfied(n) {
		return nil
	}
	return n.nb
}

// settle sets the state of a node on which no operation is needed (or possible) and
// drops it from the graph when it is neither desired nor applied.
func (t *txnExec) settle(n *node) {
	if n.dead {
		return
	}
	g := t.g
	failed := n.state == api.StateFailed || n.state == api.StateRetrying
	switch {
	case n.applied != nil:
		var st api.ValueState
		switch {
		case n.managed() && failed:
			return
		case n.managed():
			st = api.StateConfigured
		case n.origin == api.FromSB:
			st = api.StateObtained
		default:
			st = api.StateDiscovered
		}
		if st != n.state {
			g.setState(n, st, n.lastOp, nil)
		}
	case n.nb == nil:
		if len(n.children) > 0 {
			t.syncChildren(n) // not applied: its derived values go
		}
		if len(n.children) == 0 {
			g.removeNode(n)
		}
	case n.nbErr != nil:
		if n.state != api.StateInvalid || n.lastErr != n.nbErr {
			g.setState(n, api.StateInvalid, n.lastOp, n.nbErr)
		}
	case n.parent == nil && n.desc == nil:
		if n.state != api.StateUnimplemented {
			prev := n.state
			g.setState(n, api.StateUnimplemented, api.OpCreate, api.ErrUnregisteredValue)
			t.record(n, api.OpCreate, prev, nil, n.nb, api.ErrUnregisteredValue)
			if !t.sim {
				t.s.log.WithField("key", n.key).Warn("no descriptor selects the key; value left unimplemented")
			}
		}
	case failed && (n.parent == nil || n.parent.available()) && g.depsSatisfied(n):
		// the operation failed; it stays failed until retried or changed
	default:
		if n.state != api.StatePending {
			g.setState(n, api.StatePending, n.lastOp, nil)
		}
	}
}

func (t *txnExec) create(n *node, v proto.Message) {
	prevState := n.state
	meta, err := t.callCreate(n, v)
	if err != nil {
		t.fail(n, api.OpCreate, err, prevState, nil, v)
		return
	}
	t.g.setApplied(n, v, meta, api.FromNB)
	t.g.setState(n, api.StateConfigured, api.OpCreate, nil)
	t.record(n, api.OpCreate, prevState, nil, v, nil)
	t.buildUp(n)
}

func (t *txnExec) update(n *node, v proto.Message) {
	d := n.desc
	if d == nil { // property: nothing to call
		if !proto.Equal(n.applied, v) {
			t.g.setApplied(n, v, nil, api.FromNB)
		}
		if n.state != api.StateConfigured {
			t.g.setState(n, api.StateConfigured, n.lastOp, nil)
		}
		return
	}
	if d.equal(n.key, n.applied, v) {
		adopt := !n.managed()
		if adopt {
			t.g.setApplied(n, n.applied, n.metadata, api.FromNB)
		}
		if n.state != api.StateConfigured || n.lastErr != nil {
			t.g.setState(n, api.StateConfigured, n.lastOp, nil)
		}
		if adopt || n.adopted {
			t.syncChildren(n)
		}
		return
	}
	if d.Update == nil || (d.UpdateWithRecreate != nil && d.UpdateWithRecreate(n.key, n.applied, v, n.metadata)) {
		t.recreate(n, v)
		return
	}
	prevState, prevValue := n.state, n.applied
	var meta api.Metadata
	derived := t.derive(n, v)
	err := t.dropObsoleteChildren(n, derived)
	if err == nil {
		meta, err = t.callUpdate(n, prevValue, v)
	}
	if err != nil {
		t.fail(n, api.OpUpdate, err, prevState, prevValue, v)
		t.syncChildren(n) // the old value is still in place: restore its derived values
		return
	}
	t.g.setApplied(n, v, meta, api.FromNB)
	t.g.setState(n, api.StateConfigured, api.OpUpdate, nil)
	t.record(n, api.OpUpdate, prevState, prevValue, v, nil)
	t.syncDerived(n, derived)
}

func (t *txnExec) recreate(n *node, v proto.Message) {
	prevState, prevValue := n.state, n.applied
	err := t.tearDown(n, false)
	if err == nil {
		err = t.callDelete(n)
	}
	if err != nil {
		t.g.setRemoving(n, false)
		t.fail(n, api.OpRecreate, err, prevState, prevValue, v)
		t.buildUp(n)
		return
	}
	t.g.setApplied(n, nil, nil, api.FromNB)
	t.g.setRemoving(n, false)
	meta, err := t.callCreate(n, v)
	if err != nil {
		t.fail(n, api.OpRecreate, err, prevState, prevValue, v)
		return
	}
	t.g.setApplied(n, v, meta, api.FromNB)
	t.g.setState(n, api.StateConfigured, api.OpRecreate, nil)
	t.record(n, api.OpRecreate, prevState, prevValue, v, nil)
	t.buildUp(n)
}

func (t *txnExec) delete(n *node) {
	if n.applied == nil || n.removing {
		return
	}
	prevState, prevValue := n.state, n.applied
	err := t.tearDown(n, false)
	if err == nil {
		err = t.callDelete(n)
	}
	t.deleted(n, prevState, prevValue, err)
}

// deleted ends the deletion of n (torn down, marked removing) with the outcome err of
// its Delete (or of what kept it from being called): n is gone, or still there.
func (t *txnExec) deleted(n *node, prevState api.ValueState, prevValue proto.Message, err error) {
	if err != nil {
		t.g.setRemoving(n, false)
		t.fail(n, api.OpDelete, err, prevState, prevValue, nil)
		t.buildUp(n) // still there: its derived values and dependents may stay
		return
	}
	t.g.setApplied(n, nil, nil, n.origin)
	t.g.setRemoving(n, false)
	t.g.setState(n, api.StateRemoved, api.OpDelete, nil)
	t.settle(n)
	t.record(n, api.OpDelete, prevState, prevValue, nil, nil)
}

// vanish handles a value that disappeared from the dataplane on its own: its
// dependents are deleted, its derived values vanish with it, no Delete is called.
func (t *txnExec) vanish(n *node) {
	if n.applied == nil || n.removing {
		return
	}
	prevState, prevValue := n.state, n.applied
	_ = t.tearDown(n, true) // it is gone whatever its dependents do
	t.g.setApplied(n, nil, nil, n.origin)
	t.g.setRemoving(n, false)
	t.g.setState(n, api.StateRemoved, api.OpDelete, nil)
	if n.nb == nil {
		t.settle(n)
	}
	t.record(n, api.OpDelete, prevState, prevValue, nil, nil)
	if n.nb != nil {
		t.reconcile(n)
	}
}

// sbSet records a value that the dataplane reports on its own (notification, or a
// derived value of such a value): no callback is made.
func (t *txnExec) sbSet(n *node, v proto.Message, meta api.Metadata, origin api.ValueOrigin) {
	if n.applied != nil && n.desc.equal(n.key, n.applied, v) && n.origin == origin {
		if meta != nil {
			t.g.setApplied(n, n.applied, meta, origin)
		}
		return
	}
	prevState, prevValue := n.state, n.applied
	wasAvail := n.available()
	op := api.OpCreate
	if prevValue != nil {
		op = api.OpUpdate
	}
	t.g.setApplied(n, v, meta, origin)
	t.settle(n)
	t.record(n, op, prevState, prevValue, v, nil)
	t.syncChildren(n)
	if !wasAvail {
		t.triggerDependents(n)
	}
	if n.nb != nil {
		t.reconcile(n)
	}
}

// tearDown prepares n for deletion: it stops satisfying dependencies, the dependents
// that now miss it are deleted (they become PENDING), and its derived values are
// deleted (or vanish with it when vanishing). It returns an error naming the first
// dependent or derived value that could not be deleted: n must then stay.
func (t *txnExec) tearDown(n *node, vanishing bool) error {
	t.g.setRemoving(n, true)
	var blocked error
	for _, d := range t.g.dependentsOf(n.key, isAppliedManaged) {
		if d.available() && !t.g.canStay(d) && !vanishing && t.moveAway(d) {
			continue // updated in place to a value that no longer needs n
		}
		if d.available() && !t.g.canStay(d) {
			if d.failedIn != t.seq || t.reverting {
				t.delete(d) // (not again if it already failed in this transaction)
				if d.applied == nil && d.nb != nil {
					// only its old content needed n: the new one may go in now
					t.reconcile(d)
				}
			}
			if blocked == nil && d.available() && !t.g.canStay(d) {
				blocked = fmt.Errorf("dependent %s was not deleted: %w", d.key, causeOf(d))
			}
		}
	}
	kids := n.children
	t.g.setChildren(n, nil)
	for i := len(kids) - 1; i >= 0; i-- {
		c := kids[i]
		t.detachChild(c, vanishing)
		if blocked == nil && !vanishing && c.applied != nil && !c.dead {
			blocked = fmt.Errorf("derived value %s was not deleted: %w", c.key, causeOf(c))
		}
	}
	return blocked
}

// moveAway updates in place a dependent whose desired value no longer needs the value
// being removed, creating first the desired values it waits for instead, so that the
// dependent never leaves the dataplane in between: an interface rebound from ACL A to
// ACL B gets B before A is deleted, whatever the order of their keys in a full resync.
// It reports whether the dependent can stay once n is gone.
func (t *txnExec) moveAway(d *node) bool {
	if d.nb == nil || d.nbErr != nil || (d.failedIn == t.seq && !t.reverting) {
		return false
	}
	for i := range d.deps {
		dep := &d.deps[i]
		if dep.Key == "" || t.g.depSatisfied(dep) {
			continue
		}
		if dn := t.g.nodes[dep.Key]; dn != nil && dn.nb != nil && dn.applied == nil && !dn.removing {
			t.reconcile(dn)
		}
	}
	if t.target(d) == nil {
		return false
	}
	t.update(d, d.nb)
	return t.g.canStay(d)
}

// causeOf is the error that kept n in the dataplane.
func causeOf(n *node) error {
	if n.lastErr != nil {
		return n.lastErr
	}
	return errors.New("its deletion failed earlier")
}

func isAppliedManaged(d *node) bool { return d.applied != nil && d.managed() }
func isWaiting(d *node) bool        { return d.nb != nil && d.applied == nil }

// buildUp follows a value that now exists: its derived values are applied and the
// dependents waiting for it are created.
func (t *txnExec) buildUp(n *node) {
	t.syncChildren(n)
	t.triggerDependents(n)
}

func (t *txnExec) triggerDependents(n *node) {
	if !n.available() {
		return
	}
	t.reconcileAll(t.g.dependentsOf(n.key, isWaiting))
}

// detachChild removes a derived value whose parent no longer derives it.
func (t *txnExec) detachChild(c *node, vanishing bool) {
	if c.dead {
		return
	}
	t.setNB(c, nil)
	switch {
	case c.applied == nil:
		t.settle(c)
	case vanishing || !c.managed():
		t.vanish(c)
	case c.failedIn != t.seq || t.reverting:
		t.delete(c) // (not again if it already failed in this transaction)
	}
	if !c.dead {
		t.g.setParent(c, nil)
	}
}

func (t *txnExec) derive(n *node, v proto.Message) []api.KeyValuePair {
	if v == nil || n.desc == nil || n.desc.DerivedValues == nil {
		return nil
	}
	return n.desc.DerivedValues(n.key, v)
}

// dropObsoleteChildren deletes the derived values of n that newDerived no longer has
// (done before an Update so the dataplane never holds both). It returns an error if
// one of them could not be deleted: the Update must not happen then.
func (t *txnExec) dropObsoleteChildren(n *node, newDerived []api.KeyValuePair) error {
	if len(n.children) == 0 {
		return nil
	}
	keep := make(map[string]struct{}, len(newDerived))
	for _, kv := range newDerived {
		keep[kv.Key] = struct{}{}
	}
	var kept, obsolete []*node
	for _, c := range n.children {
		if _, ok := keep[c.key]; ok {
			kept = append(kept, c)
		} else {
			obsolete = append(obsolete, c)
		}
	}
	if len(obsolete) == 0 {
		return nil
	}
	t.g.setChildren(n, kept)
	var blocked error
	for i := len(obsolete) - 1; i >= 0; i-- {
		c := obsolete[i]
		t.detachChild(c, false)
		if blocked == nil && c.applied != nil && !c.dead {
			blocked = fmt.Errorf("derived value %s was not deleted: %w", c.key, causeOf(c))
		}
	}
	return blocked
}

// syncChildren makes the derived values of n match DerivedValues of its applied
// value: obsolete ones are removed first, then new and changed ones applied. Derived
// values of a managed value are reconciled through their descriptors; those of a
// value the dataplane owns are recorded as they are, without callbacks.
func (t *txnExec) syncChildren(n *node) {
	var derived []api.KeyValuePair
	if n.available() {
		derived = t.derive(n, n.applied)
	}
	t.syncDerived(n, derived)
}

// syncDerived is syncChildren with the derived values of n.applied already computed
// (nil when n is not available).
func (t *txnExec) syncDerived(n *node, derived []api.KeyValuePair) {
	if n.adopted {
		t.g.setAdopted(n, false)
	}
	if !n.available() {
		derived = nil
	}
	if len(derived) == 0 && len(n.children) == 0 {
		return
	}
	stamp := t.g.nextStamp()
	kids := make([]*node, 0, len(derived))
	vals := make([]proto.Message, 0, len(derived))
	for _, kv := range derived {
		c := t.childNode(n, kv.Key)
		if c == nil || c.mark == stamp {
			continue
		}
		c.mark = stamp
		kids = append(kids, c)
		vals = append(vals, kv.Value)
	}
	var obsolete []*node
	for _, c := range n.children {
		if c.mark != stamp {
			obsolete = append(obsolete, c)
		}
	}
	t.g.setChildren(n, kids)
	for i := len(obsolete) - 1; i >= 0; i-- {
		t.detachChild(obsolete[i], false)
	}
	managed := n.managed()
	for i, c := range kids {
		if c.dead || c.parent != n {
			continue
		}
		if managed {
			if t.settledAs(c, vals[i]) {
				continue
			}
			t.setNB(c, vals[i])
			t.reconcile(c)
		} else {
			t.sbSet(c, vals[i], nil, n.origin)
		}
	}
}

// settledAs reports whether the derived value c already is v, wanted and applied, with
// nothing left to do: re-deriving it then changes nothing. An update of a value with many
// derived values (the NAT44 global configuration has one per interface) thus costs what
// changed, not a validation, re-indexing and reconciliation of every derived value.
func (t *txnExec) settledAs(c *node, v proto.Message) bool {
	return c.nb != nil && c.nbErr == nil && c.applied != nil && c.state == api.StateConfigured &&
		!c.removing && c.desc.equal(c.key, c.nb, v) && (c.applied == c.nb || c.desc.equal(c.key, c.applied, v))
}

// childNode returns the node for derived key of parent p, or nil (with the
// collision reported) if the key belongs to another value.
func (t *txnExec) childNode(p *node, key string) *node {
	c := t.g.nodes[key]
	switch {
	case c == nil:
		c = t.g.getOrCreate(key)
		t.g.setParent(c, p)
		return c
	case c.parent == p:
		return c
	case c.parent == nil && c.nb == nil:
		t.g.setParent(c, p) // a value retrieved on its own turns out to be derived
		return c
	}
	owner := "NB"
	if c.parent != nil {
		owner = "derived value of " + c.parent.key
	}
	t.errs = append(t.errs, api.KeyWithError{Key: key, Operation: api.OpCreate,
		Error: fmt.Errorf("derived value %s of %s: key already used by %s", key, p.key, owner)})
	return nil
}

// setNB sets the desired value of n, validating it and computing its dependencies.
func (t *txnExec) setNB(n *node, v proto.Message) {
	if v == n.nb && n.nbErr == nil {
		return
	}
	var nbErr error
	var deps []api.Dependency
	if v != nil && n.desc != nil {
		nbErr = t.validate(n, v)
		if nbErr == nil && n.desc.Dependencies != nil {
			deps = n.desc.Dependencies(n.key, v)
		}
	}
	t.g.setNB(n, v, nbErr, deps)
	if nbErr != nil {
		op := api.OpCreate
		if n.applied != nil {
			op = api.OpUpdate
		}
		t.ops = append(t.ops, api.RecordedOp{Key: n.key, Operation: op, Value: v, PrevValue: n.applied,
			PrevState: n.state, NewState: api.StateInvalid, Error: nbErr.Error(),
			IsRetry: t.isRetry, IsRevert: t.reverting, IsDerived: n.parent != nil})
		t.errs = append(t.errs, api.KeyWithError{Key: n.key, Operation: op,
			Error: fmt.Errorf("validate %s (descriptor %s): %w", n.key, n.desc.Name, nbErr)})
	}
}

func (t *txnExec) validate(n *node, v proto.Message) (err error) {
	if n.desc.Validate == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validate panicked: %v", r)
		}
	}()
	return n.desc.Validate(n.key, v)
}

// fail records a failed operation on n.
func (t *txnExec) fail(n *node, op api.TxnOperation, err error, prevState api.ValueState, prevValue, value proto.Message) {
	name := ""
	retriable := true
	if n.desc != nil {
		name = n.desc.Name
		if n.desc.IsRetriableFailure != nil {
			retriable = n.desc.IsRetriableFailure(err)
		}
	}
	st := api.StateFailed
	nodeOpt := t.nodeRetryPolicy(n)
	if retriable && (t.mayRetry() || nodeOpt != nil) {
		st = api.StateRetrying
	}
	n.failedIn = t.seq
	n.failGen++
	t.failures++
	t.g.setState(n, st, op, err)
	t.record(n, op, prevState, prevValue, value, err)
	t.errs = append(t.errs, api.KeyWithError{Key: n.key, Operation: op,
		Error: fmt.Errorf("%s %s (descriptor %s): %w", strings.ToLower(op.String()), n.key, name, err)})
	if st == api.StateRetrying {
		t.retryKeys = append(t.retryKeys, retryKey{key: n.key, failGen: n.failGen, opt: nodeOpt})
	}
	t.s.metrics.failedOp(name)
	entry := t.s.log.WithFields(map[string]any{"key": n.key, "op": op.String(), "seq": t.seq}).WithError(err)
	warn, repeated := t.s.failLog.warn(n.key, err.Error(), t.s.clock.Now())
	switch {
	case !warn:
		t.repeatedFailures++
		entry.Debug("operation failed again (as logged before)")
	case repeated > 0:
		entry.WithField("repeated", repeated).Warn("operation failed")
	default:
		entry.Warn("operation failed")
	}
}

// nodeRetryPolicy returns the policy a failure of n is retried with when the
// transaction has no policy of its own (nil otherwise, or when n has none): the one its
// value (a derived value: its top parent's) was staged with. A reverting transaction
// and the retries themselves keep their own rules.
func (t *txnExec) nodeRetryPolicy(n *node) *api.RetryOpt {
	if t.retry != nil || t.withRevert || t.isRetry {
		return nil
	}
	for n.parent != nil {
		n = n.parent
	}
	if n.retry == nil || n.retry.MaxCount < 1 {
		return nil
	}
	return n.retry
}

func (t *txnExec) mayRetry() bool {
	return t.retry != nil && t.attempt < t.retry.MaxCount && (!t.withRevert || t.reverting)
}

func (t *txnExec) record(n *node, op api.TxnOperation, prevState api.ValueState, prevValue, value proto.Message, err error) {
	if n.desc == nil && n.parent != nil {
		return // properties are bookkeeping, not operations
	}
	r := api.RecordedOp{Key: n.key, Operation: op, Value: value, PrevValue: prevValue,
		PrevState: prevState, NewState: n.state, IsRetry: t.isRetry, IsRevert: t.reverting,
		IsDerived: n.parent != nil, Duration: t.opTime}
	t.opTime = 0
	if err != nil {
		r.Error = err.Error()
	}
	t.ops = append(t.ops, r)
}

// unlocked runs a descriptor callback that touches the dataplane with the graph lock
// released, turning a panic into an error.
func (t *txnExec) unlocked(f func() error) (err error) {
	t.s.mu.Unlock()
	defer t.s.mu.Lock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("descriptor panicked: %v", r)
		}
	}()
	return f()
}

func (t *txnExec) callCreate(n *node, v proto.Message) (api.Metadata, error) {
	d := n.desc
	if d == nil || t.sim {
		return nil, nil
	}
	if d.Create == nil {
		return nil, api.ErrUnimplementedCreate
	}
	var meta api.Metadata
	err := t.timed(d, api.OpCreate, func() (err error) {
		meta, err = d.Create(n.key, v)
		return err
	})
	return meta, err
}

func (t *txnExec) callUpdate(n *node, old, v proto.Message) (api.Metadata, error) {
	d := n.desc
	if t.sim {
		return n.metadata, nil
	}
	meta, oldMeta := n.metadata, n.metadata
	err := t.timed(d, api.OpUpdate, func() (err error) {
		meta, err = d.Update(n.key, old, v, oldMeta)
		return err
	})
	return meta, err
}

func (t *txnExec) callDelete(n *node) error {
	d := n.desc
	if d == nil || t.sim {
		return nil
	}
	if d.Delete == nil {
		return api.ErrUnimplementedDelete
	}
	v, meta := n.applied, n.metadata
	return t.timed(d, api.OpDelete, func() error { return d.Delete(n.key, v, meta) })
}

// timed runs a descriptor callback of operation op like unlocked does, adds its duration
// to the operation being recorded (t.opTime) and observes it in d's metrics.
func (t *txnExec) timed(d *descriptor, op api.TxnOperation, f func() error) error {
	return t.timedAfter(d, op, 0, f)
}

// timedAfter is timed for an operation that already took before (the start of a
// creation run together with others).
func (t *txnExec) timedAfter(d *descriptor, op api.TxnOperation, before time.Duration, f func() error) error {
	start := time.Now()
	err := t.unlocked(f)
	elapsed := before + time.Since(start)
	t.opTime += elapsed
	if obs := d.opTime[op]; obs != nil {
		obs.Observe(elapsed.Seconds())
	}
	return err
}

// maxAsyncRun bounds how many operations are started before their results are awaited.
const maxAsyncRun = 1024

// reconcileAll reconciles nodes in order. Runs of values that can be created, updated or
// deleted asynchronously (see KVDescriptor.CreateAsync, UpdateAsync and DeleteAsync) are
// started together, then awaited in order; everything else goes through reconcile one
// by one.
func (t *txnExec) reconcileAll(nodes []*node) {
	for i := 0; i < len(nodes); {
		run := t.asyncRun(nodes[i:])
		switch {
		case len(run) == 0:
			t.reconcile(nodes[i])
			i++
		case run.started() < 2:
			// nothing to overlap: the values of the run one by one, as reconcile does
			for _, op := range run {
				t.reconcile(op.n)
			}
			i += len(run)
		default:
			t.execRun(run)
			i += len(run)
		}
	}
}

// asyncKind is what a value of a run needs.
type asyncKind uint8

const (
	asyncNothing asyncKind = iota // already as wanted: nothing to do
	asyncCreate                   // CreateAsync
	asyncUpdate                   // UpdateAsync
	asyncDelete                   // DeleteAsync
)

// asyncOp is one value of a run: the node, the value being applied (nil for a
// delete), what is done and the function that waits for its outcome.
type asyncOp struct {
	n    *node
	v    proto.Message
	kind asyncKind
	wait func() (api.Metadata, error)
	// started is how long CreateAsync, UpdateAsync or DeleteAsync took to start it.
	started time.Duration
}

// asyncOps is a run of operations started together.
type asyncOps []asyncOp

// started counts the operations of the run that call the descriptor.
func (r asyncOps) started() int {
	n := 0
	for i := range r {
		if r[i].kind != asyncNothing {
			n++
		}
	}
	return n
}

// asyncRun returns the longest prefix of nodes whose values can be applied together:
// top-level values of one descriptor, with their dependencies satisfied and no derived
// values, each either new (the descriptor has CreateAsync; nothing depends on it, so
// creating one cannot change whether another may be created), or in the dataplane and
// changed (UpdateAsync; no recreate needed), or in the dataplane as wanted with nothing
// to do, or in the dataplane, managed and no longer wanted at all (DeleteAsync; no
// derived values and nothing, applied or waiting, depends on it, so deleting it has
// no dependents or derived values to delete first and cannot change whether another
// value may be created). Updating a value does not change whether it exists, so it
// cannot change what another value of the run may do either.
func (t *txnExec) asyncRun(nodes []*node) asyncOps {
	if t.sim || t.reverting || len(nodes) < 2 {
		return nil // (one value: nothing to overlap, and its comparison is not done twice)
	}
	var run asyncOps
	var desc *descriptor
	for _, n := range nodes {
		if len(run) == maxAsyncRun {
			break
		}
		d := n.desc
		if d == nil || (d.CreateAsync == nil && d.UpdateAsync == nil && d.DeleteAsync == nil) || (desc != nil && d != desc) {
			break
		}
		if n.dead || n.removing || n.parent != nil || n.adopted || len(n.children) > 0 || n.failedIn == t.seq {
			break
		}
		v := t.target(n)
		if v == nil {
			if !t.asyncDeletable(n) {
				break
			}
			desc = d
			run = append(run, asyncOp{n: n, kind: asyncDelete})
			continue
		}
		if len(t.derive(n, v)) > 0 {
			break
		}
		op := asyncOp{n: n, v: v}
		switch {
		case n.applied == nil:
			if d.CreateAsync == nil || hasDependents(t.g, n) {
				return run
			}
			op.kind = asyncCreate
		case !n.managed():
			return run
		case d.equal(n.key, n.applied, v):
			if n.state != api.StateConfigured || n.lastErr != nil {
				return run // reconcile settles its state
			}
			op.kind = asyncNothing
		case d.UpdateAsync == nil || d.Update == nil ||
			(d.UpdateWithRecreate != nil && d.UpdateWithRecreate(n.key, n.applied, v, n.metadata)):
			return run
		default:
			op.kind = asyncUpdate
		}
		desc = d
		run = append(run, op)
	}
	return run
}

// asyncDeletable reports whether n, whose target is nil, can be deleted in a run
// (DeleteAsync): a managed value in the dataplane that NB no longer wants at all
// (a value wanted but waiting for a dependency, or invalid, goes through reconcile),
// with nothing depending on it. Its derived values were checked by the caller.
func (t *txnExec) asyncDeletable(n *node) bool {
	return n.desc.DeleteAsync != nil && n.desc.Delete != nil && n.nb == nil && n.applied != nil &&
		n.managed() && !hasDependents(t.g, n)
}

// hasDependents reports whether any value, applied or waiting, depends on n.
func hasDependents(g *graph, n *node) bool {
	return len(g.dependentsOf(n.key, func(*node) bool { return true })) > 0
}

// execRun starts every operation of the run, then awaits them in order, recording each
// like create, update and delete do.
func (t *txnExec) execRun(run asyncOps) {
	for i := range run {
		if run[i].kind == asyncDelete {
			t.g.setRemoving(run[i].n, true) // (what tearDown does first)
		}
	}
	_ = t.unlocked(func() error {
		for i := range run {
			c := &run[i]
			start := time.Now()
			switch c.kind {
			case asyncCreate:
				c.wait = startCreate(c.n.desc, c.n.key, c.v)
			case asyncUpdate:
				c.wait = startUpdate(c.n.desc, c.n.key, c.n.applied, c.v, c.n.metadata)
			case asyncDelete:
				c.wait = startDelete(c.n.desc, c.n.key, c.n.applied, c.n.metadata)
			}
			c.started = time.Since(start)
		}
		return nil
	})
	for i := range run {
		c := &run[i]
		if c.kind == asyncNothing {
			continue
		}
		op := api.OpCreate
		switch c.kind {
		case asyncUpdate:
			op = api.OpUpdate
		case asyncDelete:
			op = api.OpDelete
		}
		prevState, prevValue := c.n.state, c.n.applied
		var meta api.Metadata
		err := t.timedAfter(c.n.desc, op, c.started, func() (err error) {
			meta, err = c.wait()
			return err
		})
		if op == api.OpDelete {
			t.deleted(c.n, prevState, prevValue, err)
			continue
		}
		if err != nil {
			t.fail(c.n, op, err, prevState, prevValue, c.v)
			continue
		}
		t.g.setApplied(c.n, c.v, meta, api.FromNB)
		t.g.setState(c.n, api.StateConfigured, op, nil)
		t.record(c.n, op, prevState, prevValue, c.v, nil)
		if op == api.OpCreate {
			t.buildUp(c.n)
		}
	}
}

// startCreate calls CreateAsync, turning a panic into the creation's error.
func startCreate(d *descriptor, key string, v proto.Message) (wait func() (api.Metadata, error)) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("descriptor panicked: %v", r)
			wait = func() (api.Metadata, error) { return nil, err }
		}
	}()
	w := d.CreateAsync(key, v)
	if w == nil {
		return func() (api.Metadata, error) {
			return nil, fmt.Errorf("descriptor %s: CreateAsync returned no wait function", d.Name)
		}
	}
	return w
}

// startDelete calls DeleteAsync, turning a panic into the deletion's error (the value
// and its metadata then stay).
func startDelete(d *descriptor, key string, v proto.Message, meta api.Metadata) (wait func() (api.Metadata, error)) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("descriptor panicked: %v", r)
			wait = func() (api.Metadata, error) { return nil, err }
		}
	}()
	w := d.DeleteAsync(key, v, meta)
	if w == nil {
		return func() (api.Metadata, error) {
			return nil, fmt.Errorf("descriptor %s: DeleteAsync returned no wait function", d.Name)
		}
	}
	return func() (api.Metadata, error) { return nil, w() }
}

// startUpdate calls UpdateAsync, turning a panic into the update's error (the old
// value and metadata then stay).
func startUpdate(d *descriptor, key string, old, v proto.Message, meta api.Metadata) (wait func() (api.Metadata, error)) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("descriptor panicked: %v", r)
			wait = func() (api.Metadata, error) { return meta, err }
		}
	}()
	w := d.UpdateAsync(key, old, v, meta)
	if w == nil {
		return func() (api.Metadata, error) {
			return meta, fmt.Errorf("descriptor %s: UpdateAsync returned no wait function", d.Name)
		}
	}
	return w
}
