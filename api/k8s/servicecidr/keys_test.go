package servicecidr

import (
	"errors"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestServiceCIDRKeyLayout(t *testing.T) {
	if Keyword != "servicecidr" || KeyPrefix() != "k8s/servicecidr/" {
		t.Fatalf("Keyword %q, KeyPrefix %q", Keyword, KeyPrefix())
	}
	if got, want := Key("kubernetes"), "k8s/servicecidr/kubernetes"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

func TestParseServiceCIDRFromKey(t *testing.T) {
	tests := []struct {
		key     string
		name    string
		wantErr bool
	}{
		{key: "k8s/servicecidr/secondary", name: "secondary"},
		{key: "k8s/servicecidr/range-2", name: "range-2"},
		{key: "", wantErr: true},
		{key: "k8s/servicecidr/", wantErr: true},
		{key: "k8s/servicecidr/a/b", wantErr: true},
		{key: "k8s/servicecidr/secondary/", wantErr: true},
		{key: "k8s/other/secondary", wantErr: true},
		{key: "/vnf-agent/contiv-ksr/k8s/servicecidr/secondary", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			name, err := ParseServiceCIDRFromKey(tt.key)
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
