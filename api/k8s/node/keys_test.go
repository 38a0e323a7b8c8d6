package node

import (
	"errors"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestNodeKeyFollowsUpstreamLayout(t *testing.T) {
	if Keyword != "node" || KeyPrefix() != "k8s/node/" {
		t.Fatalf("Keyword %q, KeyPrefix %q", Keyword, KeyPrefix())
	}
	if got, want := Key("k8s-worker1"), "k8s/node/k8s-worker1"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

func TestParseNodeFromKey(t *testing.T) {
	tests := []struct {
		key     string
		name    string
		wantErr bool
	}{
		{key: "k8s/node/k8s-master", name: "k8s-master"},
		{key: "k8s/node/node.example.com", name: "node.example.com"},
		{key: "", wantErr: true},
		{key: "k8s/node/", wantErr: true},
		{key: "k8s/node/a/b", wantErr: true},
		{key: "k8s/node/k8s-master/", wantErr: true},
		{key: "k8s/other/k8s-master", wantErr: true},
		{key: "/vnf-agent/contiv-ksr/k8s/node/k8s-master", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			name, err := ParseNodeFromKey(tt.key)
			if tt.wantErr {
				if err == nil || !errors.Is(err, ksrkey.ErrInvalidKey) {
					t.Fatalf("got (%q, %v), want an ErrInvalidKey", name, err)
				}
				return
			}
			if err != nil || name != tt.name {
				t.Fatalf("got (%q, %v), want %q", name, err, tt.name)
			}
			if Key(name) != tt.key {
				t.Errorf("Key(%q) does not give the key back", name)
			}
		})
	}
}
