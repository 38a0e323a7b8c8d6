// Package policy is the model of the Kubernetes Policy as contiv-ksr writes it into etcd
// (policy.proto) and the keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/policy/<name>/namespace/<namespace>    Policy
//
// It carries no logic beyond building and parsing those keys.
package policy

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "policy"

// keyPrefix is the prefix of every Policy key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every Policy key: k8s/policy/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the Policy with the given name in the given namespace:
// k8s/policy/<name>/namespace/<namespace>.
func Key(name, namespace string) string {
	return keyparse.Namespaced(keyPrefix, name, namespace)
}

// ParsePolicyFromKey returns the name and namespace of a Policy from a key built by
// Key. The error wraps ksrkey.ErrInvalidKey for any other key.
func ParsePolicyFromKey(key string) (name, namespace string, err error) {
	return keyparse.ParseNamespaced(Keyword, keyPrefix, key)
}
