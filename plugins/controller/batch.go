package controller

import (
	"fmt"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// changeBatch is several Kubernetes state changes that the loop took from its sources
// in one go and processes as one event: every handler sees each change as its own
// KubeStateChange, in order, with the cached Kubernetes state as of that change, and
// all of them stage into one transaction. It is what keeps a burst of changes (a
// rolling update, node churn) from paying a transaction, a VPP round trip and an
// event record for every object.
type changeBatch struct {
	changes []*api.KubeStateChange
}

// batchName is the name of a batch event.
const batchName = "Kubernetes State Changes"

// GetName returns "Kubernetes State Changes".
func (b *changeBatch) GetName() string { return batchName }

// String counts the changes and lists the first ones, one per line.
func (b *changeBatch) String() string {
	var sb strings.Builder
	n := "changes"
	if len(b.changes) == 1 {
		n = "change"
	}
	fmt.Fprintf(&sb, "%s: %d %s", b.GetName(), len(b.changes), n)
	for i, ch := range b.changes {
		if i == batchDescribed {
			fmt.Fprintf(&sb, "\n... and %d more", len(b.changes)-i)
			break
		}
		sb.WriteString("\n")
		sb.WriteString(ch.String())
	}
	return sb.String()
}

// batchDescribed is how many changes of a batch its description names.
const batchDescribed = 8

// Method is Update.
func (b *changeBatch) Method() api.EventMethodType { return api.Update }

// TransactionType is BestEffort, the type of every KubeStateChange.
func (b *changeBatch) TransactionType() api.UpdateTransactionType { return api.BestEffort }

// Direction is Forward, the direction of every KubeStateChange.
func (b *changeBatch) Direction() api.UpdateDirectionType { return api.Forward }

// IsBlocking is false.
func (b *changeBatch) IsBlocking() bool { return false }

// Done does nothing (nobody waits for Kubernetes state changes).
func (b *changeBatch) Done(error) {}

// takeFromSources takes the next pending event of the sources; when it is a
// Kubernetes state change, the changes pending right behind it join it in one batch
// (up to the configured size). An event of another kind taken meanwhile is parked at
// the head of the backlog, so the order of every source is kept.
func (c *Controller) takeFromSources() api.Event {
	ev := c.nextFromSources()
	first, ok := ev.(*api.KubeStateChange)
	if !ok || c.config.MaxBatchedChanges <= 1 {
		return ev
	}
	var batch []*api.KubeStateChange
	for len(batch)+1 < c.config.MaxBatchedChanges {
		next := c.nextFromSources()
		if next == nil {
			break
		}
		ch, ok := next.(*api.KubeStateChange)
		if !ok {
			c.backlog = append(c.backlog, next)
			break
		}
		if batch == nil {
			batch = append(make([]*api.KubeStateChange, 0, 16), first)
		}
		batch = append(batch, ch)
	}
	if batch == nil {
		return first
	}
	return &changeBatch{changes: batch}
}
