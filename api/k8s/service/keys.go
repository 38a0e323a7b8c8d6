// Package service is the model of the Kubernetes Service as contiv-ksr writes it into etcd
// (service.proto) and the keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/service/<name>/namespace/<namespace>    Service
//
// It carries no logic beyond building and parsing those keys.
package service

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "service"

// keyPrefix is the prefix of every Service key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every Service key: k8s/service/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the Service with the given name in the given namespace:
// k8s/service/<name>/namespace/<namespace>.
func Key(name, namespace string) string {
	return keyparse.Namespaced(keyPrefix, name, namespace)
}

// ParseServiceFromKey returns the name and namespace of a Service from a key built by
// Key. The error wraps ksrkey.ErrInvalidKey for any other key.
func ParseServiceFromKey(key string) (name, namespace string, err error) {
	return keyparse.ParseNamespaced(Keyword, keyPrefix, key)
}
