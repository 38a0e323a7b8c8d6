package nodesync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

const (
	// MaxAllocationAttempts bounds the read-and-claim rounds of a node ID allocation
	// (and of a PublishNodeIPs write); each round that loses a race or fails starts over.
	MaxAllocationAttempts = 10
	// opTimeout bounds every etcd request.
	opTimeout = 3 * time.Second
	// retryDelay is the pause after a failed etcd request (a lost race retries at once).
	retryDelay = 100 * time.Millisecond
)

// ErrNoDatabase is wrapped by the errors caused by a missing or disconnected database.
var ErrNoDatabase = errors.New("database is not connected")

// errConflict marks a write that lost a race with another writer.
var errConflict = errors.New("conflict")

// etcdKey returns the full etcd key of allocatedIDs/<id>.
func etcdKey(id uint32) string { return ksrkey.KsrPrefix + vppnode.Key(id) }

// noDatabaseError is an ErrNoDatabase whose message comes from the database layer.
type noDatabaseError struct {
	msg string
	err error
}

func (e *noDatabaseError) Error() string   { return e.msg }
func (e *noDatabaseError) Unwrap() []error { return []error{ErrNoDatabase, e.err} }

// kv returns the etcd connection or an error wrapping ErrNoDatabase; what names the
// operation that needs it.
func (ns *NodeSync) kv(what string) (clientv3.KV, error) {
	if ns.DB == nil {
		return nil, fmt.Errorf("%w: %s for %s (no database configured)", ErrNoDatabase, what, ns.NodeName)
	}
	kv, err := ns.DB.KV()
	if err != nil {
		if strings.Contains(err.Error(), ErrNoDatabase.Error()) {
			// The database layer already says so: do not repeat it.
			return nil, &noDatabaseError{msg: fmt.Sprintf("%s for %s: %v", what, ns.NodeName, err), err: err}
		}
		return nil, fmt.Errorf("%w: %s for %s: %w", ErrNoDatabase, what, ns.NodeName, err)
	}
	return kv, nil
}

// allocate claims a node ID for this node in etcd and returns the record that holds it
// and the number of attempts made: the smallest free ID. A record of this node found in
// etcd is adopted instead. (A node that knows its ID confirms it with reclaim.)
func (ns *NodeSync) allocate() (*vppnode.VppNode, int, error) {
	kv, err := ns.kv("cannot allocate a node ID")
	if err != nil {
		return nil, 0, err
	}
	var lastErr error
	for attempt := 1; attempt <= MaxAllocationAttempts; attempt++ {
		if attempt > 1 && !errors.Is(lastErr, errConflict) && !ns.pause() {
			return nil, attempt - 1, fmt.Errorf("node ID allocation for node %s canceled after %d attempts: %w",
				ns.NodeName, attempt-1, lastErr)
		}
		rec, err := ns.tryAllocate(kv)
		if err == nil {
			return rec, attempt, nil
		}
		lastErr = err
		ns.Log.WithError(err).WithFields(logrus.Fields{"node": ns.NodeName, "attempt": attempt}).Debug("node ID allocation attempt failed")
	}
	return nil, MaxAllocationAttempts, fmt.Errorf("node ID allocation for node %s failed after %d attempts: %w",
		ns.NodeName, MaxAllocationAttempts, lastErr)
}

// tryAllocate makes one allocation round: read the IDs in use (allocated, or held by
// a running node), claim one with a put-if-absent transaction that also holds it under
// this node's lease. A lost race gives an error wrapping errConflict.
func (ns *NodeSync) tryAllocate(kv clientv3.KV) (*vppnode.VppNode, error) {
	ctx, cancel := context.WithTimeout(ns.ctx, opTimeout)
	defer cancel()
	lease, err := ns.currentLease(ctx)
	if err != nil {
		return nil, err
	}
	prefix := ksrkey.KsrPrefix + vppnode.KeyPrefix()
	resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	held, err := ns.heldIDs(ctx, kv)
	if err != nil {
		return nil, err
	}
	taken := make(map[uint32]bool, len(resp.Kvs)+len(held))
	var own *vppnode.VppNode
	for _, item := range resp.Kvs {
		rel := string(item.Key[len(ksrkey.KsrPrefix):])
		id, err := vppnode.ParseVppNodeFromKey(rel)
		if err != nil {
			continue // not an allocation: it takes no ID
		}
		taken[id] = true
		rec, err := decodeVppNode(item.Value)
		if err != nil {
			ns.Log.WithError(err).WithField("key", string(item.Key)).Warn("undecodable VppNode: its ID counts as taken")
			continue
		}
		if rec.GetName() == ns.NodeName && (own == nil || id < own.GetId()) {
			rec.Id = id
			own = rec
		}
	}
	if own != nil {
		ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": own.GetId()}).Info("node ID found in etcd (newer than the resynced state)")
		return own, nil
	}
	// An ID this node's previous run still holds (its record deleted meanwhile) is its
	// own; the IDs other running nodes hold are taken even without a record.
	var mine uint32
	for id, name := range held {
		taken[id] = true
		if name == ns.NodeName && (mine == 0 || id < mine) && !recordExists(resp.Kvs, id) {
			mine = id
		}
	}
	id := mine
	if id == 0 {
		id = smallestFree(taken)
	}
	rec := &vppnode.VppNode{Id: id, Name: ns.NodeName}
	data, err := dbresources.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode VppNode of node %s: %w", ns.NodeName, err)
	}
	key, hkey := etcdKey(id), holderKey(id)
	conds := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
	ops := []clientv3.Op{clientv3.OpPut(key, string(data))}
	if lease != 0 {
		if mine != 0 {
			conds = append(conds, clientv3.Compare(clientv3.Value(hkey), "=", ns.NodeName))
		} else {
			conds = append(conds, clientv3.Compare(clientv3.CreateRevision(hkey), "=", 0))
		}
		ops = append(ops, clientv3.OpPut(hkey, ns.NodeName, clientv3.WithLease(lease)))
	} else if mine == 0 {
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(hkey), "=", 0))
	}
	txn, err := kv.Txn(ctx).If(conds...).Then(ops...).Commit()
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", key, err)
	}
	if !txn.Succeeded {
		return nil, fmt.Errorf("claim %s: ID %d taken by another node meanwhile: %w", key, id, errConflict)
	}
	return rec, nil
}

// recordExists reports whether kvs hold allocatedIDs/<id>.
func recordExists(kvs []*mvccpb.KeyValue, id uint32) bool {
	key := etcdKey(id)
	for _, item := range kvs {
		if string(item.Key) == key {
			return true
		}
	}
	return false
}

// smallestFree returns the smallest positive ID not taken.
func smallestFree(taken map[uint32]bool) uint32 {
	id := uint32(1)
	for taken[id] {
		id++
	}
	return id
}

// decodeVppNode decodes a VppNode as stored in etcd.
func decodeVppNode(data []byte) (*vppnode.VppNode, error) {
	res, _ := dbresources.GetResourceByKey(vppnode.Key(1))
	v, err := res.Unmarshal(data)
	if err != nil {
		return nil, err
	}
	return v.(*vppnode.VppNode), nil
}

// pause waits retryDelay; false when Close came first.
func (ns *NodeSync) pause() bool {
	t := time.NewTimer(retryDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ns.ctx.Done():
		return false
	}
}

// PublishNodeIPs makes addresses this node's VPP addresses of the given version in its
// VppNode in etcd, keeping those of the other version; see API. The record is written
// only when the list changes, with a transaction conditioned on the revision read, and
// never over a record of another node.
func (ns *NodeSync) PublishNodeIPs(addresses []*net.IPNet, version IPVersion) error {
	if version != IPv4 && version != IPv6 {
		return fmt.Errorf("nodesync: publish IPs of node %s: unknown IP version %d", ns.NodeName, int(version))
	}
	fresh := make([]string, 0, len(addresses))
	for _, a := range addresses {
		if a == nil || !version.matches(a.IP) {
			return fmt.Errorf("nodesync: publish %s addresses of node %s: %v is not an %s address", version, ns.NodeName, a, version)
		}
		fresh = append(fresh, (&net.IPNet{IP: normalizeIP(a.IP), Mask: a.Mask}).String())
	}

	ns.publishMu.Lock()
	defer ns.publishMu.Unlock()
	ns.mu.RLock()
	var (
		id      uint32
		current []string
	)
	if ns.state != nil {
		id = ns.state.thisID
		if rec := ns.state.ownRecord(); rec != nil {
			current = publishedIPs(ns.state, rec)
		}
	}
	ns.mu.RUnlock()
	if id == 0 {
		return fmt.Errorf("nodesync: publish IPs of node %s: the node has no ID yet", ns.NodeName)
	}
	want := mergeIPs(current, fresh, version)
	if current != nil && slices.Equal(current, want) {
		return nil
	}
	kv, err := ns.kv("cannot publish the node IPs")
	if err != nil {
		return fmt.Errorf("nodesync: %w", err)
	}
	rec := &vppnode.VppNode{Id: id, Name: ns.NodeName, IpAddresses: want}
	var lastErr error
	for attempt := 1; attempt <= MaxAllocationAttempts; attempt++ {
		if lastErr = ns.writeOwnRecord(kv, rec); lastErr == nil {
			break
		}
		if !errors.Is(lastErr, errConflict) {
			break // an etcd failure or another node's record: the caller retries later
		}
	}
	if lastErr != nil {
		return fmt.Errorf("nodesync: publish IPs %v of node %s: %w", want, ns.NodeName, lastErr)
	}
	ns.mu.Lock()
	if ns.state.thisID == id {
		ns.state.applyVppNode(id, rec)
	}
	ns.mu.Unlock()
	ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id, "addresses": want}).Info("node IPs published")
	return nil
}

// writeOwnRecord writes this node's VppNode over the version read, or creates it when
// it is missing; errConflict when the record changed in between.
func (ns *NodeSync) writeOwnRecord(kv clientv3.KV, rec *vppnode.VppNode) error {
	ctx, cancel := context.WithTimeout(ns.ctx, opTimeout)
	defer cancel()
	key := etcdKey(rec.GetId())
	item, cond, err := readForWrite(ctx, kv, key)
	if err != nil {
		return err
	}
	if item != nil {
		cur, err := decodeVppNode(item.Value)
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		if cur.GetName() != ns.NodeName {
			return fmt.Errorf("%s belongs to node %q, not to this node", key, cur.GetName())
		}
	}
	data, err := dbresources.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	txn, err := kv.Txn(ctx).If(cond).Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if !txn.Succeeded {
		return fmt.Errorf("write %s: changed meanwhile: %w", key, errConflict)
	}
	return nil
}

// readForWrite reads key and returns its value (nil when absent) and the condition a
// write of it must carry so as not to overwrite a change made since: absent still, or
// at the revision read.
func readForWrite(ctx context.Context, kv clientv3.KV, key string) (*mvccpb.KeyValue, clientv3.Cmp, error) {
	resp, err := kv.Get(ctx, key)
	if err != nil {
		return nil, clientv3.Cmp{}, fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, clientv3.Compare(clientv3.CreateRevision(key), "=", 0), nil
	}
	return resp.Kvs[0], clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision), nil
}

// publishedIPs returns the addresses of this node's record, in the normalised CIDR form
// PublishNodeIPs writes.
func publishedIPs(c *cluster, rec *vppnode.VppNode) []string {
	nets := c.vppIPs(rec)
	out := make([]string, len(nets))
	for i, n := range nets {
		out[i] = n.String()
	}
	return out
}

// mergeIPs replaces the addresses of version in current by fresh: IPv4 addresses come
// first, then IPv6, each family in the order given.
func mergeIPs(current, fresh []string, version IPVersion) []string {
	var v4, v6 []string
	for _, a := range current {
		n, ok := parseIPWithPrefix(a)
		if !ok {
			continue
		}
		if IPv4.matches(n.IP) {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	if version == IPv4 {
		v4 = fresh
	} else {
		v6 = fresh
	}
	return append(append([]string{}, v4...), v6...)
}
