package endpointslice

import (
	"errors"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestEndpointSliceKeyFollowsUpstreamLayout(t *testing.T) {
	if Keyword != "endpointslice" || KeyPrefix() != "k8s/endpointslice/" {
		t.Fatalf("Keyword %q, KeyPrefix %q", Keyword, KeyPrefix())
	}
	if got, want := Key("web-1", "default"), "k8s/endpointslice/web-1/namespace/default"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

func TestParseEndpointSliceFromKey(t *testing.T) {
	tests := []struct {
		key      string
		name, ns string
		wantErr  bool
	}{
		{key: "k8s/endpointslice/web-1/namespace/default", name: "web-1", ns: "default"},
		{key: "k8s/endpointslice/kube-dns/namespace/kube-system", name: "kube-dns", ns: "kube-system"},
		{key: "k8s/endpointslice/namespace/namespace/namespace", name: "namespace", ns: "namespace"},
		{key: "", wantErr: true},
		{key: "k8s/endpointslice/", wantErr: true},
		{key: "k8s/endpointslice/web-1", wantErr: true},
		{key: "k8s/endpointslice/web-1/namespace/", wantErr: true},
		{key: "k8s/endpointslice//namespace/default", wantErr: true},
		{key: "k8s/endpointslice/web-1/ns/default", wantErr: true},
		{key: "k8s/endpointslice/web-1/namespace/default/extra", wantErr: true},
		{key: "k8s/other/web-1/namespace/default", wantErr: true},
		{key: "/vnf-agent/contiv-ksr/k8s/endpointslice/web-1/namespace/default", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			name, ns, err := ParseEndpointSliceFromKey(tt.key)
			if tt.wantErr {
				if err == nil || !errors.Is(err, ksrkey.ErrInvalidKey) {
					t.Fatalf("got (%q, %q, %v), want an ErrInvalidKey", name, ns, err)
				}
				return
			}
			if err != nil || name != tt.name || ns != tt.ns {
				t.Fatalf("got (%q, %q, %v), want (%q, %q)", name, ns, err, tt.name, tt.ns)
			}
			if Key(name, ns) != tt.key {
				t.Errorf("Key(%q, %q) does not give the key back", name, ns)
			}
		})
	}
}
