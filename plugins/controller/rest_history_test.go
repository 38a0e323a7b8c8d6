package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vppif "github.com/contiv-vpp/contiv-vpp/api/models/vpp/interfaces"
	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/jsonpage"
	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// historyOf returns a controller whose history holds n events, one second apart
// from the unix time 1000, each with a transaction of 10 interface operations (about
// 7 KB of JSON an event: a realistic pod-add event).
func historyOf(t testing.TB, n int) *Controller {
	t.Helper()
	c := NewController(Deps{Log: quietLog(), Scheduler: &fakeScheduler{}})
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// room for every event: this is a test of paging, not of the bound
	c.history.maxBytes = 1 << 30
	for i := 1; i <= n; i++ {
		start := time.Unix(int64(1000+i), 0)
		txn := &kvs.RecordedTxn{SeqNum: uint64(i), Start: start, Stop: start.Add(time.Millisecond), ValueCount: 10}
		for j := 0; j < 10; j++ {
			txn.Executed = append(txn.Executed, kvs.RecordedOp{
				Key: fmt.Sprintf("config/vpp/v2/interfaces/tap-pod-%d-%d", i, j), Operation: kvs.TxnOperation(1),
				Value: &vppif.Interface{Name: fmt.Sprintf("tap-pod-%d-%d", i, j), Enabled: true,
					IpAddresses: []string{"10.1.1.2/32"}, PhysAddress: "02:fe:00:00:00:01"},
				Duration: time.Millisecond,
			})
		}
		c.history.add(&EventRecord{
			SeqNum: uint64(i), ProcessingStart: start, ProcessingEnd: start.Add(2 * time.Millisecond),
			Name: "Add Pod", Description: fmt.Sprintf("pod default/web-%d", i), Method: api.Update,
			Handlers: []HandlerRecord{{Handler: "podmanager", Change: "add"}, {Handler: "ipnet", Change: "wire pod"}},
			Txn:      txn,
		})
	}
	return c
}

// pagedEvent is the part of an event record the paging tests read.
type pagedEvent struct {
	SeqNum uint64
	Txn    struct {
		Executed []json.RawMessage `json:"executed"`
	}
}

func getHistory(t *testing.T, url string) ([]pagedEvent, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, body)
	}
	var out []pagedEvent
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: not a JSON array of events: %v", url, err)
	}
	return out, resp.Header
}

func TestEventHistoryPagesOf10kEvents(t *testing.T) {
	c := historyOf(t, 10_000)
	mux := http.NewServeMux()
	c.registerHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, tc := range []struct {
		query            string
		first, last, n   uint64
		wantMore, reject string
	}{
		{query: "", first: 9901, last: 10000, n: 100, wantMore: "9900"},
		{query: "?last=5", first: 9996, last: 10000, n: 5},
		{query: "?last=5000", first: 9901, last: 10000, n: 100, wantMore: "4900"},
		{query: "?last=5000&limit=1000", first: 9001, last: 10000, n: 1000, wantMore: "4000"},
		{query: "?since=1101&until=1110", first: 101, last: 110, n: 10},
		{query: "?since=1101", first: 101, last: 200, n: 100, wantMore: "9800"},
		{query: "?from=500&to=520", first: 500, last: 520, n: 21},
		{query: "?first=3", first: 1, last: 3, n: 3},
		{query: "?limit=0", reject: "limit"},
		{query: "?limit=1001", reject: "limit"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			if tc.reject != "" {
				resp, err := http.Get(srv.URL + EventHistoryPath + tc.query)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 400 {
					t.Errorf("code %d, want 400", resp.StatusCode)
				}
				return
			}
			got, hdr := getHistory(t, srv.URL+EventHistoryPath+tc.query)
			if uint64(len(got)) != tc.n || got[0].SeqNum != tc.first || got[len(got)-1].SeqNum != tc.last {
				t.Fatalf("got %d events #%d..#%d, want %d #%d..#%d", len(got), got[0].SeqNum, got[len(got)-1].SeqNum, tc.n, tc.first, tc.last)
			}
			if m := hdr.Get(jsonpage.MoreHeader); m != tc.wantMore {
				t.Errorf("%s = %q, want %q", jsonpage.MoreHeader, m, tc.wantMore)
			}
			if len(got[0].Txn.Executed) != 10 {
				t.Errorf("event #%d carries %d operations, want 10", got[0].SeqNum, len(got[0].Txn.Executed))
			}
		})
	}
}

// rssBytes is the resident set size of the test process (Linux), 0 elsewhere.
func rssBytes() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// heapSample reads the heap in use (live and not yet collected objects: what the
// agent's RSS follows) and the live heap as of the last GC.
func heapSample() (inUse, live uint64) {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// TestEventHistoryMemoryUnder16ConcurrentCallers runs 16 callers in parallel against a
// history of 10k events, each reading the default page and then the largest page
// (limit=1000, about 5 MB of JSON), and bounds the live heap they add. The whole
// history would be about 50 MB of JSON, which the former one-piece marshal held per
// caller.
func TestEventHistoryMemoryUnder16ConcurrentCallers(t *testing.T) {
	if testing.Short() {
		t.Skip("memory measurement skipped in -short mode")
	}
	c := historyOf(t, 10_000)
	mux := http.NewServeMux()
	c.registerHandlers(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	runtime.GC()
	baseInUse, baseLive := heapSample()
	baseRSS := rssBytes()
	var peakInUse, peakLive, peakRSS atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			inUse, live := heapSample()
			if inUse > peakInUse.Load() {
				peakInUse.Store(inUse)
			}
			if live > peakLive.Load() {
				peakLive.Store(live)
			}
			if rss := rssBytes(); rss > peakRSS.Load() {
				peakRSS.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const callers = 16
	var wg sync.WaitGroup
	var bytesRead atomic.Int64
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range []string{"", "?last=10000&limit=" + strconv.Itoa(jsonpage.MaxLimit)} {
				resp, err := http.Get(srv.URL + EventHistoryPath + q)
				if err != nil {
					errs <- err
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				bytesRead.Add(n)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	liveGrowth := int64(peakLive.Load()) - int64(baseLive)
	inUseGrowth := int64(peakInUse.Load()) - int64(baseInUse)
	t.Logf("history of 10k events, %d callers x (default page + page of %d): %.1f MB served; live heap %.1f -> %.1f MB (+%.2f MB a caller); heap in use %.1f -> %.1f MB (+%.2f MB a caller, garbage included); RSS %.1f -> %.1f MB",
		callers, jsonpage.MaxLimit, mb(bytesRead.Load()), mb(int64(baseLive)), mb(int64(peakLive.Load())), mb(liveGrowth)/callers,
		mb(int64(baseInUse)), mb(int64(peakInUse.Load())), mb(inUseGrowth)/callers, mb(int64(baseRSS)), mb(int64(peakRSS.Load())))
	if liveGrowth/callers > 2<<20 {
		t.Errorf("live heap grew %.1f MB a caller, want at most 2 MB", mb(liveGrowth)/callers)
	}
}

// discardWriter is a ResponseWriter that drops the body, so that a benchmark measures
// the handler only.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkEventHistory10k measures one answer of /controller/event-history over a
// history of 10k events: the default page, the largest page, and (for comparison) the
// whole history in one piece, as the handler answered before it was paged.
func BenchmarkEventHistory10k(b *testing.B) {
	c := historyOf(b, 10_000)
	for _, bc := range []struct{ name, query string }{
		{"default-page-100", ""},
		{"max-page-1000", "?last=10000&limit=1000"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", EventHistoryPath+bc.query, nil)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c.serveEventHistory(&discardWriter{h: http.Header{}}, req)
			}
		})
	}
	b.Run("whole-history-one-piece", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			infra.WriteJSON(&discardWriter{h: http.Header{}}, http.StatusOK, c.history.snapshot())
		}
	})
}
