// Package vppnode is the model of a node ID allocation (vppnode.proto) and the key it
// is stored under, relative to ksrkey.KsrPrefix:
//
//	allocatedIDs/<id>    VppNode
//
// The nodesync plugin of every agent writes its own entry with a put-if-absent
// transaction; contiv-ksr removes the entry of a deleted node. This package carries no
// logic beyond building and parsing the key.
package vppnode

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "vppnode"

// keyPrefix is the prefix of every VppNode key.
const keyPrefix = "allocatedIDs/"

// KeyPrefix returns the prefix of every VppNode key: allocatedIDs/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the allocation of the given node ID: allocatedIDs/<id>, the ID
// in decimal.
func Key(id uint32) string {
	return keyPrefix + strconv.FormatUint(uint64(id), 10)
}

// ParseVppNodeFromKey returns the node ID from a key built by Key. The error wraps
// ksrkey.ErrInvalidKey for any other key, including IDs with leading zeros (which
// would give one ID two keys).
func ParseVppNodeFromKey(key string) (id uint32, err error) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return 0, fmt.Errorf("%s key %q: does not start with %s: %w", Keyword, key, keyPrefix, ksrkey.ErrInvalidKey)
	}
	n, perr := strconv.ParseUint(rest, 10, 32)
	if perr != nil || strconv.FormatUint(n, 10) != rest {
		return 0, fmt.Errorf("%s key %q: want %s<decimal uint32 ID>: %w", Keyword, key, keyPrefix, ksrkey.ErrInvalidKey)
	}
	return uint32(n), nil
}

// holderKeyPrefix is the prefix of the keys under which running nodes hold their IDs.
const holderKeyPrefix = "nodeIDHolders/"

// HolderKeyPrefix returns the prefix, relative to ksrkey.KsrPrefix, of the keys under
// which running agents hold their node IDs: nodeIDHolders/<id> = the node's name (raw
// text, not protobuf JSON), attached to the holder's etcd lease, so that the key
// vanishes when the agent stops renewing it. A held ID is never allocated to another
// node, even if its allocatedIDs record is gone. Agents before this port ignore the keys.
func HolderKeyPrefix() string { return holderKeyPrefix }

// HolderKey returns the key under which a running node holds id: nodeIDHolders/<id>.
func HolderKey(id uint32) string {
	return holderKeyPrefix + strconv.FormatUint(uint64(id), 10)
}

// ParseHolderKey returns the ID of a key built by HolderKey. The error wraps
// ksrkey.ErrInvalidKey for any other key, and for ID 0 (never allocated).
func ParseHolderKey(key string) (id uint32, err error) {
	rest, ok := strings.CutPrefix(key, holderKeyPrefix)
	if !ok {
		return 0, fmt.Errorf("node ID holder key %q: does not start with %s: %w", key, holderKeyPrefix, ksrkey.ErrInvalidKey)
	}
	n, perr := strconv.ParseUint(rest, 10, 32)
	if perr != nil || strconv.FormatUint(n, 10) != rest || n == 0 {
		return 0, fmt.Errorf("node ID holder key %q: want %s<decimal ID > 0>: %w", key, holderKeyPrefix, ksrkey.ErrInvalidKey)
	}
	return uint32(n), nil
}
