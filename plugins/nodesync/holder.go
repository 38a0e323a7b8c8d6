package nodesync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
	"github.com/contiv-vpp/contiv-vpp/pkg/health"
)

// DefaultLeaseTTL is the TTL of the etcd lease under which a running node holds its
// ID: a node that stops answering keeps it that long after its last keep-alive
// (its allocatedIDs record keeps the ID allocated beyond that, until contiv-ksr
// deletes it with the Node object).
const DefaultLeaseTTL = 30 * time.Second

// holderKey returns the full etcd key under which a running node holds id
// (vppnode.HolderKey).
func holderKey(id uint32) string {
	return ksrkey.KsrPrefix + vppnode.HolderKey(id)
}

// parseHolderKey returns the ID of a full holder key.
func parseHolderKey(key string) (uint32, bool) {
	rest, ok := strings.CutPrefix(key, ksrkey.KsrPrefix)
	if !ok {
		return 0, false
	}
	id, err := vppnode.ParseHolderKey(rest)
	return id, err == nil
}

// LeaseDB is what a DB also offers when it can grant etcd leases (dbwatcher does).
// Without it nodesync allocates IDs as before, without holding them: a record
// deleted while its node runs is then only re-created at the next resync.
type LeaseDB interface {
	// Lease returns the etcd lease API, or an error while the database is not
	// connected.
	Lease() (clientv3.Lease, error)
}

// ErrIDHeld is wrapped by the errors that find this node's ID held by another
// running node (its holder key, under that node's live lease).
var ErrIDHeld = errors.New("the node ID is held by another running node")

// leaseAPI returns the lease API of the database, nil when it grants no leases.
func (ns *NodeSync) leaseAPI() (clientv3.Lease, error) {
	ldb, ok := ns.DB.(LeaseDB)
	if !ok || ns.DB == nil {
		return nil, nil
	}
	l, err := ldb.Lease()
	if err != nil {
		return nil, fmt.Errorf("%w: lease for node %s: %w", ErrNoDatabase, ns.NodeName, err)
	}
	return l, nil
}

// currentLease returns this node's lease, granting one when it has none. 0 and no
// error: the database grants no leases.
func (ns *NodeSync) currentLease(ctx context.Context) (clientv3.LeaseID, error) {
	ns.leaseMu.Lock()
	defer ns.leaseMu.Unlock()
	if ns.lease != 0 {
		return ns.lease, nil
	}
	l, err := ns.leaseAPI()
	if err != nil || l == nil {
		return 0, err
	}
	ttl := int64(ns.leaseTTL().Seconds())
	resp, err := l.Grant(ctx, max(ttl, 1))
	if err != nil {
		return 0, fmt.Errorf("grant a lease of %ds for node %s: %w", ttl, ns.NodeName, err)
	}
	ns.lease = resp.ID
	ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "lease": fmt.Sprintf("%x", int64(resp.ID)), "ttl": resp.TTL}).
		Debug("lease granted to hold the node ID")
	return ns.lease, nil
}

// leaseTTL returns the effective lease TTL.
func (ns *NodeSync) leaseTTL() time.Duration {
	if ns.LeaseTTL > 0 {
		return ns.LeaseTTL
	}
	return DefaultLeaseTTL
}

// keepAlive renews the lease once; an expired lease (etcd unreachable for longer
// than its TTL, or revoked) is forgotten, with the holder key it carried, so that
// the next round grants a new one and holds the ID again.
func (ns *NodeSync) keepAlive(ctx context.Context) error {
	ns.leaseMu.Lock()
	lease := ns.lease
	ns.leaseMu.Unlock()
	if lease == 0 {
		return nil
	}
	l, err := ns.leaseAPI()
	if err != nil || l == nil {
		return err
	}
	_, err = l.KeepAliveOnce(ctx, lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		ns.leaseMu.Lock()
		if ns.lease == lease {
			ns.lease = 0
		}
		ns.leaseMu.Unlock()
		ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "lease": fmt.Sprintf("%x", int64(lease))}).
			Warn("the lease holding the node ID expired (etcd unreachable for longer than its TTL?): holding the ID again under a new one")
		return nil
	}
	if err != nil {
		return fmt.Errorf("renew lease %x of node %s: %w", int64(lease), ns.NodeName, err)
	}
	return nil
}

// revokeLease releases the holder key at Close: the allocatedIDs record still keeps
// the ID allocated while the node is stopped.
func (ns *NodeSync) revokeLease() {
	ns.leaseMu.Lock()
	lease := ns.lease
	ns.lease = 0
	ns.leaseMu.Unlock()
	if lease == 0 {
		return
	}
	l, err := ns.leaseAPI()
	if err != nil || l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := l.Revoke(ctx, lease); err != nil {
		ns.Log.WithError(err).WithField("node", ns.NodeName).Debug("lease not revoked: it expires after its TTL")
	}
}

// hold makes holderKey(id) this node's, under lease: created when missing, taken over
// from this node's previous run (same name, another lease), refused (ErrIDHeld) when
// another node holds it. The writes are conditioned on what was read.
func (ns *NodeSync) hold(ctx context.Context, kv clientv3.KV, id uint32, lease clientv3.LeaseID) error {
	key := holderKey(id)
	cur, cond, err := readForWrite(ctx, kv, key)
	if err != nil {
		return err
	}
	if cur == nil {
		// Unheld: but a record of another node means that node got the ID while this
		// one was away; holding it would lock that node out, so it is a conflict.
		if other, err := recordOwner(ctx, kv, id); err != nil || other != "" && other != ns.NodeName {
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: %s gives node ID %d to node %q", ErrIDHeld, etcdKey(id), id, other)
		}
	}
	if cur != nil {
		if holder := string(cur.Value); holder != ns.NodeName {
			return fmt.Errorf("%w: node ID %d is held by node %q (%s, lease %x)", ErrIDHeld, id, holder, key, cur.Lease)
		}
		if clientv3.LeaseID(cur.Lease) == lease {
			return nil
		}
	}
	txn, err := kv.Txn(ctx).If(cond).Then(clientv3.OpPut(key, ns.NodeName, clientv3.WithLease(lease))).Commit()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if !txn.Succeeded {
		return fmt.Errorf("write %s: changed meanwhile: %w", key, errConflict)
	}
	ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id, "key": key}).Debug("node ID held")
	return nil
}

// recordOwner returns the node name in allocatedIDs/<id> ("" when the record is
// missing, undecodable or without a name).
func recordOwner(ctx context.Context, kv clientv3.KV, id uint32) (string, error) {
	key := etcdKey(id)
	resp, err := kv.Get(ctx, key)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	rec, err := decodeVppNode(resp.Kvs[0].Value)
	if err != nil {
		return "", nil
	}
	return rec.GetName(), nil
}

// heldIDs returns the IDs held by running nodes (their holder keys): ID -> node name.
func (ns *NodeSync) heldIDs(ctx context.Context, kv clientv3.KV) (map[uint32]string, error) {
	prefix := ksrkey.KsrPrefix + vppnode.HolderKeyPrefix()
	resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := make(map[uint32]string, len(resp.Kvs))
	for _, item := range resp.Kvs {
		if id, ok := parseHolderKey(string(item.Key)); ok {
			out[id] = string(item.Value)
		}
	}
	return out, nil
}

// keepRecord makes sure allocatedIDs/<id> gives the ID to this node while it holds
// it: a deleted record (contiv-ksr deletes it with the Node object) is re-created
// with the node's published IPs, a corrupt one repaired, both only while this node's
// lease still holds the ID; another node's record is an ErrIDHeld conflict.
func (ns *NodeSync) keepRecord(ctx context.Context, kv clientv3.KV, id uint32, lease clientv3.LeaseID) error {
	key := etcdKey(id)
	item, cond, err := readForWrite(ctx, kv, key)
	if err != nil {
		return err
	}
	what := "deleted while the node runs (contiv-ksr deletes it with the Node object)"
	if item != nil {
		cur, decErr := decodeVppNode(item.Value)
		switch {
		case decErr == nil && cur.GetName() == ns.NodeName:
			return nil
		case decErr == nil && cur.GetName() != "":
			return fmt.Errorf("%w: %s gives node ID %d to node %q", ErrIDHeld, key, id, cur.GetName())
		}
		what = "corrupt"
	}
	rec := &vppnode.VppNode{Id: id, Name: ns.NodeName}
	ns.mu.RLock()
	own := ns.state.ownRecord()
	if own == nil && ns.lastOwn.GetId() == id {
		own = ns.lastOwn
	}
	if own != nil && ns.state.thisID == id && own.GetName() == ns.NodeName {
		rec.IpAddresses = append([]string(nil), own.GetIpAddresses()...)
		rec.IpAddress = own.GetIpAddress()
	}
	ns.mu.RUnlock()
	data, err := dbresources.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	hkey := holderKey(id)
	txn, err := kv.Txn(ctx).
		If(cond, clientv3.Compare(clientv3.LeaseValue(hkey), "=", lease), clientv3.Compare(clientv3.Value(hkey), "=", ns.NodeName)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if !txn.Succeeded {
		return fmt.Errorf("write %s: it or %s changed meanwhile: %w", key, hkey, errConflict)
	}
	ns.metrics.reclaims.Inc()
	ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id, "key": key, "addresses": rec.GetIpAddresses()}).
		Warnf("this node's record was %s: re-created, the running node keeps its ID", what)
	return nil
}

// holdOnce is one round of the holder: renew the lease (or get a new one), hold the
// ID, keep its record. A conflict is reported (log, health DEGRADED, metric); the
// node never takes the ID back from another running node, nor moves to another ID.
func (ns *NodeSync) holdOnce() {
	id := ns.GetNodeID()
	if id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ns.ctx, opTimeout)
	defer cancel()
	err := ns.keepAlive(ctx)
	var lease clientv3.LeaseID
	if err == nil {
		lease, err = ns.currentLease(ctx)
	}
	if err == nil && lease == 0 {
		return // no leases: nothing to hold
	}
	var kv clientv3.KV
	if err == nil {
		kv, err = ns.kv("cannot hold the node ID")
	}
	if err == nil {
		err = ns.hold(ctx, kv, id, lease)
	}
	if err == nil {
		err = ns.keepRecord(ctx, kv, id, lease)
	}
	switch {
	case err == nil:
		ns.setConflict(id, "")
	case errors.Is(err, ErrIDHeld):
		ns.setConflict(id, err.Error())
	case errors.Is(err, ErrNoDatabase), errors.Is(err, context.Canceled), errors.Is(err, errConflict):
		// etcd away (reported by its own health component), Close, or a race with this
		// node's own resync: the next round tries again.
		ns.Log.WithError(err).Debug("node ID not held this round")
	default:
		ns.Log.WithError(err).WithField("nodeID", id).Warn("node ID not held this round: trying again")
	}
}

// setConflict reports the conflict over id (reason "" when there is none).
func (ns *NodeSync) setConflict(id uint32, reason string) {
	ns.leaseMu.Lock()
	changed := ns.conflict != reason
	ns.conflict = reason
	ns.leaseMu.Unlock()
	if reason == "" {
		ns.metrics.conflict.Set(0)
		if changed {
			ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id}).Warn("node ID conflict resolved")
			ns.report(health.OK, "")
		}
		return
	}
	ns.metrics.conflict.Set(1)
	ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id}).Error("node ID conflict: " + reason +
		"; two nodes may now use the same pod subnet: delete the node that joined last from Kubernetes and restart its agent")
	ns.report(health.Degraded, fmt.Sprintf("node ID %d conflict: %s", id, reason))
}

// report passes the state of the node ID to Deps.Health, if set.
func (ns *NodeSync) report(state health.State, reason string) {
	if ns.Health != nil {
		ns.Health.Report(state, reason)
	}
}

// runHolder holds this node's ID for as long as the plugin runs: a round every third
// of the lease TTL, and at once when kicked (this node's record was seen deleted, or
// a resync set the ID). It stops on Close.
func (ns *NodeSync) runHolder() {
	defer ns.wg.Done()
	interval := ns.leaseTTL() / 3
	for {
		timer := ns.Clock.NewTimer(interval)
		select {
		case <-ns.ctx.Done():
			timer.Stop()
			return
		case <-ns.kick:
		case <-timer.C():
		}
		timer.Stop()
		ns.holdOnce()
	}
}

// kickHolder asks the holder for a round now.
func (ns *NodeSync) kickHolder() {
	if ns.kick == nil {
		return
	}
	select {
	case ns.kick <- struct{}{}:
	default:
	}
}
