package kvscheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"k8s.io/utils/clock"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Fake dataplane: a map of objects with per-key/per-operation failure injection. In
// strict mode it refuses what a real dataplane would refuse if the scheduler got the
// order wrong: creating an object twice, creating one whose dependencies are absent,
// deleting one that other objects still depend on.

var (
	errInjected = errors.New("injected failure")
	errFatal    = errors.New("non-retriable")
	// errOrder marks refusals caused by a wrong operation order (a scheduler bug).
	errOrder = errors.New("dataplane refused")
)

func injectedErr(key string, op api.TxnOperation, retriable bool) error {
	if retriable {
		return fmt.Errorf("%w: %s %s", errInjected, op, key)
	}
	return fmt.Errorf("%w: %s %s: %w", errInjected, op, key, errFatal)
}

type fakeObj struct {
	val    proto.Message
	origin api.ValueOrigin
	meta   int
}

type failKey struct {
	key string
	op  api.TxnOperation
}

type failSpec struct {
	times     int // remaining failures; < 0: forever
	retriable bool
}

type fakeDP struct {
	mu      sync.Mutex
	strict  bool
	objs    map[string]fakeObj
	fails   map[failKey]*failSpec
	calls   []string
	fired   int
	descs   []*fakeDesc
	metaSeq int
	// randomFail, when set, is asked before every create, update and delete whether it
	// fails (a retriable injected failure), on top of the failures set by failOn.
	randomFail func() bool
}

func newFakeDP() *fakeDP {
	return &fakeDP{strict: true, objs: make(map[string]fakeObj), fails: make(map[failKey]*failSpec)}
}

// fakeDesc configures one fake descriptor over the fake dataplane.
type fakeDesc struct {
	name         string
	prefix       string
	deps         func(key string, v proto.Message) []api.Dependency
	derived      func(key string, v proto.Message) []api.KeyValuePair
	noUpdate     bool
	recreate     func(key string, oldV, newV proto.Message) bool
	noRetrieve   bool
	validate     func(key string, v proto.Message) error
	withMeta     bool
	comparator   func(key string, a, b proto.Message) bool
	retrieveDeps []string
	// onCreate is called inside Create (e.g. to read other metadata maps).
	onCreate func(key string, v proto.Message) error
	// retrieveDerived makes Retrieve report, in the "der=" part of a value, the
	// derived objects ("d/<label>/<name>") that really exist, with their content, as
	// a dataplane reports an interface with the addresses it really has.
	retrieveDerived bool
	// async gives the descriptor a CreateAsync, a DeleteAsync (and, with Update, an
	// UpdateAsync) that apply the change when started, as a dataplane executes
	// pipelined requests in order, and report the outcome when waited for.
	async bool
}

func (dp *fakeDP) owns(key string) *fakeDesc {
	for _, d := range dp.descs {
		if strings.HasPrefix(key, d.prefix) {
			return d
		}
	}
	return nil
}

// register builds the api descriptor for fd.
func (dp *fakeDP) register(fd fakeDesc) *api.KVDescriptor {
	d := &fd
	dp.mu.Lock()
	dp.descs = append(dp.descs, d)
	dp.mu.Unlock()
	kd := &api.KVDescriptor{
		Name:                 d.name,
		NBKeyPrefix:          d.prefix,
		KeySelector:          func(key string) bool { return strings.HasPrefix(key, d.prefix) },
		KeyLabel:             func(key string) string { return strings.TrimPrefix(key, d.prefix) },
		ValueComparator:      d.comparator,
		Validate:             d.validate,
		Dependencies:         d.deps,
		DerivedValues:        d.derived,
		RetrieveDependencies: d.retrieveDeps,
		WithMetadata:         d.withMeta,
		IsRetriableFailure:   func(err error) bool { return !errors.Is(err, errFatal) },
		Create: func(key string, v proto.Message) (api.Metadata, error) {
			if d.onCreate != nil {
				if err := d.onCreate(key, v); err != nil {
					return nil, err
				}
			}
			return dp.create(d, key, v)
		},
		Delete: func(key string, v proto.Message, md api.Metadata) error { return dp.delete(d, key) },
	}
	if d.async {
		kd.CreateAsync = func(key string, v proto.Message) func() (api.Metadata, error) {
			dp.note("start " + key)
			md, err := kd.Create(key, v)
			return func() (api.Metadata, error) {
				dp.note("wait " + key)
				return md, err
			}
		}
		kd.DeleteAsync = func(key string, v proto.Message, md api.Metadata) func() error {
			dp.note("start-delete " + key)
			err := kd.Delete(key, v, md)
			return func() error {
				dp.note("wait-delete " + key)
				return err
			}
		}
	}
	if !d.noUpdate {
		kd.Update = func(key string, oldV, newV proto.Message, md api.Metadata) (api.Metadata, error) {
			return dp.update(d, key, newV, md)
		}
	}
	if d.async && !d.noUpdate {
		kd.UpdateAsync = func(key string, oldV, newV proto.Message, md api.Metadata) func() (api.Metadata, error) {
			dp.note("start-update " + key)
			md, err := kd.Update(key, oldV, newV, md)
			return func() (api.Metadata, error) {
				dp.note("wait-update " + key)
				return md, err
			}
		}
	}
	if d.recreate != nil {
		kd.UpdateWithRecreate = func(key string, oldV, newV proto.Message, md api.Metadata) bool {
			return d.recreate(key, oldV, newV)
		}
	}
	if !d.noRetrieve {
		kd.Retrieve = func(correlate []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
			return dp.retrieve(d)
		}
	}
	return kd
}

// note records a call.
func (dp *fakeDP) note(call string) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.calls = append(dp.calls, call)
}

func (dp *fakeDP) injected(key string, op api.TxnOperation) error {
	f := dp.fails[failKey{key, op}]
	if f == nil || f.times == 0 {
		if dp.randomFail != nil && op != api.OpUndefined && dp.randomFail() { // not Retrieve
			dp.fired++
			return injectedErr(key, op, true)
		}
		return nil
	}
	if f.times > 0 {
		f.times--
	}
	dp.fired++
	return injectedErr(key, op, f.retriable)
}

// checkDeps verifies (strict mode) that the dependencies of v that the fake
// dataplane can see are present.
func (dp *fakeDP) checkDeps(d *fakeDesc, key string, v proto.Message) error {
	if !dp.strict || d.deps == nil {
		return nil
	}
	for _, dep := range d.deps(key, v) {
		if dep.Key != "" {
			if dp.owns(dep.Key) != nil {
				if _, ok := dp.objs[dep.Key]; !ok {
					return fmt.Errorf("%w: %s needs %s", errOrder, key, dep.Key)
				}
			}
			continue
		}
		visible := len(dep.AnyOf.KeyPrefixes) > 0
		for _, p := range dep.AnyOf.KeyPrefixes {
			if dp.owns(p) == nil {
				visible = false
			}
		}
		if !visible {
			continue
		}
		found := false
		for k := range dp.objs {
			if dep.AnyOf.Matches(k) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: %s needs any of %v", errOrder, key, dep.AnyOf.KeyPrefixes)
		}
	}
	return nil
}

// users lists objects whose dependencies name key (strict mode).
func (dp *fakeDP) users(key string) []string {
	var out []string
	for k, o := range dp.objs {
		d := dp.owns(k)
		if d == nil || d.deps == nil || o.origin == api.FromSB {
			continue
		}
		for _, dep := range d.deps(k, o.val) {
			if dep.Key == key {
				out = append(out, k)
				continue
			}
			if dep.Key == "" && dep.AnyOf.Matches(key) {
				// only a user if no other object satisfies the AnyOf
				other := false
				for k2 := range dp.objs {
					if k2 != key && dep.AnyOf.Matches(k2) {
						other = true
						break
					}
				}
				if !other {
					out = append(out, k)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (dp *fakeDP) create(d *fakeDesc, key string, v proto.Message) (api.Metadata, error) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.calls = append(dp.calls, "create "+key)
	if err := dp.injected(key, api.OpCreate); err != nil {
		return nil, err
	}
	if _, ok := dp.objs[key]; ok && dp.strict {
		return nil, fmt.Errorf("%w: %s already exists", errOrder, key)
	}
	if err := dp.checkDeps(d, key, v); err != nil {
		return nil, err
	}
	dp.metaSeq++
	dp.objs[key] = fakeObj{val: v, origin: api.FromNB, meta: dp.metaSeq}
	if d.withMeta {
		return dp.metaSeq, nil
	}
	return nil, nil
}

func (dp *fakeDP) update(d *fakeDesc, key string, v proto.Message, md api.Metadata) (api.Metadata, error) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.calls = append(dp.calls, "update "+key)
	if err := dp.injected(key, api.OpUpdate); err != nil {
		return nil, err
	}
	o, ok := dp.objs[key]
	if !ok && dp.strict {
		return nil, fmt.Errorf("%w: update of absent %s", errOrder, key)
	}
	if err := dp.checkDeps(d, key, v); err != nil {
		return nil, err
	}
	o.val, o.origin = v, api.FromNB
	dp.objs[key] = o
	return md, nil
}

func (dp *fakeDP) delete(d *fakeDesc, key string) error {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.calls = append(dp.calls, "delete "+key)
	if err := dp.injected(key, api.OpDelete); err != nil {
		return err
	}
	if _, ok := dp.objs[key]; !ok && dp.strict {
		return fmt.Errorf("%w: delete of absent %s", errOrder, key)
	}
	if dp.strict {
		if users := dp.users(key); len(users) > 0 {
			return fmt.Errorf("%w: %s still used by %v", errOrder, key, users)
		}
	}
	delete(dp.objs, key)
	return nil
}

func (dp *fakeDP) retrieve(d *fakeDesc) ([]api.KVWithMetadata, error) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.calls = append(dp.calls, "retrieve "+d.name)
	if err := dp.injected(d.name, api.OpUndefined); err != nil {
		return nil, err
	}
	out := make([]api.KVWithMetadata, 0, len(dp.objs))
	for k, o := range dp.objs {
		if strings.HasPrefix(k, d.prefix) {
			var md api.Metadata
			if d.withMeta {
				md = o.meta
			}
			val := o.val
			if d.retrieveDerived {
				val = dp.withRealDerived(strings.TrimPrefix(k, d.prefix), val)
			}
			out = append(out, api.KVWithMetadata{Key: k, Value: val, Origin: o.origin, Metadata: md})
		}
	}
	return out, nil
}

// failOn makes op on key fail times times (< 0: always).
func (dp *fakeDP) failOn(key string, op api.TxnOperation, times int, retriable bool) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.fails[failKey{key, op}] = &failSpec{times: times, retriable: retriable}
}

func (dp *fakeDP) clearFailures() {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.fails = make(map[failKey]*failSpec)
}

// plant puts an object into the dataplane behind the scheduler's back.
func (dp *fakeDP) plant(key string, v proto.Message, origin api.ValueOrigin) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	dp.metaSeq++
	dp.objs[key] = fakeObj{val: v, origin: origin, meta: dp.metaSeq}
}

// remove deletes an object behind the scheduler's back.
func (dp *fakeDP) remove(key string) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	delete(dp.objs, key)
}

func (dp *fakeDP) has(key string) bool {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	_, ok := dp.objs[key]
	return ok
}

func (dp *fakeDP) value(key string) string {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	o, ok := dp.objs[key]
	if !ok {
		return "<absent>"
	}
	return text(o.val)
}

// state returns key -> value text of every object.
func (dp *fakeDP) state() map[string]string {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	out := make(map[string]string, len(dp.objs))
	for k, o := range dp.objs {
		out[k] = text(o.val)
	}
	return out
}

// takeCalls returns the calls made since the last takeCalls.
func (dp *fakeDP) takeCalls() []string {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	c := dp.calls
	dp.calls = nil
	return c
}

func (dp *fakeDP) firedCount() int {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	return dp.fired
}

func text(m proto.Message) string {
	if sv, ok := m.(*wrapperspb.StringValue); ok {
		return sv.GetValue()
	}
	return fmt.Sprint(m)
}

func str(s string) proto.Message { return wrapperspb.String(s) }

// keyDep and anyOf build dependencies.
func keyDep(label, key string) api.Dependency { return api.Dependency{Label: label, Key: key} }

// depsFromValue reads dependencies from a value text of the form
// "content;dep=k1,k2;any=prefix1,prefix2" (any: one AnyOf over the prefixes).
func depsFromValue(key string, v proto.Message) []api.Dependency {
	var deps []api.Dependency
	for _, part := range strings.Split(text(v), ";") {
		switch {
		case strings.HasPrefix(part, "dep="):
			for _, k := range strings.Split(strings.TrimPrefix(part, "dep="), ",") {
				if k != "" {
					deps = append(deps, keyDep("needs-"+k, k))
				}
			}
		case strings.HasPrefix(part, "any="):
			deps = append(deps, api.Dependency{Label: "any", AnyOf: api.AnyOfDependency{
				KeyPrefixes: strings.Split(strings.TrimPrefix(part, "any="), ",")}})
		}
	}
	return deps
}

// derivedFromValue reads derived values from "...;der=name:content|name2:content2"
// (derived key "<derivedPrefix><parent label>/<name>").
func derivedFromValue(parentPrefix, derivedPrefix string) func(key string, v proto.Message) []api.KeyValuePair {
	return func(key string, v proto.Message) []api.KeyValuePair {
		var out []api.KeyValuePair
		for _, part := range strings.Split(text(v), ";") {
			if !strings.HasPrefix(part, "der=") {
				continue
			}
			for _, item := range strings.Split(strings.TrimPrefix(part, "der="), "|") {
				name, content, _ := strings.Cut(item, ":")
				if name == "" {
					continue
				}
				out = append(out, api.KeyValuePair{
					Key:   derivedPrefix + strings.TrimPrefix(key, parentPrefix) + "/" + name,
					Value: str(strings.ReplaceAll(content, "+", ";")),
				})
			}
		}
		return out
	}
}

// staticConfig is a ConfigLoader returning a fixed Config.
type staticConfig Config

func (c staticConfig) LoadConfig(out any) (bool, error) {
	*out.(*Config) = Config(c)
	return true, nil
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// newTestScheduler starts a scheduler with the given config (nil: defaults with
// the summary log off) and descriptors; it is closed when the test ends.
func newTestScheduler(tb testing.TB, cfg *Config, descs ...*api.KVDescriptor) *Scheduler {
	tb.Helper()
	return newTestSchedulerWithClock(tb, cfg, nil, descs...)
}

// newTestSchedulerWithClock is newTestScheduler with the given clock (nil: real).
func newTestSchedulerWithClock(tb testing.TB, cfg *Config, clk clock.WithDelayedExecution, descs ...*api.KVDescriptor) *Scheduler {
	tb.Helper()
	c := DefaultConfig()
	c.PrintTxnSummary = false
	if cfg != nil {
		c = *cfg
	}
	s, err := NewScheduler(Deps{Log: quietLogger(), Config: staticConfig(c), Clock: clk})
	if err != nil {
		tb.Fatalf("NewScheduler: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	if err := s.RegisterKVDescriptor(descs...); err != nil {
		tb.Fatalf("RegisterKVDescriptor: %v", err)
	}
	return s
}

// kv is a staged value; a nil value is a delete.
type kv struct {
	key string
	val proto.Message
}

func set(key, value string) kv { return kv{key, str(value)} }
func del(key string) kv        { return kv{key: key} }

func commitCtx(ctx context.Context, s *Scheduler, kvs ...kv) (uint64, error) {
	txn := s.StartNBTransaction()
	for _, p := range kvs {
		txn.SetValue(p.key, p.val)
	}
	return txn.Commit(ctx)
}

// mustCommit commits and fails the test on error.
func mustCommit(tb testing.TB, s *Scheduler, kvs ...kv) uint64 {
	tb.Helper()
	seq, err := commitCtx(context.Background(), s, kvs...)
	if err != nil {
		tb.Fatalf("commit: %v", err)
	}
	return seq
}

func stateOf(s *Scheduler, key string) api.ValueState { return s.GetValueStatus(key).State }

func wantState(tb testing.TB, s *Scheduler, key string, want api.ValueState) {
	tb.Helper()
	if got := s.GetValueStatus(key); got.State != want {
		tb.Fatalf("state of %s = %v (error %q, details %v), want %v", key, got.State, got.Error, got.Details, want)
	}
}

// queued returns how many requests wait in the scheduler's queue.
func queued(s *Scheduler) int {
	s.q.mu.Lock()
	defer s.q.mu.Unlock()
	return len(s.q.items) - s.q.head
}

// syncQueue waits until everything queued before it (SB notifications, retries queued
// by a timer) ran: it commits an empty transaction, which runs after them.
func syncQueue(tb testing.TB, s *Scheduler) {
	tb.Helper()
	if _, err := s.StartNBTransaction().Commit(context.Background()); err != nil {
		tb.Fatalf("empty commit: %v", err)
	}
}

// indexOf returns the position of call in calls, -1 if absent.
func indexOf(calls []string, call string) int {
	for i, c := range calls {
		if c == call {
			return i
		}
	}
	return -1
}

// wantOrder checks that the calls happened, in this order.
func wantOrder(tb testing.TB, calls []string, ordered ...string) {
	tb.Helper()
	last := -1
	for _, c := range ordered {
		i := indexOf(calls, c)
		if i < 0 {
			tb.Fatalf("call %q missing from %v", c, calls)
		}
		if i < last {
			tb.Fatalf("call %q came too early in %v (want order %v)", c, calls, ordered)
		}
		last = i
	}
}

// removeTree deletes an object and its derived objects ("v/NN" -> "d/NN/...")
// behind the scheduler's back, as a dataplane losing an object loses its parts.
func (dp *fakeDP) removeTree(key string) {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	delete(dp.objs, key)
	if rest, ok := strings.CutPrefix(key, "v/"); ok {
		for k := range dp.objs {
			if strings.HasPrefix(k, "d/"+rest+"/") {
				delete(dp.objs, k)
			}
		}
	}
}

// withRealDerived rewrites the "der=" part of v to the derived objects d/<label>/...
// that exist (caller holds dp.mu).
func (dp *fakeDP) withRealDerived(label string, v proto.Message) proto.Message {
	parts := strings.Split(text(v), ";")
	out := parts[:0:0]
	for _, part := range parts {
		if !strings.HasPrefix(part, "der=") {
			out = append(out, part)
			continue
		}
		var items []string
		for _, item := range strings.Split(strings.TrimPrefix(part, "der="), "|") {
			name, _, _ := strings.Cut(item, ":")
			if o, ok := dp.objs["d/"+label+"/"+name]; ok {
				items = append(items, name+":"+strings.ReplaceAll(text(o.val), ";", "+"))
			}
		}
		if len(items) > 0 {
			out = append(out, "der="+strings.Join(items, "|"))
		}
	}
	return str(strings.Join(out, ";"))
}
