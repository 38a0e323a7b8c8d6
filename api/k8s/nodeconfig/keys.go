// Package nodeconfig is the model of the node-specific configuration of one node (the
// NodeConfig CRD) as it is stored in etcd (nodeconfig.proto) and the keys it is stored
// under, relative to ksrkey.KsrPrefix:
//
//	k8s/nodeconfig/<nodeName>    NodeConfig
//
// It carries no logic beyond building and parsing those keys.
package nodeconfig

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "nodeconfig"

// keyPrefix is the prefix of every NodeConfig key.
const keyPrefix = "k8s/nodeconfig/"

// KeyPrefix returns the prefix of every NodeConfig key: k8s/nodeconfig/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the NodeConfig of the named node: k8s/nodeconfig/<nodeName>.
func Key(nodeName string) string {
	return keyPrefix + nodeName
}

// ParseNodeConfigFromKey returns the node name from a key built by Key. The error wraps
// ksrkey.ErrInvalidKey for any other key.
func ParseNodeConfigFromKey(key string) (nodeName string, err error) {
	return keyparse.ParseName(Keyword, keyPrefix, key)
}
