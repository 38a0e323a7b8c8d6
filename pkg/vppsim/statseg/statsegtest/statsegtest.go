// Package statsegtest serves a stats segment for tests: a fresh segment on a stats
// socket in the test's temporary directory, closed when the test ends.
package statsegtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"
)

// Serve returns a new segment served on <t.TempDir()>/stats.sock and the socket's
// path; both are closed by t.Cleanup.
func Serve(t testing.TB, cfg statseg.Config) (*statseg.Segment, string) {
	t.Helper()
	seg, err := statseg.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	path := filepath.Join(t.TempDir(), "stats.sock")
	srv, err := seg.Serve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return seg, path
}
