// Package node is the model of a Kubernetes node as contiv-ksr writes it into etcd
// (node.proto) and the keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/node/<name>    Node
//
// It carries no logic beyond building and parsing those keys.
package node

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "node"

// keyPrefix is the prefix of every Node key.
const keyPrefix = "k8s/node/"

// KeyPrefix returns the prefix of every Node key: k8s/node/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the named node: k8s/node/<name>.
func Key(name string) string {
	return keyPrefix + name
}

// ParseNodeFromKey returns the node name from a key built by Key. The error wraps
// ksrkey.ErrInvalidKey for any other key.
func ParseNodeFromKey(key string) (name string, err error) {
	return keyparse.ParseName(Keyword, keyPrefix, key)
}
