package controller

import (
	"sync"
	"time"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
	kvs "github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// EventRecord is what the history keeps about one processed event.
type EventRecord struct {
	SeqNum          uint64
	ProcessingStart time.Time
	ProcessingEnd   time.Time
	IsFollowUp      bool
	FollowUpTo      uint64
	Name            string
	Description     string
	Method          api.EventMethodType
	Handlers        []HandlerRecord
	TxnError        error  `json:"-"`
	TxnErrorStr     string `json:"TxnError,omitempty"`
	Txn             *kvs.RecordedTxn
}

// HandlerRecord is one handler's part in an event: its change description and error,
// or its revert.
type HandlerRecord struct {
	Handler  string
	Revert   bool
	Change   string
	Error    error `json:"-"`
	ErrorStr string
}

// eventHistory keeps records in processing order: those of the agent's first minutes
// (the init period) and later ones until they are older than the age limit, all within
// maxRecords and maxBytes. The init period's records may keep up to half of either
// bound; beyond that, and when no later record is left, their oldest go; otherwise the
// oldest later records go. The newest record always stays. A record's size is its
// strings plus the scheduler transaction it refers to (kvs.RecordedTxn.ApproxSize,
// itself bounded by the scheduler).
type eventHistory struct {
	mu         sync.RWMutex
	enabled    bool
	ageLimit   time.Duration
	permanent  time.Time // records started before this belong to the init period
	maxRecords int       // 0: no bound
	maxBytes   int       // 0: no bound
	// init and later hold the records of the init period and the later ones, in
	// processing order, with their sizes; dropping the oldest is O(1) amortized.
	init, later          []*EventRecord
	initSizes, lateSizes []int
	bytes, initBytes     int
}

func newEventHistory(cfg Config, start time.Time) *eventHistory {
	return &eventHistory{
		enabled:    cfg.RecordEventHistory,
		ageLimit:   time.Duration(cfg.EventHistoryAgeLimit) * time.Minute,
		permanent:  start.Add(time.Duration(cfg.PermanentlyRecordedInitPeriod) * time.Minute),
		maxRecords: cfg.EventHistoryMaxRecords,
		maxBytes:   cfg.EventHistoryMaxBytes,
	}
}

// eventRecordOverhead approximates a record without its strings and transaction.
const eventRecordOverhead = 256

// size estimates the memory a record holds.
func (r *EventRecord) size() int {
	n := eventRecordOverhead + len(r.Name) + len(r.Description) + len(r.TxnErrorStr)
	for _, h := range r.Handlers {
		n += eventRecordOverhead/4 + len(h.Handler) + len(h.Change) + len(h.ErrorStr)
	}
	if r.Txn != nil {
		// the heap the transaction's values keep alive, not their encoded size (a
		// DNAT44 takes about six times its encoding)
		n += r.Txn.ApproxMemory()
	}
	return n
}

func (h *eventHistory) add(rec *EventRecord) {
	if !h.enabled {
		return
	}
	size := rec.size()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bytes += size
	if rec.ProcessingStart.Before(h.permanent) {
		h.init = append(h.init, rec)
		h.initSizes = append(h.initSizes, size)
		h.initBytes += size
	} else {
		h.later = append(h.later, rec)
		h.lateSizes = append(h.lateSizes, size)
	}
	h.bound()
}

// bound drops the oldest records while the history is over maxRecords or maxBytes.
func (h *eventHistory) bound() {
	over := func(n, bytes, maxN, maxBytes int) bool {
		return (maxN > 0 && n > maxN) || (maxBytes > 0 && bytes > maxBytes)
	}
	for len(h.init)+len(h.later) > 1 && over(len(h.init)+len(h.later), h.bytes, h.maxRecords, h.maxBytes) {
		initOverHalf := over(len(h.init), h.initBytes, h.maxRecords/2, h.maxBytes/2)
		if (len(h.later) > 1 && !initOverHalf) || len(h.init) == 0 {
			h.bytes -= h.lateSizes[0]
			h.later, h.lateSizes = dropFirst(h.later, h.lateSizes, 1)
			continue
		}
		h.bytes -= h.initSizes[0]
		h.initBytes -= h.initSizes[0]
		h.init, h.initSizes = dropFirst(h.init, h.initSizes, 1)
	}
}

// dropFirst drops the n first records and sizes, releasing the backing arrays when they
// are mostly unused.
func dropFirst(recs []*EventRecord, sizes []int, n int) ([]*EventRecord, []int) {
	clear(recs[:n])
	recs, sizes = recs[n:], sizes[n:]
	if cap(recs) > 64 && len(recs) < cap(recs)/4 {
		recs = append([]*EventRecord(nil), recs...)
		sizes = append([]int(nil), sizes...)
	}
	return recs, sizes
}

// trim drops the later records older than the age limit.
func (h *eventHistory) trim(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cutoff := now.Add(-h.ageLimit)
	n := 0
	for n < len(h.later) && h.later[n].ProcessingStart.Before(cutoff) {
		h.bytes -= h.lateSizes[n]
		n++
	}
	if n > 0 {
		h.later, h.lateSizes = dropFirst(h.later, h.lateSizes, n)
	}
}

// snapshot returns the records (shared, read-only) in processing order.
func (h *eventHistory) snapshot() []*EventRecord {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*EventRecord, 0, len(h.init)+len(h.later))
	return append(append(out, h.init...), h.later...)
}
