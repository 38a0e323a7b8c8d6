// Package store writes the Kubernetes state that contiv-ksr owns into etcd, under
// ksrkey.KsrPrefix, in the layout and encoding the agents read (dbresources):
//
//	Put / Delete   one key, written only when the value differs from what etcd holds
//	Resync         mark and sweep of one key prefix against a complete desired state
//
// Deleting a node (k8s/node/<name>), by Delete or by a Resync sweep, also deletes the
// node's ID allocation (allocatedIDs/<id> whose VppNode has that name) and the node's
// external configuration (everything under /vnf-agent/<name>/), in the same
// transaction, as upstream contiv-ksr did; unlike upstream, an ID that the node's
// running agent still holds (nodeIDHolders/<id>, under its lease) is kept, and a Resync
// of the nodes releases it once no agent holds it and no Node object names it.
//
// Every write is an etcd transaction guarded by the conditions given to New, so that a
// contiv-ksr replica that has lost the leader election cannot write any more (its
// writes fail with ErrGuardFailed). The standalone cluster loader uses the same writer
// without a guard.
//
// The writer remembers what it has written and what Resync has read, so unchanged
// values cost no request; after a failed request it reads etcd again. It does not
// watch etcd: changes made by others are noticed at the next Resync.
package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/node"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// DefaultOpTimeout bounds every etcd request when Options.OpTimeout is zero.
const DefaultOpTimeout = 3 * time.Second

// maxOpsPerTxn keeps transactions well below etcd's default limit of 128 operations.
const maxOpsPerTxn = 64

// ErrGuardFailed is wrapped by the errors of writes refused because a guard condition
// no longer holds (for contiv-ksr: this replica is no longer the leader).
var ErrGuardFailed = errors.New("guard condition failed")

// Options configure a Writer.
type Options struct {
	// KV is the etcd connection (a *clientv3.Client or its KV).
	KV clientv3.KV
	// Guard are conditions every write transaction must satisfy; none for unguarded
	// writes.
	Guard []clientv3.Cmp
	// OpTimeout bounds each request; 0 means DefaultOpTimeout.
	OpTimeout time.Duration
	// Log receives one line per node cleanup; nil means infra.LoggerOr's default.
	Log logrus.FieldLogger
}

// Result says what a Put or Delete did.
type Result int

// The results of Put and Delete.
const (
	// Unchanged: etcd already held the value (or, for Delete, no value).
	Unchanged Result = iota
	// Added: the key was created.
	Added
	// Updated: the key's value was replaced.
	Updated
	// Deleted: the key was removed.
	Deleted
)

// String names the result for logs.
func (r Result) String() string {
	switch r {
	case Added:
		return "added"
	case Updated:
		return "updated"
	case Deleted:
		return "deleted"
	default:
		return "unchanged"
	}
}

// Stats count the keys a Resync changed.
type Stats struct {
	Added, Updated, Deleted int
}

// Writer writes KSR values into etcd. It is safe for concurrent use, but is meant for
// one writing goroutine: concurrent writes of the same key are not ordered.
type Writer struct {
	kv        clientv3.KV
	guard     []clientv3.Cmp
	opTimeout time.Duration
	log       logrus.FieldLogger

	mu     sync.Mutex
	known  map[string]proto.Message // key (relative) -> value etcd holds
	loaded map[string]bool          // resource prefixes whose keys are all in known
}

// New returns a writer.
func New(opts Options) *Writer {
	w := &Writer{
		kv:        opts.KV,
		guard:     opts.Guard,
		opTimeout: opts.OpTimeout,
		log:       infra.LoggerOr(opts.Log, "ksr-store"),
		known:     map[string]proto.Message{},
		loaded:    map[string]bool{},
	}
	if w.opTimeout <= 0 {
		w.opTimeout = DefaultOpTimeout
	}
	return w
}

// Put stores value under key (relative to ksrkey.KsrPrefix) unless etcd already holds
// an equal value. When the write itself fails, the result says what it would have done
// (Added or Updated); on earlier errors it is Unchanged.
func (w *Writer) Put(ctx context.Context, key string, value proto.Message) (Result, error) {
	if value == nil {
		return Unchanged, fmt.Errorf("put %s: nil value", key)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old, exists, err := w.lookup(ctx, key)
	if err != nil {
		return Unchanged, err
	}
	if exists && old != nil && proto.Equal(old, value) {
		return Unchanged, nil
	}
	data, err := dbresources.Marshal(value)
	if err != nil {
		return Unchanged, fmt.Errorf("put %s: %w", key, err)
	}
	res := Added
	if exists {
		res = Updated
	}
	if err := w.commit(ctx, "put "+key, []clientv3.Op{clientv3.OpPut(ksrkey.KsrPrefix+key, string(data))}); err != nil {
		w.forget(key)
		return res, err
	}
	w.known[key] = proto.Clone(value)
	return res, nil
}

// Delete removes key (relative to ksrkey.KsrPrefix) when etcd holds it. Deleting a node
// also removes its ID allocation and its /vnf-agent/<node>/ configuration. When the
// write itself fails, the result is Deleted (what it would have done).
func (w *Writer) Delete(ctx context.Context, key string) (Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, exists, err := w.lookup(ctx, key)
	if err != nil {
		return Unchanged, err
	}
	if !exists {
		return Unchanged, nil
	}
	ops := []clientv3.Op{clientv3.OpDelete(ksrkey.KsrPrefix + key)}
	if name, err := node.ParseNodeFromKey(key); err == nil {
		cleanup, err := w.nodeCleanupOps(ctx, []string{name}, false, nil)
		if err != nil {
			return Unchanged, fmt.Errorf("delete %s: %w", key, err)
		}
		ops = append(ops, cleanup...)
	}
	if err := w.commit(ctx, "delete "+key, ops); err != nil {
		w.forget(key)
		return Deleted, err
	}
	delete(w.known, key)
	return Deleted, nil
}

// Resync makes the keys under prefix (relative to ksrkey.KsrPrefix, e.g. "k8s/pod/")
// equal to desired: keys missing or different in etcd are written, keys etcd holds
// under prefix that desired lacks are deleted (mark and sweep). A key mapped to nil is
// kept as etcd holds it (for objects that exist but could not be converted). Deleted
// nodes are cleaned up as by Delete. On error some changes may have been made; calling
// Resync again completes them.
func (w *Writer) Resync(ctx context.Context, prefix string, desired map[string]proto.Message) (Stats, error) {
	var st Stats
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loaded[prefix] = false
	existing, err := w.list(ctx, prefix)
	if err != nil {
		return st, err
	}
	keys := make([]string, 0, len(desired))
	for k := range desired {
		if !strings.HasPrefix(k, prefix) {
			return st, fmt.Errorf("resync %s: key %s is outside the prefix", prefix, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ops []clientv3.Op
	for _, k := range keys {
		v := desired[k]
		old, exists := existing[k]
		switch {
		case v == nil:
			continue
		case !exists:
			st.Added++
		case old != nil && proto.Equal(old, v):
			continue
		default:
			st.Updated++
		}
		data, err := dbresources.Marshal(v)
		if err != nil {
			return Stats{}, fmt.Errorf("resync %s: put %s: %w", prefix, k, err)
		}
		ops = append(ops, clientv3.OpPut(ksrkey.KsrPrefix+k, string(data)))
	}
	var stale, staleNodes []string
	for k := range existing {
		if _, ok := desired[k]; !ok {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		if name, err := node.ParseNodeFromKey(k); err == nil {
			staleNodes = append(staleNodes, name)
		}
	}
	if prefix == node.KeyPrefix() {
		// The cleanup goes before the node keys: should a later batch fail, the node
		// key is still there and the next Resync cleans up again. It also releases
		// the IDs leaked by nodes deleted while their agent ran.
		known := make(map[string]bool, len(desired))
		for k := range desired {
			if name, err := node.ParseNodeFromKey(k); err == nil {
				known[name] = true
			}
		}
		cleanup, err := w.nodeCleanupOps(ctx, staleNodes, true, known)
		if err != nil {
			return Stats{}, fmt.Errorf("resync %s: %w", prefix, err)
		}
		ops = append(ops, cleanup...)
	}
	for _, k := range stale {
		ops = append(ops, clientv3.OpDelete(ksrkey.KsrPrefix+k))
	}
	st.Deleted = len(stale)
	for start := 0; start < len(ops); start += maxOpsPerTxn {
		end := min(start+maxOpsPerTxn, len(ops))
		if err := w.commit(ctx, "resync "+prefix, ops[start:end]); err != nil {
			return Stats{}, err
		}
	}
	for k := range w.known {
		if strings.HasPrefix(k, prefix) {
			delete(w.known, k)
		}
	}
	for k, v := range existing {
		if _, ok := desired[k]; ok && desired[k] == nil {
			w.known[k] = v // kept as it was
		}
	}
	for k, v := range desired {
		if v != nil {
			w.known[k] = proto.Clone(v)
		}
	}
	w.loaded[prefix] = true
	return st, nil
}

// lookup returns the value etcd holds for key, from memory when the key's prefix was
// loaded by Resync, else from etcd. value is nil for undecodable data.
func (w *Writer) lookup(ctx context.Context, key string) (value proto.Message, exists bool, err error) {
	if w.loaded[resourcePrefix(key)] {
		v, ok := w.known[key]
		return v, ok, nil
	}
	rctx, cancel := context.WithTimeout(ctx, w.opTimeout)
	defer cancel()
	resp, err := w.kv.Get(rctx, ksrkey.KsrPrefix+key)
	if err != nil {
		return nil, false, fmt.Errorf("read %s%s: %w", ksrkey.KsrPrefix, key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return decode(key, resp.Kvs[0].Value), true, nil
}

// list reads every key under prefix.
func (w *Writer) list(ctx context.Context, prefix string) (map[string]proto.Message, error) {
	rctx, cancel := context.WithTimeout(ctx, w.opTimeout)
	defer cancel()
	resp, err := w.kv.Get(rctx, ksrkey.KsrPrefix+prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s%s: %w", ksrkey.KsrPrefix, prefix, err)
	}
	out := make(map[string]proto.Message, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		k := strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix)
		out[k] = decode(k, kv.Value)
	}
	return out, nil
}

// decode returns the value of a KSR key, nil when it cannot be decoded (it then differs
// from any value to write).
func decode(key string, data []byte) proto.Message {
	res, ok := dbresources.GetResourceByKey(key)
	if !ok {
		return nil
	}
	v, err := res.Unmarshal(data)
	if err != nil {
		return nil
	}
	return v
}

// resourcePrefix returns the resource prefix of a key ("k8s/pod/"), or the key itself
// for keys of no known resource.
func resourcePrefix(key string) string {
	if res, ok := dbresources.GetResourceByKey(key); ok {
		return res.KeyPrefix
	}
	return key
}

// forget drops what is known about key's prefix after a failed write, whose outcome is
// unknown: the next lookup reads etcd.
func (w *Writer) forget(key string) {
	w.loaded[resourcePrefix(key)] = false
	delete(w.known, key)
}

// nodeCleanupOps returns the operations that delete the ID allocations and the external
// configuration of the named nodes. An allocation whose ID a running agent still holds
// (vppnode.HolderKey, under the agent's lease) is kept: the agent would write it again,
// and it is released by a later Resync of the nodes once the agent has stopped.
//
// With sweep set (a Resync of the node prefix, whose desired node names are known
// given), it also releases allocations leaked earlier: those of a node that has no Node
// object (known lists the names that have one) and whose ID no running agent holds.
func (w *Writer) nodeCleanupOps(ctx context.Context, names []string, sweep bool, known map[string]bool) ([]clientv3.Op, error) {
	allocs, err := w.list(ctx, vppnode.KeyPrefix())
	if err != nil {
		return nil, fmt.Errorf("node cleanup: %w", err)
	}
	held, err := w.heldNodeIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("node cleanup: %w", err)
	}
	gone := make(map[string]bool, len(names))
	for _, n := range names {
		gone[n] = true
	}
	var ops []clientv3.Op
	ids := make([]string, 0, len(allocs))
	for k := range allocs {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	for _, k := range ids {
		rec, ok := allocs[k].(*vppnode.VppNode)
		if !ok {
			continue
		}
		name := rec.GetName()
		leaked := sweep && !known[name]
		if !gone[name] && !leaked {
			continue
		}
		fields := logrus.Fields{"node": name, "key": ksrkey.KsrPrefix + k}
		if holder, ok := held[rec.GetId()]; ok {
			if gone[name] {
				w.log.WithFields(fields).WithField("holder", holder).Info("deleted node: its node ID is kept while its agent runs and holds it")
			}
			continue
		}
		ops = append(ops, clientv3.OpDelete(ksrkey.KsrPrefix+k))
		if gone[name] {
			w.log.WithFields(fields).Info("deleted node: releasing its node ID")
		} else {
			w.log.WithFields(fields).Info("releasing the node ID of a node that has no Node object and no running agent")
		}
	}
	for _, n := range names {
		if n == ksrkey.MicroserviceLabel {
			// Its "agent prefix" is contiv-ksr's own prefix: never wipe that.
			w.log.WithField("node", n).Warn("deleted node is named like contiv-ksr: its agent configuration is kept")
			continue
		}
		ops = append(ops, clientv3.OpDelete(ksrkey.AgentPrefix(n), clientv3.WithPrefix()))
		w.log.WithFields(logrus.Fields{"node": n, "prefix": ksrkey.AgentPrefix(n)}).Info("deleted node: removing its agent configuration")
	}
	return ops, nil
}

// heldNodeIDs returns the node IDs that running agents hold (vppnode.HolderKey): ID ->
// the holder's name.
func (w *Writer) heldNodeIDs(ctx context.Context) (map[uint32]string, error) {
	rctx, cancel := context.WithTimeout(ctx, w.opTimeout)
	defer cancel()
	prefix := ksrkey.KsrPrefix + vppnode.HolderKeyPrefix()
	resp, err := w.kv.Get(rctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := make(map[uint32]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, err := vppnode.ParseHolderKey(strings.TrimPrefix(string(kv.Key), ksrkey.KsrPrefix)); err == nil {
			out[id] = string(kv.Value)
		}
	}
	return out, nil
}

// commit runs ops in one transaction under the guard.
func (w *Writer) commit(ctx context.Context, what string, ops []clientv3.Op) error {
	if len(ops) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, w.opTimeout)
	defer cancel()
	resp, err := w.kv.Txn(rctx).If(w.guard...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s: %w", what, ErrGuardFailed)
	}
	return nil
}
