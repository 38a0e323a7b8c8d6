// Package keyparse builds and splits the two key shapes of the KSR models,
// <prefix><name> and <prefix><name>/namespace/<namespace>. It is internal to
// api/k8s; the model packages wrap it with typed names.
package keyparse

import (
	"fmt"
	"strings"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

// namespaceSep separates the name from the namespace in namespaced keys.
const namespaceSep = "/namespace/"

// Namespaced returns <prefix><name>/namespace/<namespace>.
func Namespaced(prefix, name, namespace string) string {
	return prefix + name + namespaceSep + namespace
}

// ParseNamespaced splits a key built by Namespaced. kind names the resource in errors.
func ParseNamespaced(kind, prefix, key string) (name, namespace string, err error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", "", invalid(kind, key, "does not start with "+prefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != "namespace" {
		return "", "", invalid(kind, key, "want "+prefix+"<name>"+namespaceSep+"<namespace>")
	}
	if parts[0] == "" || parts[2] == "" {
		return "", "", invalid(kind, key, "empty name or namespace")
	}
	return parts[0], parts[2], nil
}

// ParseName returns the name of a key <prefix><name>; the name must not be empty nor
// contain a slash.
func ParseName(kind, prefix, key string) (string, error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", invalid(kind, key, "does not start with "+prefix)
	}
	if rest == "" || strings.Contains(rest, "/") {
		return "", invalid(kind, key, "want "+prefix+"<name> with a non-empty name without slashes")
	}
	return rest, nil
}

func invalid(kind, key, why string) error {
	return fmt.Errorf("%s key %q: %s: %w", kind, key, why, ksrkey.ErrInvalidKey)
}
