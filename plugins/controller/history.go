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
	records    []*EventRecord
	sizes      []int // parallel to records
	bytes      int   // sum of sizes
	permCount  int   // records[:permCount] belong to the init period
	permBytes  int
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
		n += r.Txn.ApproxSize()
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
	h.records = append(h.records, rec)
	h.sizes = append(h.sizes, size)
	h.bytes += size
	if rec.ProcessingStart.Before(h.permanent) {
		h.permCount++
		h.permBytes += size
	}
	h.bound()
}

// bound drops records while the history is over maxRecords or maxBytes.
func (h *eventHistory) bound() {
	over := func(n, bytes, maxN, maxBytes int) bool {
		return (maxN > 0 && n > maxN) || (maxBytes > 0 && bytes > maxBytes)
	}
	var drop []int // indexes to drop, ascending
	n, bytes := len(h.records), h.bytes
	perm, permBytes := 0, 0 // the init period's records still kept, from the start
	nextRecent := h.permCount
	for n > 1 && over(n, bytes, h.maxRecords, h.maxBytes) {
		permOverHalf := over(h.permCount-perm, h.permBytes-permBytes, h.maxRecords/2, h.maxBytes/2)
		recentLeft := len(h.records) - nextRecent
		if (recentLeft > 1 && !permOverHalf) || perm == h.permCount {
			drop = append(drop, nextRecent)
			bytes -= h.sizes[nextRecent]
			nextRecent++
		} else {
			drop = append(drop, perm)
			bytes -= h.sizes[perm]
			permBytes += h.sizes[perm]
			perm++
		}
		n--
	}
	if len(drop) == 0 {
		return
	}
	dropped := make(map[int]bool, len(drop))
	for _, i := range drop {
		dropped[i] = true
	}
	keptRecs := make([]*EventRecord, 0, len(h.records)-len(drop))
	keptSizes := make([]int, 0, len(h.records)-len(drop))
	for i, r := range h.records {
		if !dropped[i] {
			keptRecs = append(keptRecs, r)
			keptSizes = append(keptSizes, h.sizes[i])
		}
	}
	h.records, h.sizes, h.bytes = keptRecs, keptSizes, bytes
	h.permCount -= perm
	h.permBytes -= permBytes
}

// trim drops records older than the age limit, keeping the init period's.
func (h *eventHistory) trim(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cutoff := now.Add(-h.ageLimit)
	keptRecs := h.records[:0]
	keptSizes := h.sizes[:0]
	for i, r := range h.records {
		if i < h.permCount || !r.ProcessingStart.Before(cutoff) {
			keptRecs = append(keptRecs, r)
			keptSizes = append(keptSizes, h.sizes[i])
			continue
		}
		h.bytes -= h.sizes[i]
	}
	clear(h.records[len(keptRecs):])
	h.records, h.sizes = keptRecs, keptSizes
}

// snapshot returns the records (shared, read-only) in processing order.
func (h *eventHistory) snapshot() []*EventRecord {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return append([]*EventRecord(nil), h.records...)
}
