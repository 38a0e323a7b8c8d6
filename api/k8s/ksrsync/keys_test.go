package ksrsync

import (
	"errors"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

func TestKeyRoundTrip(t *testing.T) {
	if got := Key("pod"); got != "ksrsync/pod" {
		t.Fatalf("Key(pod) = %q", got)
	}
	res, err := ParseKey(Key("pod"))
	if err != nil || res != "pod" {
		t.Fatalf("ParseKey = %q, %v", res, err)
	}
	for _, bad := range []string{"", "ksrsync/", "ksrsync/a/b", "k8s/pod/x"} {
		if _, err := ParseKey(bad); !errors.Is(err, ksrkey.ErrInvalidKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestListedAfter(t *testing.T) {
	if !(&SyncMarker{}).ListedAfter().IsZero() {
		t.Error("a marker without a time must give the zero time")
	}
	at := time.Unix(1700000000, 5)
	if got := (&SyncMarker{ListedAfterUnixNano: at.UnixNano()}).ListedAfter(); !got.Equal(at) {
		t.Errorf("ListedAfter = %v, want %v", got, at)
	}
}
