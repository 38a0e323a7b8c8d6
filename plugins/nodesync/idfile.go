package nodesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/dbresources"
	"github.com/contiv-vpp/contiv-vpp/api/k8s/vppnode"
)

// DefaultIDFile is where the agent keeps its node ID: beside the CNI socket and pods.json,
// in a directory that survives restarts of the agent's container.
const DefaultIDFile = "/var/run/contiv/node-id"

// ValidateIDFile reports why path cannot be the node ID file: it must be absolute, or
// empty (no file: the node ID then comes from etcd only, and a restart whose etcd lost
// the node's record allocates a new one).
func ValidateIDFile(path string) error {
	if path != "" && !filepath.IsAbs(path) {
		return fmt.Errorf("node ID file %q: must be an absolute path (or empty for none)", path)
	}
	return nil
}

// maxIDFileSize bounds the read of the ID file: a valid one is a few dozen bytes.
const maxIDFileSize = 4096

// idRecord is the content of the ID file.
type idRecord struct {
	Node string `json:"node"`
	ID   uint32 `json:"id"`
}

// ErrIDTaken is wrapped by the refusal to start when the ID this node remembers is held
// by another node's valid record in etcd.
var ErrIDTaken = errors.New("the node's ID is held by another node")

// loadIDFile returns the ID remembered in Deps.IDFile, 0 when there is none. A file
// that is unreadable, corrupt or of another node is reported and ignored: etcd is then
// the only source, as without the file.
func (ns *NodeSync) loadIDFile() uint32 {
	if ns.IDFile == "" {
		return 0
	}
	log := ns.Log.WithField("file", ns.IDFile)
	f, err := os.Open(ns.IDFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		log.WithError(err).Warn("node ID file unreadable: the node ID comes from etcd only")
		return 0
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIDFileSize+1))
	if err != nil {
		log.WithError(err).Warn("node ID file unreadable: the node ID comes from etcd only")
		return 0
	}
	var rec idRecord
	switch {
	case len(data) > maxIDFileSize:
		err = fmt.Errorf("larger than %d bytes", maxIDFileSize)
	default:
		err = json.Unmarshal(data, &rec)
	}
	if err == nil && rec.ID == 0 {
		err = errors.New("no ID in it")
	}
	if err != nil {
		log.WithError(err).Warn("node ID file corrupt: ignored, the node ID comes from etcd only")
		return 0
	}
	if rec.Node != ns.NodeName {
		log.WithFields(logrus.Fields{"fileNode": rec.Node, "node": ns.NodeName}).
			Warn("node ID file belongs to another node name: ignored")
		return 0
	}
	return rec.ID
}

// saveIDFile makes id the remembered ID: written to a temporary file, synced and
// renamed over the file, so a crash leaves the old or the new content.
func (ns *NodeSync) saveIDFile(id uint32) error {
	if ns.IDFile == "" || id == 0 || id == ns.savedID {
		return nil
	}
	data, err := json.Marshal(idRecord{Node: ns.NodeName, ID: id})
	if err != nil {
		return fmt.Errorf("encode node ID file: %w", err)
	}
	if err := writeFileAtomic(ns.IDFile, data); err != nil {
		return fmt.Errorf("save node ID %d in %s: %w", id, ns.IDFile, err)
	}
	ns.savedID = id
	return nil
}

// writeFileAtomic replaces path by data through a synced temporary file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// reclaim makes sure etcd gives id, the ID this node remembers, to this node: a missing
// record is created, a corrupt one (undecodable or without a name) is repaired, and a
// valid record of another node is a refusal wrapping ErrIDTaken. The writes are
// conditioned on what was read, so a concurrent writer is never overwritten.
func (ns *NodeSync) reclaim(id uint32) (*vppnode.VppNode, error) {
	kv, err := ns.kv("cannot confirm the node ID")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 1; attempt <= MaxAllocationAttempts; attempt++ {
		if attempt > 1 && !errors.Is(lastErr, errConflict) && !ns.pause() {
			break
		}
		rec, err := ns.tryReclaim(kv, id)
		if err == nil || errors.Is(err, ErrIDTaken) {
			return rec, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("confirm node ID %d of node %s: %w", id, ns.NodeName, lastErr)
}

// tryReclaim is one round of reclaim. With leases, the ID is held first (a running
// node holding it is a refusal wrapping ErrIDTaken and ErrIDHeld), and the record is
// written only while this node still holds it.
func (ns *NodeSync) tryReclaim(kv clientv3.KV, id uint32) (*vppnode.VppNode, error) {
	ctx, cancel := context.WithTimeout(ns.ctx, opTimeout)
	defer cancel()
	key := etcdKey(id)
	item, cond, err := readForWrite(ctx, kv, key)
	if err != nil {
		return nil, err
	}
	log := ns.Log.WithFields(logrus.Fields{"node": ns.NodeName, "nodeID": id, "key": key})
	what := "recreated"
	var found *vppnode.VppNode
	if item != nil {
		cur, decErr := decodeVppNode(item.Value)
		switch {
		case decErr == nil && cur.GetName() == ns.NodeName:
			cur.Id = id
			found = cur
		case decErr == nil && cur.GetName() != "":
			return nil, fmt.Errorf("%w: node ID %d (remembered in %s) is held by node %q in etcd (%s); "+
				"refusing to take another ID, which would renumber the node's pods: "+
				"remove the other node's record if it is stale, or remove %s to let this node allocate a new ID",
				ErrIDTaken, id, ns.IDFile, cur.GetName(), key, ns.IDFile)
		case decErr != nil:
			log = log.WithField("cause", decErr.Error())
		default:
			log = log.WithField("cause", "record has no node name")
		}
		what = "repaired"
	}
	lease, err := ns.currentLease(ctx)
	if err != nil {
		return nil, err
	}
	conds := []clientv3.Cmp{cond}
	if lease != 0 {
		if err := ns.hold(ctx, kv, id, lease); err != nil {
			if errors.Is(err, ErrIDHeld) {
				return nil, fmt.Errorf("%w: %w; refusing to share it or to take another ID, which would renumber "+
					"the node's pods: stop that node, or remove %s to let this node allocate a new ID", ErrIDTaken, err, ns.IDFile)
			}
			return nil, err
		}
		hkey := holderKey(id)
		conds = append(conds, clientv3.Compare(clientv3.LeaseValue(hkey), "=", lease))
	}
	if found != nil {
		return found, nil
	}
	rec := &vppnode.VppNode{Id: id, Name: ns.NodeName}
	data, err := dbresources.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode VppNode of node %s: %w", ns.NodeName, err)
	}
	txn, err := kv.Txn(ctx).If(conds...).Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", key, err)
	}
	if !txn.Succeeded {
		return nil, fmt.Errorf("write %s: changed meanwhile: %w", key, errConflict)
	}
	log.Warnf("this node's record in etcd was %s from the node ID file", what)
	return rec, nil
}
