package kvscheduler

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

func TestRESTHandlers(t *testing.T) {
	s, dp := basicSetup(t, nil)
	seq := mustCommit(t, s, set("v/a", "a"), set("v/b", "b;dep=v/a"), set("v/p", "p;dep=v/none"))
	dp.plant("v/sb", str("s"), api.FromSB)
	mux := http.NewServeMux()
	s.RegisterHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	now := time.Now().Unix()
	tests := []struct {
		name     string
		method   string
		path     string
		wantCode int
		wantBody []string // fragments
	}{
		{"txn by seq", "GET", fmt.Sprintf("/scheduler/txn-history?seq-num=%d", seq), 200,
			[]string{`"seqNum": 1`, `"key": "v/a"`, `"operation": "CREATE"`, `"newState": "CONFIGURED"`, `"value": "b;dep=v/a"`}},
		{"txn unknown seq", "GET", "/scheduler/txn-history?seq-num=999", 404, []string{"not recorded"}},
		{"txn bad seq", "GET", "/scheduler/txn-history?seq-num=abc", 400, []string{"seq-num"}},
		{"txn window", "GET", fmt.Sprintf("/scheduler/txn-history?since=%d&until=%d", now-60, now+60), 200, []string{`"seqNum": 1`}},
		{"txn window empty", "GET", fmt.Sprintf("/scheduler/txn-history?since=%d", now+3600), 200, []string{"[]"}},
		{"txn bad since", "GET", "/scheduler/txn-history?since=yesterday", 400, []string{"since"}},
		{"txn bad until", "GET", "/scheduler/txn-history?until=1.5", 400, []string{"until"}},
		{"txn until before since", "GET", "/scheduler/txn-history?since=100&until=50", 400, []string{"before"}},
		{"dump NB", "GET", "/scheduler/dump?descriptor=v&view=NB", 200, []string{`"key": "v/p"`, `"origin": "FROM_NB"`}},
		{"dump SB", "GET", "/scheduler/dump?descriptor=v&view=SB", 200, []string{`"key": "v/sb"`, `"origin": "FROM_SB"`}},
		{"dump cached default prefix", "GET", "/scheduler/dump?key-prefix=v/b&view=cached", 200, []string{`"key": "v/b"`, `"descriptor": "v"`}},
		{"dump unknown descriptor", "GET", "/scheduler/dump?descriptor=zzz", 400, []string{"unknown descriptor"}},
		{"dump unknown view", "GET", "/scheduler/dump?descriptor=v&view=XX", 400, []string{"unknown view"}},
		{"dump nothing", "GET", "/scheduler/dump", 400, []string{"required"}},
		{"status one", "GET", "/scheduler/status?key=v/p", 200, []string{`"state": "PENDING"`, `v/none`}},
		{"status all", "GET", "/scheduler/status", 200, []string{`"key": "v/a"`, `"key": "v/p"`}},
		{"timeline", "GET", "/scheduler/key-timeline?key=v/b", 200, []string{`"operation": "CREATE"`}},
		{"timeline without key", "GET", "/scheduler/key-timeline", 400, []string{"key"}},
		{"graph snapshot", "GET", "/scheduler/graph-snapshot?key-prefix=v/", 200,
			[]string{`"key": "v/b"`, `"satisfiedBy": [`, `"key": "v/p"`, `"satisfied": false`, `"state": "PENDING"`}},
		{"graph snapshot of the past", "GET", "/scheduler/graph-snapshot?time=1700000000", 400, []string{"only the current graph"}},
		{"downstream resync", "POST", "/scheduler/downstream-resync?verbose=true", 200, []string{`"seqNum": 2`}},
		{"downstream resync bad flag", "POST", "/scheduler/downstream-resync?retry=maybe", 400, []string{"retry"}},
		{"downstream resync wrong method", "GET", "/scheduler/downstream-resync", 405, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.wantCode, body)
			}
			if tc.wantCode != 405 && !json.Valid(body) {
				t.Fatalf("body is not JSON: %s", body)
			}
			for _, frag := range tc.wantBody {
				if !strings.Contains(string(body), frag) {
					t.Fatalf("body lacks %q:\n%s", frag, body)
				}
			}
		})
	}
	// the REST downstream resync really resynced
	if rec := s.GetRecordedTransaction(2); rec == nil || rec.ResyncType != api.DownstreamResync {
		t.Fatalf("downstream resync record = %v", rec)
	}
}
