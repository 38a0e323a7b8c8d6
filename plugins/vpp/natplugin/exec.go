package natplugin

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	govppapi "go.fd.io/govpp/api"

	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	kvapi "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
	"github.com/contiv-vpp/contiv-vpp/plugins/vpp/internal/vppbase"
)

// The executor: the DNat44 descriptor's Create, Update and Delete (and their
// asynchronous forms) take the requests of the planner (plan.go), send them over the
// descriptor's channel, pipelined, and when some fail send the undo of the ones that
// succeeded, remembering the adds whose undo failed (leftovers).

// plan is the planner (planChange) given the descriptor's state: what Validate parsed
// of to, taken from the cache, and the interface names known now.
func (d *dnatDescriptor) plan(from, to *nat.DNat44) ([]step, error) {
	validated, _ := d.parsed.take(to)
	return planChange(from, to, validated, d.SwIfIndex)
}

// createAsync sends the requests that create a DNat44 without waiting for their
// replies; the returned function waits for them and, if some failed, undoes the ones
// that succeeded (as Create does). The scheduler starts many creations before waiting,
// so 10k DNATs go to VPP as one pipeline instead of 10k round trips.
func (d *dnatDescriptor) createAsync(_ string, to *nat.DNat44) func() (kvapi.Metadata, error) {
	return d.startAsync(nil, to)
}

// updateAsync is createAsync for an update (UpdateAsync): a node joining changes every
// NodePort DNat44, and their requests go to VPP as one pipeline.
func (d *dnatDescriptor) updateAsync(_ string, from, to *nat.DNat44, _ kvapi.Metadata) func() (kvapi.Metadata, error) {
	return d.startAsync(from, to)
}

// startAsync sends the requests that move VPP from the mappings of from to those of to
// (nil from: create) through the pipeline; the returned function waits for their
// replies and, if some failed, undoes the ones that succeeded.
func (d *dnatDescriptor) startAsync(from, to *nat.DNat44) func() (kvapi.Metadata, error) {
	label, op := to.GetLabel(), "update"
	if from == nil {
		op = "create"
	}
	if err := d.resolveConflicts(to); err != nil {
		d.parsed.drop(to)
		err = fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
		return func() (kvapi.Metadata, error) { return nil, err }
	}
	steps, err := d.plan(from, to)
	if err != nil {
		err = fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
		return func() (kvapi.Metadata, error) { return nil, err }
	}
	sent := make([]pending, len(steps)) // one block for the requests of the value
	for i, s := range steps {
		d.pipe.send(&sent[i], s.do)
	}
	return func() (kvapi.Metadata, error) {
		var errs []error // only when some request failed
		for i := range sent {
			if err := d.pipe.wait(&sent[i]); err != nil {
				if errs == nil {
					errs = make([]error, len(sent))
				}
				errs[i] = err
			}
		}
		if errs == nil {
			d.appliedExternal(label, to)
			return nil, nil
		}
		if err := d.finish(Tag(label), steps, errs); err != nil {
			return nil, fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
		}
		d.appliedExternal(label, to)
		return nil, nil
	}
}

// resolveConflicts keeps the agent's values ahead of external ones on an external
// endpoint (conflict.go) before to is applied: an external to is refused while the
// agent maps one of its endpoints; before the agent's to, the mappings of applied
// external values on its endpoints are deleted from VPP.
func (d *dnatDescriptor) resolveConflicts(to *nat.DNat44) error {
	if to == nil {
		return nil
	}
	if err := d.conflicts.refusal(to.GetLabel()); err != nil {
		return err
	}
	from, keep := d.conflicts.takeovers(to)
	if len(from) > 0 {
		d.pipe.drain()
	}
	for i, x := range from {
		steps, err := planChange(x, keep[i], nil, d.SwIfIndex)
		if err == nil {
			err = d.run(Tag(x.GetLabel()), steps)
		}
		if err != nil {
			return fmt.Errorf("take external endpoints over from DNAT44 %s (key %s): %w", x.GetLabel(), nat.DNAT44Key(x.GetLabel()), err)
		}
		d.conflicts.applied[x.GetLabel()] = keep[i]
		d.Log.WithFields(map[string]any{"label": to.GetLabel(), "external": nat.DNAT44Key(x.GetLabel())}).
			Warn("DNAT44: an external value mapped endpoints of the agent's value: its mappings there are deleted from VPP, the agent's value wins (the external value waits)")
	}
	return nil
}

// appliedExternal records that the external value to (nil: none) of label is in VPP.
func (d *dnatDescriptor) appliedExternal(label string, to *nat.DNat44) {
	if !d.conflicts.isExternal(label) {
		return
	}
	d.conflicts.init()
	if to == nil {
		delete(d.conflicts.applied, label)
		return
	}
	d.conflicts.applied[label] = to
}

// update moves VPP from the mappings of from to those of to (nil from:
// create, nil to: delete), sending only what differs.
func (d *dnatDescriptor) update(from, to *nat.DNat44) error {
	d.pipe.drain() // replies of asynchronous creations must not mix with these
	label := to.GetLabel()
	op := "update"
	switch {
	case from == nil:
		op = "create"
	case to == nil:
		op, label = "delete", from.GetLabel()
	}
	if err := d.resolveConflicts(to); err != nil {
		d.parsed.drop(to)
		return fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
	}
	steps, err := d.plan(from, to)
	if err != nil {
		return fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
	}
	if err := d.run(Tag(label), steps); err != nil {
		return fmt.Errorf("%s DNAT44 %s: %w", op, label, err)
	}
	d.appliedExternal(label, to)
	if len(steps) > 0 && infra.LevelEnabled(d.Log, logrus.DebugLevel) {
		d.Log.WithFields(map[string]any{"label": label, "requests": len(steps)}).Debugf("DNAT44 %s done", op)
	}
	return nil
}

// run sends the steps pipelined. If some fail, the ones that succeeded are
// undone, in reverse order, and the error lists the failures (and any undo
// that failed too).
func (d *dnatDescriptor) run(tag string, steps []step) error {
	if len(steps) == 0 {
		return nil
	}
	reqs := make([]request, len(steps))
	for i, s := range steps {
		reqs[i] = s.do
	}
	return d.finish(tag, steps, sendBatch(d.Ch, reqs))
}

// finish collects the outcome of steps sent with errs as their results: when some
// failed, the ones that succeeded are undone, in reverse order, and the error lists
// the failures (and any undo that failed too).
//
// An add failing because VPP already has what it adds counts as done if an earlier
// call's undo of that very add failed (with an error other than BUSY, see leftovers):
// the retried call would otherwise fail with "already exists" for good.
func (d *dnatDescriptor) finish(tag string, steps []step, errs []error) error {
	var failed []error
	for i, err := range errs {
		switch {
		case err == nil:
		case steps[i].missingOK && vppbase.IsRetval(err, govppapi.NO_SUCH_ENTRY):
			// already gone: nothing to undo either
		case vppbase.IsRetval(err, govppapi.VALUE_EXIST) && d.takeLeftover(tag, &steps[i]):
			// what a failed undo left: done (and undone with the others if the call fails)
			errs[i] = nil // (errs is the caller's scratch: it marks the step done)
		default:
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// the undo requests are built only now: most calls succeed
	undo, undone := planUndo(tag, steps, errs, d.SwIfIndex) // undone: the step each undo request undoes
	d.pipe.drain()
	// An undo left undone makes the retried create fail with "already exists"
	// for good, so undos failing with a transient error are sent again, and what
	// stays undone is remembered.
	for attempt := 1; len(undo) > 0; attempt++ {
		var again []request
		var againSteps []int
		for i, err := range sendBatch(d.Ch, undo) {
			switch {
			case err == nil:
			case attempt < undoAttempts && vppbase.IsRetval(err, govppapi.BUSY):
				again = append(again, undo[i])
				againSteps = append(againSteps, undone[i])
			default:
				failed = append(failed, fmt.Errorf("undo: %w", err))
				d.keepLeftover(tag, &steps[undone[i]])
			}
		}
		undo, undone = again, againSteps
	}
	return errors.Join(failed...)
}

// leftover identifies what an add put into VPP when undoing it failed, so that the
// same add, tried again, can take VPP's "already exists" for done.
type leftover struct {
	tag     string
	id      mappingID
	isLocal bool
	local   local // the local of a local add
}

// leftoverOf returns the leftover key of an add step; ok is false for other steps.
func (s *step) leftoverOf(tag string) (k leftover, ok bool) {
	if !s.do.isAdd {
		return leftover{}, false
	}
	return leftover{tag: tag, id: s.do.m.ident(), isLocal: s.do.isLocal, local: s.do.local}, true
}

// maxLeftovers bounds what the descriptor remembers of failed undos (a handful in
// practice: each one is a failed request followed by a failed undo).
const maxLeftovers = 4096

// keepLeftover remembers that the add of step s stayed in VPP (its undo failed).
func (d *dnatDescriptor) keepLeftover(tag string, s *step) {
	k, ok := s.leftoverOf(tag)
	if !ok {
		return
	}
	if len(d.leftovers) >= maxLeftovers {
		d.Log.WithField("count", len(d.leftovers)).Warn("DNAT44: too many mappings left by failed undos to remember; forgetting them (a resync repairs VPP)")
		clear(d.leftovers)
	}
	if d.leftovers == nil {
		d.leftovers = map[leftover]mapping{}
	}
	d.leftovers[k] = *s.do.m
}

// takeLeftover reports whether the add of step s, refused by VPP as existing, put in
// what a failed undo left there (the same mapping, tagged the same, or the same local
// of the same LB mapping), and forgets it.
func (d *dnatDescriptor) takeLeftover(tag string, s *step) bool {
	k, ok := s.leftoverOf(tag)
	if !ok {
		return false
	}
	m, ok := d.leftovers[k]
	if !ok || (!k.isLocal && !m.equal(s.do.m)) {
		return false
	}
	delete(d.leftovers, k)
	return true
}

// undoAttempts bounds the sends of one undo request failing with VPP's BUSY.
const undoAttempts = 5
