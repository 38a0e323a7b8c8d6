// Package servicecidr is the model of a Kubernetes ServiceCIDR (networking.k8s.io/v1)
// as contiv-ksr writes it into etcd (servicecidr.proto) and the keys it is stored
// under, relative to ksrkey.KsrPrefix:
//
//	k8s/servicecidr/<name>    ServiceCIDR
//
// It carries no logic beyond building and parsing those keys.
package servicecidr

import "github.com/contiv-vpp/contiv-vpp/api/k8s/internal/keyparse"

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "servicecidr"

// keyPrefix is the prefix of every ServiceCIDR key.
const keyPrefix = "k8s/" + Keyword + "/"

// KeyPrefix returns the prefix of every ServiceCIDR key: k8s/servicecidr/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the named ServiceCIDR: k8s/servicecidr/<name>.
func Key(name string) string { return keyPrefix + name }

// ParseServiceCIDRFromKey returns the name from a key built by Key. The error wraps
// ksrkey.ErrInvalidKey for any other key.
func ParseServiceCIDRFromKey(key string) (name string, err error) {
	return keyparse.ParseName(Keyword, keyPrefix, key)
}
