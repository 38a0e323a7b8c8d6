package kvscheduler

import (
	"sort"
	"sync"
	"time"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// history keeps recorded transactions: those started within the permanently
// recorded init period for good, later ones until they are older than the age limit.
// Both lists are ordered by sequence number and start time.
type history struct {
	mu         sync.RWMutex
	enabled    bool
	start      time.Time
	ageLimit   time.Duration
	initPeriod time.Duration
	permanent  []*api.RecordedTxn
	recent     []*api.RecordedTxn
}

func (h *history) init(cfg Config, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.enabled = cfg.RecordTransactionHistory
	h.start = now
	h.ageLimit = time.Duration(cfg.TransactionHistoryAgeLimit) * time.Minute
	h.initPeriod = time.Duration(cfg.PermanentlyRecordedInitPeriod) * time.Minute
}

func (h *history) add(r *api.RecordedTxn) {
	if !h.enabled {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Start.Sub(h.start) < h.initPeriod {
		h.permanent = append(h.permanent, r)
		return
	}
	h.recent = append(h.recent, r)
	h.trim(r.Start)
}

// trim drops recent transactions older than the age limit (amortized O(1)).
func (h *history) trim(now time.Time) {
	if len(h.recent) == 0 || now.Sub(h.recent[0].Start) <= h.ageLimit {
		return
	}
	cut := now.Add(-h.ageLimit)
	i := sort.Search(len(h.recent), func(i int) bool { return !h.recent[i].Start.Before(cut) })
	clear(h.recent[:i])
	h.recent = h.recent[i:]
	if cap(h.recent) > 64 && len(h.recent) < cap(h.recent)/4 {
		h.recent = append([]*api.RecordedTxn(nil), h.recent...)
	}
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
