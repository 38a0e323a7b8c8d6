package etcdembed

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestServerStoresAndKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	put := func(s *Server, key, val string) {
		c := client(t, s)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s *Server, key string) string {
		c := client(t, s)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	s, err := Start(Options{Dir: dir, ClientAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	put(s, "/vnf-agent/contiv-ksr/allocatedIDs/1", "x")
	s.Close()
	// A restart on the same directory keeps the data (node IDs must survive).
	s, err = Start(Options{Dir: dir, ClientAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := get(s, "/vnf-agent/contiv-ksr/allocatedIDs/1"); got != "x" {
		t.Errorf("value after restart = %q", got)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	tests := []struct {
		opts Options
		want string
	}{
		{Options{ClientAddr: "127.0.0.1:0"}, "etcd data directory is not set"},
		{Options{Dir: t.TempDir(), ClientAddr: "0.0.0.0:2379"}, `"0.0.0.0:2379": the embedded etcd listens on loopback only`},
		{Options{Dir: t.TempDir(), ClientAddr: "2379"}, `"2379" is not host:port`},
	}
	for _, tc := range tests {
		if _, err := Start(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func client(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
