package ksr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/protobuf/proto"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/endpointslice"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrsync"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/pod"
	"github.com/contiv-vpp/contiv-vpp/plugins/ksr/store"
)

// campaignLoop campaigns, leads while elected, and campaigns again, until Close.
func (p *Plugin) campaignLoop() {
	defer p.wg.Done()
	backoff := minBackoff
	for p.ctx.Err() == nil {
		led, err := p.term()
		if p.ctx.Err() != nil {
			return
		}
		if led {
			backoff = minBackoff
		}
		p.Log.WithError(err).Warn("leadership term ended; campaigning again")
		if !p.sleep(p.ctx, backoff) {
			return
		}
		backoff = nextBackoff(backoff)
	}
}

// term runs one campaign and, once elected, leads until the leadership or the plugin
// ends. led says whether it was elected.
func (p *Plugin) term() (led bool, err error) {
	sess, err := concurrency.NewSession(p.EtcdClient,
		concurrency.WithTTL(int(p.ElectionTTL/time.Second)), concurrency.WithContext(p.ctx))
	if err != nil {
		return false, fmt.Errorf("election session: %w", err)
	}
	defer sess.Close()
	// The term ends when the plugin closes or the lease is lost.
	ctx, cancel := context.WithCancel(p.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-sess.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	el := concurrency.NewElection(sess, ElectionPrefix)
	if err := el.Campaign(ctx, p.Identity); err != nil {
		return false, fmt.Errorf("campaign under %s: %w", ElectionPrefix, err)
	}
	log := p.Log.WithFields(logrus.Fields{"identity": p.Identity, "key": el.Key()})
	log.Info("elected leader: starting reflectors")
	leader, notLeader := true, false
	p.setState(nil, &leader, &notLeader)
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.watchOwnKey(ctx, cancel, el)
	}()
	guard := clientv3.Compare(clientv3.CreateRevision(el.Key()), "=", el.Rev())
	writer := store.New(store.Options{
		KV: p.EtcdClient, Guard: []clientv3.Cmp{guard},
		OpTimeout: time.Duration(p.cfg.OperationTimeout), Log: p.Log,
	})
	err = p.lead(ctx, &wg, writer, el.Rev())
	if err == nil && p.ctx.Err() == nil {
		err = errLostLeadership
	}
	cancel() // before resigning, so that watchOwnKey does not report the resignation
	p.setState(nil, &notLeader, &notLeader)
	// Resign with a context of its own (the term's is done): a standby takes over at
	// once instead of waiting for the lease to expire.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Duration(p.cfg.OperationTimeout))
	if rerr := el.Resign(rctx); rerr != nil {
		log.WithError(rerr).Debug("resign")
	}
	rcancel()
	log.Info("leadership ended: reflectors stopped")
	return true, err
}

// watchOwnKey ends the term (cancel) when the election key disappears, e.g. deleted by
// an operator: a standby is then elected, and this replica must stop at once rather
// than at its next (refused) write.
func (p *Plugin) watchOwnKey(ctx context.Context, cancel context.CancelFunc, el *concurrency.Election) {
	wch := p.EtcdClient.Watch(ctx, el.Key(), clientv3.WithRev(el.Rev()+1))
	for resp := range wch {
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				p.Log.WithField("key", el.Key()).Warn("election key deleted: leadership lost")
				cancel()
				return
			}
		}
	}
}

// lead runs the informers and the write loop of one term (term: the revision of the
// election key); the informers have stopped when it returns. Goroutines it starts are
// counted in wg.
func (p *Plugin) lead(ctx context.Context, wg *sync.WaitGroup, w *store.Writer, term int64) error {
	cidrs, ok := p.discoverServiceCIDRs(ctx)
	if !ok {
		return nil
	}
	set, err := newInformerSet(p.KubeClient, termOptions{
		convService:        p.convertService,
		convPod:            p.convertPod,
		legacyEndpoints:    p.LegacyEndpoints,
		serviceCIDRs:       cidrs,
		cidrsLimitServices: len(p.ServiceLimits.ServiceCIDRs) > 0,
		skipped:            func(n int) { p.metrics.skipped.WithLabelValues(endpointslice.Keyword).Set(float64(n)) },
	})
	if err != nil {
		return err
	}
	defer p.metrics.skipped.WithLabelValues(endpointslice.Keyword).Set(0) // counted by the leader only
	ctx, cancel := context.WithCancel(ctx)
	defer set.shutdown() // runs after cancel: waits for the informers to stop
	defer cancel()
	// Taken before the informers list: every list (and so every resync of this term)
	// reflects the API server as of this time or later.
	mark := termMark{listedAfter: p.Clock.Now(), term: term}
	if !set.start(ctx) {
		return nil
	}
	p.Log.Info("informer caches synced")
	if p.cfg.AutoCompact > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.autoCompact(ctx, time.Duration(p.cfg.AutoCompact))
		}()
	}
	return p.writeLoop(ctx, set, w, mark)
}

// discoverServiceCIDRs asks the API server whether it serves ServiceCIDRs until it
// answers (backoff 100 ms → 1 s; the term goes on meanwhile, not ready, as when the
// informers wait for their caches); ok is false when ctx ended first.
func (p *Plugin) discoverServiceCIDRs(ctx context.Context) (served, ok bool) {
	backoff := minBackoff
	for {
		served, err := p.serviceCIDRsServed()
		if err == nil {
			return served, true
		}
		p.Log.WithError(err).WithField("retry", backoff).Warn("API discovery failed")
		if !p.sleep(ctx, backoff) {
			return false, false
		}
		backoff = nextBackoff(backoff)
	}
}

// serviceCIDRsServed says whether the API server serves networking.k8s.io/v1
// ServiceCIDRs (Kubernetes 1.33 and later): an informer of a kind the server lacks
// would never sync, so older servers get no ServiceCIDR reflector.
func (p *Plugin) serviceCIDRsServed() (bool, error) {
	gv := networkingv1.SchemeGroupVersion.String()
	list, err := p.KubeClient.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discover the resources of %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "servicecidrs" {
			return true, nil
		}
	}
	p.Log.WithField("groupVersion", gv).Info("the API server serves no ServiceCIDRs: not reflected")
	return false, nil
}

// writeLoop writes queued items, and resyncs everything after the start of the term,
// after etcd came back and after a failed write, retrying with backoff.
func (p *Plugin) writeLoop(ctx context.Context, set *informerSet, w *store.Writer, mark termMark) error {
	needResync := true
	backoff := minBackoff
	for {
		if needResync {
			set.queue.drain() // the resync covers them
			err := p.resyncAll(ctx, set, w, mark)
			switch {
			case errors.Is(err, store.ErrGuardFailed):
				return errLostLeadership
			case err != nil:
				if ctx.Err() != nil {
					return nil
				}
				p.Log.WithError(err).WithField("retry", backoff).Warn("resync failed")
				if !p.sleep(ctx, backoff) {
					return nil
				}
				backoff = nextBackoff(backoff)
				continue
			}
			needResync, backoff = false, minBackoff
			synced := true
			p.setState(nil, nil, &synced)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.reconnected:
			needResync = true
		case <-set.queue.signal:
			for _, it := range set.queue.drain() {
				err := p.writeItem(ctx, set, w, it)
				if errors.Is(err, store.ErrGuardFailed) {
					return errLostLeadership
				}
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					p.Log.WithError(err).Warn("write failed: resync")
					notSynced := false
					p.setState(nil, nil, &notSynced)
					needResync = true
					break // the resync covers the rest
				}
			}
		}
	}
}

// writeItem writes the current value of one object, or deletes it when the caches no
// longer hold it. Objects that cannot be converted are logged, counted and left alone.
func (p *Plugin) writeItem(ctx context.Context, set *informerSet, w *store.Writer, it item) error {
	r := set.byName[it.reflector]
	key := r.key(it.id)
	v, err := r.value(it.id)
	if err != nil {
		p.metrics.errors.WithLabelValues(r.name, errArg).Inc()
		p.Log.WithError(err).WithField("key", key).Warn("object not reflected")
		return nil
	}
	var res store.Result
	if v == nil {
		res, err = w.Delete(ctx, key)
	} else {
		res, err = w.Put(ctx, key, v)
	}
	if err != nil {
		p.metrics.failed(r.name, res)
		return fmt.Errorf("%s %s: %w", r.name, it.id, err)
	}
	p.metrics.written(r.name, res)
	if res != store.Unchanged {
		p.Log.WithFields(logrus.Fields{"key": key, "change": res}).Debug("reflected")
	}
	return nil
}

// termMark is what the sync markers of one term say.
type termMark struct {
	// listedAfter is the time just before the informers of the term listed.
	listedAfter time.Time
	// term is the revision of the election key.
	term int64
}

// resyncAll makes etcd equal to the caches, reflector by reflector, then publishes the
// sync marker of the pods (see publishPodMarker).
func (p *Plugin) resyncAll(ctx context.Context, set *informerSet, w *store.Writer, mark termMark) error {
	complete := map[string]bool{}
	for _, r := range set.reflectors {
		complete[r.name] = true
		desired := map[string]proto.Message{}
		for _, id := range r.ids() {
			key := r.key(id)
			v, err := r.value(id)
			if err != nil {
				p.metrics.errors.WithLabelValues(r.name, errArg).Inc()
				p.Log.WithError(err).WithField("key", key).Warn("object not reflected")
				desired[key] = nil // keep what etcd holds
				complete[r.name] = false
				continue
			}
			if v != nil {
				desired[key] = v
			}
		}
		st, err := w.Resync(ctx, r.prefix, desired)
		if err != nil {
			p.metrics.errors.WithLabelValues(r.name, errResync).Inc()
			return fmt.Errorf("resync %s: %w", r.name, err)
		}
		p.metrics.resynced(r.name, st)
		if st != (store.Stats{}) {
			p.Log.WithFields(logrus.Fields{"reflector": r.name, "added": st.Added, "updated": st.Updated,
				"deleted": st.Deleted}).Info("resync changed etcd")
		}
	}
	p.Log.Info("resync done: etcd matches the Kubernetes state")
	return p.publishPodMarker(ctx, w, mark, complete[pod.Keyword])
}

// publishPodMarker writes ksrsync/pod after a resync: the pods in etcd are complete as
// of mark.listedAfter, so agents may take a pod absent from etcd that existed before
// that time as deleted (see api/k8s/ksrsync). When a pod could not be converted (it
// exists but is absent from etcd, or stale there) the copy is not complete and the
// marker is left as it is.
func (p *Plugin) publishPodMarker(ctx context.Context, w *store.Writer, mark termMark, complete bool) error {
	if !complete {
		p.Log.Warn("pods not all reflected: sync marker not updated (agents keep pods that Kubernetes' copy lacks)")
		return nil
	}
	m := &ksrsync.SyncMarker{Resource: pod.Keyword, ListedAfterUnixNano: mark.listedAfter.UnixNano(),
		Leader: p.Identity, Term: mark.term}
	key := ksrsync.Key(pod.Keyword)
	if _, err := w.Put(ctx, key, m); err != nil {
		return fmt.Errorf("publish sync marker %s: %w", key, err)
	}
	p.Log.WithFields(logrus.Fields{"key": key, "listedAfter": mark.listedAfter.UTC().Format(time.RFC3339Nano),
		"term": mark.term}).Info("sync marker published")
	return nil
}

// autoCompact compacts the etcd history every period, up to the revision seen one
// period before, so that watchers (the agents) lagging less than a period lose nothing.
func (p *Plugin) autoCompact(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	var prev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Duration(p.cfg.OperationTimeout))
		resp, err := p.EtcdClient.Get(rctx, probeKey)
		if err == nil && prev > 0 {
			_, err = p.EtcdClient.Compact(rctx, prev)
		}
		cancel()
		if err != nil {
			p.Log.WithError(err).Debug("auto-compact")
			continue
		}
		prev = resp.Header.Revision
	}
}
