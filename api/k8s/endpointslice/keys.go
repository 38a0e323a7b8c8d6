// Package endpointslice is the model of a Kubernetes EndpointSlice
// (discovery.k8s.io/v1) as contiv-ksr writes it into etcd (endpointslice.proto) and the
// keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/endpointslice/<name>/namespace/<namespace>    EndpointSlice
//
// A service's endpoints are the union of its slices (service_name); merging them is
// the reader's job. It carries no logic beyond building and parsing the keys.
package endpointslice

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "endpointslice"

// keyPrefix is the prefix of every EndpointSlice key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every EndpointSlice key: k8s/endpointslice/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of a slice: k8s/endpointslice/<name>/namespace/<namespace>.
func Key(name, namespace string) string {
	return keyparse.Namespaced(keyPrefix, name, namespace)
}

// ParseEndpointSliceFromKey returns the name and namespace of a slice from a key built
// by Key. The error wraps ksrkey.ErrInvalidKey for any other key.
func ParseEndpointSliceFromKey(key string) (name, namespace string, err error) {
	return keyparse.ParseNamespaced(Keyword, keyPrefix, key)
}
