// Package dbwatcher feeds the controller's event loop from the databases: the Kubernetes
// state that contiv-ksr reflects into etcd, the external configuration written for this
// node, and a local bolt mirror of the Kubernetes state that lets the agent start while
// etcd is out of reach.
//
//	etcd /vnf-agent/contiv-ksr/...  ──┐ list at rev R,        ┌─> DBResync{Local:false}
//	etcd /vnf-agent/<node>/...      ──┤ then watch from R+1 ──┼─> KubeStateChange
//	                                  │                       └─> ExternalConfigChange{Source:"db"}
//	prober (Get every probing interval) ── connection state ──> loop goroutine
//	bolt  <── mirror of the Kubernetes part ──┘      └── DBResync{Local:true} (start without etcd)
//
// One loop goroutine owns all state and does, in order of arrival:
//
//   - Connection changes (from the prober, which reads /probe-etcd-connection every
//     RemoteDBProbingInterval): on loss the watch stops; on (re)connection the watch
//     stops, changes are dropped and a remote resync is requested.
//   - Remote resync: both prefixes are listed at one revision R; every key under the KSR
//     prefix that belongs to a dbresources resource is decoded (protobuf JSON) into
//     api.KubeStateData (keys without the KSR prefix), the external keys are decoded by
//     Deps.ExternalConfigCodec (keys without /vnf-agent/<node>/); the decoded Kubernetes
//     values are queued to the bolt mirror (stale keys deleted), a DBResync is pushed, each key's
//     revision is remembered and a new watch starts at R+1, so nothing falls between the
//     listing and the watch. A failure of etcd retries after the probing interval.
//     Requests arriving together are served by one resync.
//   - Changes: dropped when they come from a replaced watch or before the first resync
//     after a (re)connection (that resync covers them), and when their revision was
//     already processed; otherwise queued to the bolt mirror and recorded as pending. A
//     value rewritten unchanged is not
//     recorded. A failed watch requests a remote resync; a full change queue (1000) only
//     makes the watch wait.
//   - The bolt mirror (mirror.go) is written by a goroutine of its own, 1 s after the
//     first update of each round (2 s when the round holds a resync's snapshot, which the
//     event loop processes meanwhile), in one bolt transaction: a snapshot replaces what
//     was queued before it, changes are coalesced per key, Close writes what is left.
//     The mirror may lag the event loop by that much; it only serves a start without
//     etcd. After a snapshot is written the writer runs two garbage collections and
//     returns the freed memory to the OS: bolt keeps every page the transaction wrote
//     in its page pool, an image of the whole mirror (releaseMemory).
//
// Pending events (pending.go) are coalesced per key, as kube-proxy's change trackers do:
// the latest value wins and the value the event loop saw last is kept, so the event is
// a KubeStateChange from PrevValue (what the loop saw) to NewValue (the latest), or an
// ExternalConfigChange of that key. A key changed 100 times while the loop was busy is
// one event; deleted and re-created it is one update (nothing when re-created equal);
// created and deleted before the loop saw it, nothing. Keys come out in the order in
// which they first changed; a resync discards the pending changes and comes first. The
// pending work is therefore bounded by the number of keys, and a burst never turns into a
// full resync. The controller drains the events itself (the watcher registers as an
// api.EventSource when the event loop is an api.EventSourceRegistrar); otherwise a pump
// goroutine pushes them, and an event the loop refuses requests a resync after the
// probing interval.
//   - Local resync: DelayLocalResync after start, unless a resync was delivered or etcd
//     is connected, the bolt mirror is pushed as DBResync{Local:true} (no external
//     configuration); an empty mirror is not pushed. With etcd disabled the mirror is
//     pushed at once, even empty, and RequestResync pushes it again.
//
// Bad data never stops the watcher: a value that does not decode is logged, counted
// (contiv_dbwatcher_bad_values_total{resource}) and skipped, and the event loop keeps the
// last good value; keys of unknown resources are ignored with a debug log. A Kubernetes
// value whose identity (name and namespace, node name, node ID) is not the one of its key
// (dbresources.CheckKey) is treated the same way, logged with the key and the identity and
// counted in contiv_dbwatcher_identity_mismatches_total{resource}: the controller finds
// objects by key in changes and by name in resyncs, and the two must agree.
//
// Configuration: etcd.conf (EtcdConfig, Ligato keys) and bolt.conf (BoltConfig), loaded
// and validated by Init, which also opens the bolt file.
//
// The bolt file is a cache on a hostPath, so a damaged one must not stop the node
// (boltcheck.go, localdb.go): bolt's Open and a read of every key and value run with
// faults on the mapped file turned into panics and panics recovered (a file cut short
// makes bolt fault on the missing pages, damaged pages trip its assertions), and a
// file shorter than the pages its metadata counts is named as such. A damaged file is renamed
// <db-path>.corrupt-<UTC time> (kept for a post-mortem, the newest three only), an
// empty one is created, and
// the next resync from etcd rebuilds it: logged at error level, counted in
// contiv_dbwatcher_mirror_resets_total, and the "bolt" health component (Deps.
// MirrorHealth) is DEGRADED until that snapshot is written. A damage bolt reports only
// from a goroutine of its own while it rebuilds its free list (a page referenced twice,
// with sane page headers) is not caught. A lock held by another process is waited for
// lock-timeout (0 means DefaultBoltLockTimeout, 10 s; upstream waited forever), then
// Init fails naming the file and, from /proc/locks, the process holding it.
//
// Metrics: contiv_dbwatcher_resyncs_total{source,outcome}, _changes_total{resource},
// _bad_values_total{resource}, _identity_mismatches_total{resource},
// _coalesced_changes_total, _mirror_resets_total and the gauges contiv_dbwatcher_etcd_connected and
// contiv_dbwatcher_pending_changes.
//
// KV hands the watcher's etcd connection to plugins that write to etcd (nodesync), and
// fails with ErrNotConnected while etcd is disabled or unreachable.
//
// The package does not write to etcd (contiv-ksr and nodesync do), does not interpret
// the events (the controller and its handlers do) and does not provide the contiv-init
// helpers of upstream (LoadKubeStateForResync, ResyncDatabase).
package dbwatcher
