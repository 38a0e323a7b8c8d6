package kvscheduler

import (
	"sort"
	"sync"
	"time"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// history keeps recorded transactions: those started within the permanently
// recorded init period, and later ones until they are older than the age limit; all of
// them within maxRecords and maxBytes (api.RecordedTxn.ApproxMemory), the oldest recent
// ones dropped first, then the oldest of the init period. Both lists are ordered by
// sequence number and start time; the sizes run parallel to them.
type history struct {
	mu         sync.RWMutex
	enabled    bool
	start      time.Time
	ageLimit   time.Duration
	initPeriod time.Duration
	maxRecords int // 0: no bound
	maxBytes   int // 0: no bound
	permanent  []*api.RecordedTxn
	recent     []*api.RecordedTxn
	permSizes  []int
	sizes      []int
	bytes      int // sum of the sizes
	permBytes  int // sum of permSizes
}

func (h *history) init(cfg Config, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = cfg.RecordTransactionHistory
	h.start = now
	h.ageLimit = time.Duration(cfg.TransactionHistoryAgeLimit) * time.Minute
	h.initPeriod = time.Duration(cfg.PermanentlyRecordedInitPeriod) * time.Minute
	h.maxRecords = cfg.TransactionHistoryMaxRecords
	h.maxBytes = cfg.TransactionHistoryMaxBytes
}

func (h *history) add(r *api.RecordedTxn) {
	if !h.enabled {
		return
	}
	size := r.ApproxMemory()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bytes += size
	if r.Start.Sub(h.start) < h.initPeriod {
		h.permanent = append(h.permanent, r)
		h.permSizes = append(h.permSizes, size)
		h.permBytes += size
	} else {
		h.recent = append(h.recent, r)
		h.sizes = append(h.sizes, size)
		h.trim(r.Start)
	}
	h.bound()
}

// bound drops the oldest records while the history holds more than maxRecords or
// maxBytes. The records of the init period may keep up to half of either bound; beyond
// that, and when no recent record is left to drop, their oldest go. Otherwise the oldest
// recent records go. The newest record always stays.
func (h *history) bound() {
	limited := func(n, bytes, maxN, maxBytes int) bool {
		return (maxN > 0 && n > maxN) || (maxBytes > 0 && bytes > maxBytes)
	}
	for len(h.permanent)+len(h.recent) > 1 && limited(len(h.permanent)+len(h.recent), h.bytes, h.maxRecords, h.maxBytes) {
		permOverHalf := limited(len(h.permanent), h.permBytes, h.maxRecords/2, h.maxBytes/2)
		if (len(h.recent) > 1 && !permOverHalf) || len(h.permanent) == 0 {
			h.bytes -= h.sizes[0]
			h.dropRecent(1)
			continue
		}
		h.bytes -= h.permSizes[0]
		h.permBytes -= h.permSizes[0]
		h.permanent[0] = nil
		h.permanent, h.permSizes = h.permanent[1:], h.permSizes[1:]
		if cap(h.permanent) > 64 && len(h.permanent) < cap(h.permanent)/4 {
			h.permanent = append([]*api.RecordedTxn(nil), h.permanent...)
			h.permSizes = append([]int(nil), h.permSizes...)
		}
	}
}

// dropRecent drops the n oldest recent records (their bytes already subtracted).
func (h *history) dropRecent(n int) {
	if n == 0 {
		return
	}
	clear(h.recent[:n])
	h.recent = h.recent[n:]
	h.sizes = h.sizes[n:]
	if cap(h.recent) > 64 && len(h.recent) < cap(h.recent)/4 {
		h.recent = append([]*api.RecordedTxn(nil), h.recent...)
		h.sizes = append([]int(nil), h.sizes...)
	}
}

// trim drops recent transactions older than the age limit (amortized O(1)).
func (h *history) trim(now time.Time) {
	if len(h.recent) == 0 || now.Sub(h.recent[0].Start) <= h.ageLimit {
		return
	}
	cut := now.Add(-h.ageLimit)
	i := sort.Search(len(h.recent), func(i int) bool { return !h.recent[i].Start.Before(cut) })
	for _, sz := range h.sizes[:i] {
		h.bytes -= sz
	}
	h.dropRecent(i)
}

func (h *history) get(seq uint64) *api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, list := range [][]*api.RecordedTxn{h.permanent, h.recent} {
		i := sort.Search(len(list), func(i int) bool { return list[i].SeqNum >= seq })
		if i < len(list) && list[i].SeqNum == seq {
			return list[i]
		}
	}
	return nil
}

// between returns the transactions started within [since, until] (zero until: no
// upper bound), oldest first.
func (h *history) between(since, until time.Time) []*api.RecordedTxn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*api.RecordedTxn
	for _, list := range [][]*api.RecordedTxn{h.permanent, h.recent} {
		i := sort.Search(len(list), func(i int) bool { return !list[i].Start.Before(since) })
		for ; i < len(list); i++ {
			if !until.IsZero() && list[i].Start.After(until) {
				break
			}
			out = append(out, list[i])
		}
	}
	return out
}

// KeyTimelineEntry is one recorded operation on a key.
type KeyTimelineEntry struct {
	SeqNum  uint64         `json:"seqNum"`
	TxnType api.TxnType    `json:"txnType"`
	Time    time.Time      `json:"time"`
	Op      api.RecordedOp `json:"op"`
}

// KeyTimeline returns every recorded operation on key, oldest first. It scans the
// whole recorded history.
func (s *Scheduler) KeyTimeline(key string) []KeyTimelineEntry {
	h := &s.hist
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []KeyTimelineEntry
	for _, list := range [][]*api.RecordedTxn{h.permanent, h.recent} {
		for _, r := range list {
			for _, op := range r.Executed {
				if op.Key == key {
					out = append(out, KeyTimelineEntry{SeqNum: r.SeqNum, TxnType: r.TxnType, Time: r.Start, Op: op})
				}
			}
		}
	}
	return out
}
