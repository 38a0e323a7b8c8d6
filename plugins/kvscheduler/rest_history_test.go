package kvscheduler

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/jsonpage"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// recordTxns adds n transactions #1001.. to the history, 1 ms apart from base (a whole
// second after anything recorded), each with 5 operations.
func recordTxns(s *Scheduler, n int) (base time.Time) {
	base = time.Unix(time.Now().Unix()+10, 0)
	for i := 1; i <= n; i++ {
		start := base.Add(time.Duration(i) * time.Millisecond)
		txn := &api.RecordedTxn{SeqNum: uint64(1000 + i), Start: start, Stop: start, ValueCount: 1}
		for j := 0; j < 5; j++ {
			txn.Executed = append(txn.Executed, api.RecordedOp{Key: fmt.Sprintf("v/%d-%d", i, j), Value: str("x")})
		}
		s.hist.add(txn)
	}
	return base
}

func TestTxnHistoryPagesOf10kTransactions(t *testing.T) {
	s, _ := basicSetup(t, nil)
	const n = 10_000
	base := recordTxns(s, n)
	mux := http.NewServeMux()
	s.RegisterHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	sec := base.Unix()
	for _, tc := range []struct {
		query       string
		first, last uint64
		count       int
		more        string
	}{
		{"", 1000 + n - 99, 1000 + n, 100, fmt.Sprint(n - 100 + 0)},
		{"?last=3", 1000 + n - 2, 1000 + n, 3, ""},
		{"?last=5000&limit=1000", 1000 + n - 999, 1000 + n, 1000, "4000"},
		// base+2s..base+2.999s holds transactions 2000..2999 (start = base + i ms).
		{fmt.Sprintf("?since=%d&until=%d", sec+2, sec+2), 3000, 3099, 100, "900"},
		{fmt.Sprintf("?since=%d&until=%d&limit=5", sec+2, sec+2), 3000, 3004, 5, "995"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp, err := http.Get(srv.URL + TxnHistoryPath + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("code %d: %s", resp.StatusCode, body)
			}
			var got []struct {
				SeqNum   uint64            `json:"seqNum"`
				Executed []json.RawMessage `json:"executed"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("not a JSON array: %v", err)
			}
			// The history also holds the transactions of the setup (seq < 1000), which
			// come first; the windows above hold only ours.
			if len(got) != tc.count || got[0].SeqNum != tc.first || got[len(got)-1].SeqNum != tc.last {
				t.Fatalf("got %d txns #%d..#%d, want %d #%d..#%d", len(got), got[0].SeqNum, got[len(got)-1].SeqNum, tc.count, tc.first, tc.last)
			}
			if len(got[0].Executed) != 5 {
				t.Errorf("txn #%d has %d operations, want 5", got[0].SeqNum, len(got[0].Executed))
			}
			if m := resp.Header.Get(jsonpage.MoreHeader); tc.more != "" && m != tc.more {
				t.Errorf("%s = %q, want %q", jsonpage.MoreHeader, m, tc.more)
			} else if tc.more == "" && m != "" {
				t.Errorf("%s = %q, want none", jsonpage.MoreHeader, m)
			}
		})
	}
	for _, q := range []string{"?limit=0", "?limit=5000", "?last=-1", "?last=x"} {
		resp, err := http.Get(srv.URL + TxnHistoryPath + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s = %d, want 400", q, resp.StatusCode)
		}
	}
}

// TestTxnHistoryMemoryUnder16ConcurrentCallers bounds the live heap that 16 callers of
// the largest page add over a history of 10k transactions.
func TestTxnHistoryMemoryUnder16ConcurrentCallers(t *testing.T) {
	if testing.Short() {
		t.Skip("memory measurement skipped in -short mode")
	}
	s, _ := basicSetup(t, nil)
	recordTxns(s, 10_000)
	mux := http.NewServeMux()
	s.RegisterHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	live := func() uint64 {
		m := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		rtmetrics.Read(m)
		return m[0].Value.Uint64()
	}
	runtime.GC()
	base := live()
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if l := live(); l > peak.Load() {
				peak.Store(l)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const callers = 16
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + TxnHistoryPath + "?last=10000&limit=" + fmt.Sprint(jsonpage.MaxLimit))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	growth := float64(int64(peak.Load())-int64(base)) / (1 << 20) / callers
	t.Logf("txn history of 10k, %d callers of a page of %d: live heap %.1f MB, +%.2f MB a caller at peak", callers, jsonpage.MaxLimit, float64(base)/(1<<20), growth)
	if growth > 2 {
		t.Errorf("live heap grew %.2f MB a caller, want at most 2 MB", growth)
	}
}
