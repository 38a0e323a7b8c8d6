package dbwatcher

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ksrBucket holds the mirrored Kubernetes state: key relative to the KSR prefix ->
// value as stored in etcd.
var ksrBucket = []byte("contiv-ksr")

// localDB is the bolt mirror of the Kubernetes part of etcd, read when the agent starts
// without etcd. Only the watcher's loop goroutine writes it.
type localDB struct {
	path string
	db   *bolt.DB
}

// initialMmapSize is the address space bolt maps at open: room for the mirror of a
// cluster of about 100k objects before the first remap.
const initialMmapSize = 256 << 20

// openLocalDB opens (creating it and its directory if needed) the bolt file. A damaged
// file gives an error wrapping errCorrupt (never a panic), a lock held by another
// process for longer than lock-timeout one wrapping errLocked, naming the holder when
// /proc/locks tells it.
func openLocalDB(cfg BoltConfig) (*localDB, error) {
	if err := os.MkdirAll(filepath.Dir(cfg.DBPath), 0o755); err != nil {
		return nil, fmt.Errorf("bolt DB %s: create directory: %w", cfg.DBPath, err)
	}
	// The initial mapping is reserved address space, not memory: without it bolt remaps
	// (and copies every page it holds) each time the file outgrows the mapping while
	// the first resync of a large cluster is mirrored. The free-page list is not written
	// at each commit (bolt rebuilds it when it opens the file, as etcd has it).
	db, err := openBoltGuarded(cfg.DBPath, os.FileMode(cfg.FileMode), &bolt.Options{Timeout: cfg.lockTimeout(),
		InitialMmapSize: initialMmapSize, NoFreelistSync: true})
	if errors.Is(err, errLocked) {
		holder := lockHolder(cfg.DBPath)
		if holder == "" {
			holder = "a process this agent cannot see (another PID namespace?)"
		}
		return nil, fmt.Errorf("bolt DB %s: %w, held by %s for more than lock-timeout %v: "+
			"stop that process (another contiv-agent on this node?) or point db-path elsewhere",
			cfg.DBPath, errLocked, holder, cfg.lockTimeout())
	}
	if errors.Is(err, errCorrupt) {
		// Read only now: before, another process could be writing the file under its
		// lock; now bolt failed on it (and, after a panic, still holds the lock).
		if short := checkBoltMeta(cfg.DBPath); short != nil {
			err = fmt.Errorf("%w (%w)", short, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bolt DB %s: open: %w", cfg.DBPath, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(ksrBucket)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt DB %s: create bucket %s: %w", cfg.DBPath, ksrBucket, err)
	}
	return &localDB{path: cfg.DBPath, db: db}, nil
}

// corruptSuffix starts the name a damaged bolt file is renamed to, followed by the
// time (UTC) it was set aside: bolt.db.corrupt-20260102T150405Z.
const corruptSuffix = ".corrupt-"

// openMirror opens the bolt mirror; a damaged file is renamed aside (to
// <db-path>.corrupt-<time>, kept for a post-mortem) and a new, empty mirror created
// in its place: it is a cache, rebuilt from etcd by the next resync. aside is the
// name the damaged file got ("" when it was usable), cause what was wrong with it.
func openMirror(cfg BoltConfig, now time.Time) (l *localDB, aside string, cause error, err error) {
	l, err = openLocalDB(cfg)
	if !errors.Is(err, errCorrupt) {
		return l, "", nil, err
	}
	cause = err
	aside = cfg.DBPath + corruptSuffix + now.UTC().Format("20060102T150405.000Z")
	if err := os.Rename(cfg.DBPath, aside); err != nil {
		return nil, "", cause, fmt.Errorf("%w; setting it aside as %s failed: %w (remove the file to start with an empty mirror)", cause, aside, err)
	}
	pruneSetAside(cfg.DBPath)
	l, err = openLocalDB(cfg)
	if err != nil {
		return nil, aside, cause, fmt.Errorf("%w; set aside as %s, but a new file cannot be created: %w", cause, aside, err)
	}
	return l, aside, cause, nil
}

// keepSetAside is how many damaged files set aside are kept: a disk that keeps
// damaging the mirror (full, failing) must not fill up with copies of it.
const keepSetAside = 3

// pruneSetAside removes the oldest damaged files set aside beyond keepSetAside (their
// names sort by the time they were set aside). A failure only leaves them.
func pruneSetAside(path string) {
	old, err := filepath.Glob(path + corruptSuffix + "*")
	if err != nil || len(old) <= keepSetAside {
		return
	}
	slices.Sort(old)
	for _, f := range old[:len(old)-keepSetAside] {
		_ = os.Remove(f)
	}
}

// replaceAll makes the mirror hold exactly kvs, in one transaction.
func (l *localDB) replaceAll(kvs map[string][]byte) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(ksrBucket)
		var stale [][]byte
		err := b.ForEach(func(k, _ []byte) error {
			if _, keep := kvs[string(k)]; !keep {
				stale = append(stale, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		}
		// In key order: bolt inserts sorted keys into its pages without the splits and
		// moves random order costs (a third of the CPU of mirroring 25k objects).
		// Pages filled to 90% (bolt splits at 50% by default, made for random
		// inserts): a third fewer pages to write for a sorted snapshot.
		b.FillPercent = 0.9
		for _, k := range sortedKeys(kvs) {
			v := kvs[k]
			if old := b.Get([]byte(k)); old != nil && bytes.Equal(old, v) {
				continue
			}
			if err := b.Put([]byte(k), v); err != nil {
				return fmt.Errorf("put %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bolt DB %s: mirror snapshot: %w", l.path, err)
	}
	return nil
}

// apply stores (value != nil) or deletes (nil) every key of kvs in one transaction.
func (l *localDB) apply(kvs map[string][]byte) error {
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(ksrBucket)
		for _, k := range sortedKeys(kvs) {
			v := kvs[k]
			var err error
			if v == nil {
				err = b.Delete([]byte(k))
			} else {
				err = b.Put([]byte(k), v)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bolt DB %s: apply %d changes: %w", l.path, len(kvs), err)
	}
	return nil
}

// loadAll returns a copy of every mirrored key and value.
func (l *localDB) loadAll() (map[string][]byte, error) {
	kvs := make(map[string][]byte)
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(ksrBucket).ForEach(func(k, v []byte) error {
			kvs[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt DB %s: read: %w", l.path, err)
	}
	return kvs, nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// close releases the file.
func (l *localDB) close() error {
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("bolt DB %s: close: %w", l.path, err)
	}
	return nil
}
