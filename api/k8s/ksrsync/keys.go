// Package ksrsync is the model of the sync marker (ksrsync.proto) that contiv-ksr
// publishes after each complete resync, and the key it is stored under, relative to
// ksrkey.KsrPrefix:
//
//	ksrsync/<resource>    SyncMarker (today only ksrsync/pod)
//
// The marker lets a reader tell "absent from the KSR copy" from "deleted in Kubernetes":
// an object that existed in the API server before the marker's ListedAfter and is
// absent from etcd was deleted; an object absent without such a marker (contiv-ksr
// down since the start, between leaders, an old contiv-ksr that publishes none) may
// just not be reflected yet. The prefix lies outside k8s/, so resyncs of contiv-ksr
// never sweep it. This package carries no logic beyond the key and the time.
package ksrsync

import (
	"fmt"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/api/k8s/ksrkey"
)

// Keyword names the resource in dbresources and in api.KubeStateData.
const Keyword = "ksrsync"

// keyPrefix is the prefix of every SyncMarker key.
const keyPrefix = "ksrsync/"

// KeyPrefix returns the prefix of every SyncMarker key: ksrsync/.
func KeyPrefix() string { return keyPrefix }

// Key returns the key of the marker of a resource keyword: ksrsync/<resource>.
func Key(resource string) string { return keyPrefix + resource }

// ParseKey returns the resource keyword of a key built by Key; the error wraps
// ksrkey.ErrInvalidKey for any other key.
func ParseKey(key string) (resource string, err error) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", fmt.Errorf("%s key %q: want %s<resource>: %w", Keyword, key, keyPrefix, ksrkey.ErrInvalidKey)
	}
	return rest, nil
}

// ListedAfter returns the time as of which the marked copy is complete (the zero time
// for a marker without one).
func (m *SyncMarker) ListedAfter() time.Time {
	if m.GetListedAfterUnixNano() == 0 {
		return time.Time{}
	}
	return time.Unix(0, m.GetListedAfterUnixNano())
}
