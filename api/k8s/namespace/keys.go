// Package namespace is the model of a Kubernetes namespace as contiv-ksr writes it into
// etcd (namespace.proto) and the keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/namespace/<name>    Namespace
//
// It carries no logic beyond building and parsing those keys.
package namespace

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "namespace"

// keyPrefix is the prefix of every Namespace key.
const keyPrefix = "k8s/namespace/"

// KeyPrefix returns the prefix of every Namespace key: k8s/namespace/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the named namespace: k8s/namespace/<name>.
func Key(name string) string {
	return keyPrefix + name
}

// ParseNamespaceFromKey returns the namespace name from a key built by Key. The error
// wraps ksrkey.ErrInvalidKey for any other key.
func ParseNamespaceFromKey(key string) (name string, err error) {
	return keyparse.ParseName(Keyword, keyPrefix, key)
}
