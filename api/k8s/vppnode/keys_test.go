package vppnode

import (
	"errors"
	"strings"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestVppNodeKeyFollowsUpstreamLayout(t *testing.T) {
	if Keyword != "vppnode" || KeyPrefix() != "allocatedIDs/" {
		t.Fatalf("Keyword %q, KeyPrefix %q", Keyword, KeyPrefix())
	}
	for id, want := range map[uint32]string{1: "allocatedIDs/1", 42: "allocatedIDs/42", 4294967295: "allocatedIDs/4294967295"} {
		if got := Key(id); got != want {
			t.Errorf("Key(%d) = %q, want %q", id, got, want)
		}
	}
}

func TestParseVppNodeFromKey(t *testing.T) {
	tests := []struct {
		key     string
		id      uint32
		wantErr bool
	}{
		{key: "allocatedIDs/1", id: 1},
		{key: "allocatedIDs/255", id: 255},
		{key: "allocatedIDs/4294967295", id: 4294967295},
		{key: "allocatedIDs/4294967296", wantErr: true},
		{key: "allocatedIDs/", wantErr: true},
		{key: "allocatedIDs/01", wantErr: true},
		{key: "allocatedIDs/+1", wantErr: true},
		{key: "allocatedIDs/-1", wantErr: true},
		{key: "allocatedIDs/one", wantErr: true},
		{key: "allocatedIDs/1/x", wantErr: true},
		{key: "k8s/node/1", wantErr: true},
		{key: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			id, err := ParseVppNodeFromKey(tt.key)
			if tt.wantErr {
				if err == nil || !errors.Is(err, ksrkey.ErrInvalidKey) {
					t.Fatalf("got (%d, %v), want an ErrInvalidKey", id, err)
				}
				return
			}
			if err != nil || id != tt.id {
				t.Fatalf("got (%d, %v), want %d", id, err, tt.id)
			}
			if Key(id) != tt.key {
				t.Errorf("Key(%d) does not give the key back", id)
			}
		})
	}
}

func TestHolderKeys(t *testing.T) {
	if got := HolderKey(7); got != "nodeIDHolders/7" || !strings.HasPrefix(got, HolderKeyPrefix()) {
		t.Fatalf("HolderKey(7) = %q", got)
	}
	if id, err := ParseHolderKey(HolderKey(4294967295)); err != nil || id != 4294967295 {
		t.Errorf("round trip of the largest ID: %d, %v", id, err)
	}
	for _, bad := range []string{"", "nodeIDHolders/", "nodeIDHolders/0", "nodeIDHolders/07", "nodeIDHolders/x", "allocatedIDs/1", "nodeIDHolders/4294967296"} {
		if _, err := ParseHolderKey(bad); !errors.Is(err, ksrkey.ErrInvalidKey) {
			t.Errorf("ParseHolderKey(%q): %v, want ErrInvalidKey", bad, err)
		}
	}
}
