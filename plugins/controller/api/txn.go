package api

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// KeyValuePairs maps keys to values (a nil value stands for a deleted key where noted).
type KeyValuePairs map[string]proto.Message

// KubeStateData is the Kubernetes state by resource keyword ("pod", "service", ...), then
// by key without the /vnf-agent/contiv-ksr/ prefix.
type KubeStateData map[string]KeyValuePairs

// NewKubeStateData returns state with an empty map for each of the given resource
// keywords, so handlers can range over a resource that has no objects.
func NewKubeStateData(resources ...string) KubeStateData {
	s := make(KubeStateData, len(resources))
	for _, r := range resources {
		s[r] = make(KeyValuePairs)
	}
	return s
}

// ResyncOperations is what a handler may do to the transaction of a resync.
type ResyncOperations interface {
	// Put stages value under key; a nil value is a programming error and panics.
	Put(key string, value proto.Message)
	// Get returns the value staged under key in this transaction, or nil.
	Get(key string) proto.Message
}

// UpdateOperations is what a handler may do to the transaction of an update.
type UpdateOperations interface {
	ResyncOperations
	// Delete stages the removal of key.
	Delete(key string)
}

// Transaction is a staged set of changes that the controller commits to the scheduler.
type Transaction interface {
	UpdateOperations
	// Commit applies the staged changes and returns the scheduler's transaction number.
	Commit(ctx context.Context) (seqNum uint64, err error)
}

// PutAll stages every pair of values.
func PutAll(txn ResyncOperations, values KeyValuePairs) {
	for k, v := range values {
		txn.Put(k, v)
	}
}

// DeleteAll stages the removal of every key of values.
func DeleteAll(txn UpdateOperations, values KeyValuePairs) {
	for k := range values {
		txn.Delete(k)
	}
}
