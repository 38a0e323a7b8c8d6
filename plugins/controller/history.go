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

// eventHistory keeps records in processing order, trimmed by age except for the ones of
// the agent's first minutes.
type eventHistory struct {
	mu        sync.RWMutex
	enabled   bool
	ageLimit  time.Duration
	permanent time.Time // records started before this are kept forever
	records   []*EventRecord
}

func newEventHistory(cfg Config, start time.Time) *eventHistory {
	return &eventHistory{
		enabled:   cfg.RecordEventHistory,
		ageLimit:  time.Duration(cfg.EventHistoryAgeLimit) * time.Minute,
		permanent: start.Add(time.Duration(cfg.PermanentlyRecordedInitPeriod) * time.Minute),
	}
}

func (h *eventHistory) add(rec *EventRecord) {
	if !h.enabled {
		return
	}
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
}

// trim drops records older than the age limit, keeping the permanent ones.
func (h *eventHistory) trim(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cutoff := now.Add(-h.ageLimit)
	kept := h.records[:0]
	for _, r := range h.records {
		if r.ProcessingStart.Before(h.permanent) || !r.ProcessingStart.Before(cutoff) {
			kept = append(kept, r)
		}
	}
	for i := len(kept); i < len(h.records); i++ {
		h.records[i] = nil
	}
	h.records = kept
}

// snapshot returns the records (shared, read-only) in processing order.
func (h *eventHistory) snapshot() []*EventRecord {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return append([]*EventRecord(nil), h.records...)
}
