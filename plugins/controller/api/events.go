package api

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
)

// Result lets a producer wait for the processing of a blocking event. The zero value is
// not usable; embed the value returned by NewResult.
type Result struct {
	once sync.Once
	ch   chan error
}

// NewResult returns a Result ready to receive one Done.
func NewResult() Result { return Result{ch: make(chan error, 1)} }

// Done delivers the processing result; calls after the first are ignored.
func (r *Result) Done(err error) {
	if r.ch == nil {
		return
	}
	r.once.Do(func() { r.ch <- err })
}

// Wait blocks until Done was called and returns its error.
func (r *Result) Wait() error { return <-r.ch }

// WaitChan returns the channel Done writes to, for use in a select.
func (r *Result) WaitChan() <-chan error { return r.ch }

// DBResync carries a full snapshot of the database: the Kubernetes state (and the external
// configuration) read from etcd, or from the local bolt mirror when Local is set.
type DBResync struct {
	// Local is set when the snapshot comes from the local mirror because etcd was not
	// reachable.
	Local bool
	// KubeState is the Kubernetes state by resource.
	KubeState KubeStateData
	// ExternalConfig is the external configuration written for this node.
	ExternalConfig KeyValuePairs
}

// NewDBResync returns an empty snapshot.
func NewDBResync() *DBResync {
	return &DBResync{KubeState: make(KubeStateData), ExternalConfig: make(KeyValuePairs)}
}

// GetName returns "Database Resync".
func (ev *DBResync) GetName() string { return "Database Resync" }

// String describes the snapshot by counts per resource.
func (ev *DBResync) String() string {
	src := "remote DB"
	if ev.Local {
		src = "local DB"
	}
	res := make([]string, 0, len(ev.KubeState))
	for r := range ev.KubeState {
		res = append(res, r)
	}
	sort.Strings(res)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)", ev.GetName(), src)
	for _, r := range res {
		fmt.Fprintf(&b, "\n * %s: %d", r, len(ev.KubeState[r]))
	}
	if len(ev.ExternalConfig) > 0 {
		fmt.Fprintf(&b, "\n * external config: %d", len(ev.ExternalConfig))
	}
	return b.String()
}

// Method is FullResync.
func (ev *DBResync) Method() EventMethodType { return FullResync }

// IsBlocking is false.
func (ev *DBResync) IsBlocking() bool { return false }

// Done does nothing: nobody waits for a DB resync.
func (ev *DBResync) Done(error) {}

// KubeStateChange is one changed Kubernetes object: PrevValue nil means added, NewValue
// nil means deleted.
type KubeStateChange struct {
	// Key is the object's key without the /vnf-agent/contiv-ksr/ prefix.
	Key string
	// Resource is the resource keyword ("pod", "service", ...).
	Resource string
	// PrevValue is the object before the change (nil when added).
	PrevValue proto.Message
	// NewValue is the object after the change (nil when deleted).
	NewValue proto.Message
}

// GetName returns "Kubernetes State Change".
func (ev *KubeStateChange) GetName() string { return "Kubernetes State Change" }

// String names the change and the key.
func (ev *KubeStateChange) String() string {
	op := "update"
	switch {
	case ev.PrevValue == nil && ev.NewValue == nil:
		op = "no-op"
	case ev.PrevValue == nil:
		op = "add"
	case ev.NewValue == nil:
		op = "delete"
	}
	return fmt.Sprintf("%s: %s %s %s", ev.GetName(), op, ev.Resource, ev.Key)
}

// Method is Update.
func (ev *KubeStateChange) Method() EventMethodType { return Update }

// TransactionType is BestEffort.
func (ev *KubeStateChange) TransactionType() UpdateTransactionType { return BestEffort }

// Direction is Forward.
func (ev *KubeStateChange) Direction() UpdateDirectionType { return Forward }

// IsBlocking is false.
func (ev *KubeStateChange) IsBlocking() bool { return false }

// Done does nothing.
func (ev *KubeStateChange) Done(error) {}

// ExternalConfigChange is a change of configuration given to the agent from outside
// (etcd under /vnf-agent/<node>/, or another source); a nil value deletes the key.
type ExternalConfigChange struct {
	Result
	blocking bool

	// Source names where the change came from ("db" for etcd).
	Source string
	// UpdatedKVs are the changed keys with their new values.
	UpdatedKVs KeyValuePairs
}

// NewExternalConfigChange returns an empty change; blocking producers call Wait.
func NewExternalConfigChange(source string, blocking bool) *ExternalConfigChange {
	return &ExternalConfigChange{Result: NewResult(), blocking: blocking, Source: source, UpdatedKVs: make(KeyValuePairs)}
}

// GetName returns "External Config Change".
func (ev *ExternalConfigChange) GetName() string { return "External Config Change" }

// String lists the changed keys.
func (ev *ExternalConfigChange) String() string {
	return fmt.Sprintf("%s (source %s)%s", ev.GetName(), ev.Source, describeKeys(ev.UpdatedKVs))
}

// Method is Update.
func (ev *ExternalConfigChange) Method() EventMethodType { return Update }

// TransactionType is BestEffort.
func (ev *ExternalConfigChange) TransactionType() UpdateTransactionType { return BestEffort }

// Direction is Forward.
func (ev *ExternalConfigChange) Direction() UpdateDirectionType { return Forward }

// IsBlocking is what the producer asked for.
func (ev *ExternalConfigChange) IsBlocking() bool { return ev.blocking }

// ExternalConfigResync replaces the whole configuration of one external source.
type ExternalConfigResync struct {
	Result
	blocking bool

	// Source names the external source.
	Source string
	// ExternalConfig is the source's complete configuration.
	ExternalConfig KeyValuePairs
}

// NewExternalConfigResync returns an empty resync; blocking producers call Wait.
func NewExternalConfigResync(source string, blocking bool) *ExternalConfigResync {
	return &ExternalConfigResync{Result: NewResult(), blocking: blocking, Source: source, ExternalConfig: make(KeyValuePairs)}
}

// GetName returns "External Config Resync".
func (ev *ExternalConfigResync) GetName() string { return "External Config Resync" }

// String lists the keys.
func (ev *ExternalConfigResync) String() string {
	return fmt.Sprintf("%s (source %s)%s", ev.GetName(), ev.Source, describeKeys(ev.ExternalConfig))
}

// Method is UpstreamResync.
func (ev *ExternalConfigResync) Method() EventMethodType { return UpstreamResync }

// IsBlocking is what the producer asked for.
func (ev *ExternalConfigResync) IsBlocking() bool { return ev.blocking }

// HealingResyncType says why a healing resync runs.
type HealingResyncType int

const (
	// Periodic healing re-applies the configuration on a timer (a Downstream resync).
	Periodic HealingResyncType = iota
	// AfterError healing rebuilds everything after a failed event (a Full resync).
	AfterError
)

// String returns the type name.
func (t HealingResyncType) String() string {
	if t == Periodic {
		return "Periodic"
	}
	return "After-Error"
}

// HealingResync repairs the agent's state, on a timer or after an error.
type HealingResync struct {
	// Type says why it runs.
	Type HealingResyncType
	// Error is the failure that triggered an AfterError resync.
	Error error
}

// GetName returns "Healing Resync".
func (ev *HealingResync) GetName() string { return "Healing Resync" }

// String names the type and the triggering error.
func (ev *HealingResync) String() string {
	if ev.Type == AfterError && ev.Error != nil {
		return fmt.Sprintf("%s (%s, after: %v)", ev.GetName(), ev.Type, ev.Error)
	}
	return fmt.Sprintf("%s (%s)", ev.GetName(), ev.Type)
}

// Method is DownstreamResync for periodic healing and FullResync after an error.
func (ev *HealingResync) Method() EventMethodType {
	if ev.Type == Periodic {
		return DownstreamResync
	}
	return FullResync
}

// IsBlocking is false.
func (ev *HealingResync) IsBlocking() bool { return false }

// Done does nothing.
func (ev *HealingResync) Done(error) {}

// Shutdown is the last event: handlers clean up what would outlive the agent (e.g. the
// host-side VETHs). The controller pushes it from Close and waits for it.
type Shutdown struct {
	Result
}

// NewShutdown returns a Shutdown event ready to be waited for.
func NewShutdown() *Shutdown { return &Shutdown{Result: NewResult()} }

// GetName returns "Shutdown".
func (ev *Shutdown) GetName() string { return "Shutdown" }

// String returns "Shutdown".
func (ev *Shutdown) String() string { return ev.GetName() }

// Method is Update.
func (ev *Shutdown) Method() EventMethodType { return Update }

// TransactionType is BestEffort.
func (ev *Shutdown) TransactionType() UpdateTransactionType { return BestEffort }

// Direction is Forward.
func (ev *Shutdown) Direction() UpdateDirectionType { return Forward }

// IsBlocking is true.
func (ev *Shutdown) IsBlocking() bool { return true }

func describeKeys(kvs KeyValuePairs) string {
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		op := "put"
		if kvs[k] == nil {
			op = "delete"
		}
		fmt.Fprintf(&b, "\n * %s %s", op, k)
	}
	return b.String()
}
