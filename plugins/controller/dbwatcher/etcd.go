package dbwatcher

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

// snapshot is one consistent listing of both prefixes.
type snapshot struct {
	rev int64
	ksr []*mvccpb.KeyValue
	ext []*mvccpb.KeyValue
}

// list reads both prefixes at the same revision.
func (w *DBWatcher) list(ctx context.Context) (*snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, w.etcdCfg.operationTimeout())
	defer cancel()
	resp, err := w.client.Get(ctx, ksrkey.KsrPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s from etcd %v: %w", ksrkey.KsrPrefix, w.etcdCfg.Endpoints, err)
	}
	snap := &snapshot{rev: resp.Header.Revision, ksr: resp.Kvs}
	if w.ExternalConfigCodec == nil {
		return snap, nil
	}
	prefix := w.agentPrefix()
	resp, err = w.client.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(snap.rev))
	if err != nil {
		return nil, fmt.Errorf("list %s at revision %d from etcd %v: %w", prefix, snap.rev, w.etcdCfg.Endpoints, err)
	}
	snap.ext = resp.Kvs
	return snap, nil
}

// probe checks the etcd connection every probing interval and reports every change of
// state to the loop, the metrics and the status reporter.
func (w *DBWatcher) probe(ctx context.Context) {
	defer w.wg.Done()
	timer := w.Clock.NewTimer(0)
	defer timer.Stop()
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		pctx, cancel := context.WithTimeout(ctx, w.etcdCfg.operationTimeout())
		_, err := w.client.Get(pctx, probeKey)
		cancel()
		if ctx.Err() != nil {
			return
		}
		up := err == nil
		changed := up != w.connected.Load()
		if changed || first {
			// The first probe also reports the initial "not connected" state.
			w.setConnected(up, err)
		}
		first = false
		if changed {
			select {
			case w.connCh <- up:
			case <-ctx.Done():
				return
			}
		}
		timer.Reset(w.RemoteDBProbingInterval)
	}
}

// setConnected records the connection state and reports it.
func (w *DBWatcher) setConnected(up bool, err error) {
	w.connected.Store(up)
	reason := fmt.Sprintf("etcd %v reachable", w.etcdCfg.Endpoints)
	if up {
		w.metrics.connected.Set(1)
		w.Log.WithField("endpoints", w.etcdCfg.Endpoints).Info("etcd connected")
	} else {
		w.metrics.connected.Set(0)
		reason = fmt.Sprintf("etcd %v unreachable: %v", w.etcdCfg.Endpoints, err)
		w.Log.WithError(err).WithField("endpoints", w.etcdCfg.Endpoints).Warn("etcd not connected")
	}
	if w.StatusReporter != nil {
		w.StatusReporter(up, reason)
	}
}

// watch forwards the changes of both prefixes from revision rev on to the loop, tagged
// with gen; it waits while the change queue is full. It stops when ctx ends, and asks
// for a resync (then stops) when the watch fails, since changes would be lost from then
// on.
func (w *DBWatcher) watch(ctx context.Context, cancel context.CancelFunc, gen uint64, rev int64) {
	defer w.wg.Done()
	defer cancel()
	ctx = clientv3.WithRequireLeader(ctx)
	ksrCh := w.client.Watch(ctx, ksrkey.KsrPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
	var extCh clientv3.WatchChan
	if w.ExternalConfigCodec != nil {
		extCh = w.client.Watch(ctx, w.agentPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev))
	}
	for {
		var (
			resp     clientv3.WatchResponse
			ok       bool
			external bool
		)
		select {
		case <-ctx.Done():
			return
		case resp, ok = <-ksrCh:
		case resp, ok = <-extCh:
			external = true
		}
		if ctx.Err() != nil {
			return
		}
		if !ok {
			w.Log.Warn("etcd watch closed: requesting a resync")
			w.requestResync("watch closed")
			return
		}
		if err := resp.Err(); err != nil {
			w.Log.WithError(err).Warn("etcd watch failed: requesting a resync")
			w.requestResync("watch failed")
			return
		}
		for _, ev := range resp.Events {
			c := change{
				gen:      gen,
				external: external,
				key:      string(ev.Kv.Key),
				deleted:  ev.Type == mvccpb.DELETE,
				rev:      ev.Kv.ModRevision,
			}
			if !c.deleted {
				c.value = ev.Kv.Value
			}
			select {
			case w.changes <- c:
			case <-ctx.Done():
				return
			}
		}
	}
}
