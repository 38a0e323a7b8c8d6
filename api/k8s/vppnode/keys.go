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
