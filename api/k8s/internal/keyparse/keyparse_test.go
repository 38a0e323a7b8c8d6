package keyparse

import (
	"errors"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestNamespacedRoundTripAndRejections(t *testing.T) {
	key := Namespaced("k8s/pod/", "web", "default")
	if key != "k8s/pod/web/namespace/default" {
		t.Fatalf("key = %q", key)
	}
	name, ns, err := ParseNamespaced("pod", "k8s/pod/", key)
	if err != nil || name != "web" || ns != "default" {
		t.Fatalf("parse = %q %q %v", name, ns, err)
	}
	for key, want := range map[string]string{
		"k8s/service/web/namespace/default": "does not start with k8s/pod/",
		"k8s/pod/web":                       "want k8s/pod/<name>/namespace/<namespace>",
		"k8s/pod//namespace/default":        "empty name or namespace",
		"k8s/pod/web/ns/default":            "want k8s/pod/<name>/namespace/<namespace>",
	} {
		_, _, err := ParseNamespaced("pod", "k8s/pod/", key)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ksrkey.ErrInvalidKey) {
			t.Errorf("%s: err = %v, want %q wrapping ErrInvalidKey", key, err, want)
		}
	}
}

func TestParseName(t *testing.T) {
	if name, err := ParseName("node", "k8s/node/", "k8s/node/worker1"); err != nil || name != "worker1" {
		t.Fatalf("ParseName = %q %v", name, err)
	}
	for _, key := range []string{"k8s/node/", "k8s/node/a/b", "k8s/pod/x"} {
		if _, err := ParseName("node", "k8s/node/", key); err == nil || !errors.Is(err, ksrkey.ErrInvalidKey) {
			t.Errorf("%s accepted: %v", key, err)
		}
	}
}
