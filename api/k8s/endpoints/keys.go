// Package endpoints is the model of the Kubernetes Endpoints as contiv-ksr writes them
// into etcd (endpoints.proto) and the keys they are stored under, relative to
// ksrkey.KsrPrefix:
//
//	k8s/endpoints/<name>/namespace/<namespace>    Endpoints
//
// It carries no logic beyond building and parsing those keys.
package endpoints

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "endpoints"

// keyPrefix is the prefix of every Endpoints key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every Endpoints key: k8s/endpoints/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the Endpoints with the given name in the given namespace:
// k8s/endpoints/<name>/namespace/<namespace>.
func Key(name, namespace string) string {
	return keyparse.Namespaced(keyPrefix, name, namespace)
}

// ParseEndpointsFromKey returns the name and namespace of the Endpoints from a key built
// by Key. The error wraps ksrkey.ErrInvalidKey for any other key.
func ParseEndpointsFromKey(key string) (name, namespace string, err error) {
	return keyparse.ParseNamespaced(Keyword, keyPrefix, key)
}
