// Package pod is the model of the Kubernetes Pod as contiv-ksr writes it into etcd
// (pod.proto) and the keys it is stored under, relative to ksrkey.KsrPrefix:
//
//	k8s/pod/<name>/namespace/<namespace>    Pod
//
// It carries no logic beyond building and parsing those keys.
package pod

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "pod"

// keyPrefix is the prefix of every Pod key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every Pod key: k8s/pod/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the Pod with the given name in the given namespace:
// k8s/pod/<name>/namespace/<namespace>.
func Key(name, namespace string) string {
	return keyparse.Namespaced(keyPrefix, name, namespace)
}

// ParsePodFromKey returns the name and namespace of a Pod from a key built by
// Key. The error wraps ksrkey.ErrInvalidKey for any other key.
func ParsePodFromKey(key string) (name, namespace string, err error) {
	return keyparse.ParseNamespaced(Keyword, keyPrefix, key)
}

// ID identifies a pod within the cluster.
type ID struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// String returns "namespace/name".
func (id ID) String() string { return id.Namespace + "/" + id.Name }

// GetID returns the identifier of a pod.
func GetID(p *Pod) ID { return ID{Name: p.GetName(), Namespace: p.GetNamespace()} }
