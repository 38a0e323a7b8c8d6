package kvscheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/jsonpage"
	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

// Registrar is what RegisterHandlers needs of an HTTP router (an *http.ServeMux
// fits). Patterns use the Go 1.22 ServeMux syntax ("GET /path").
type Registrar interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// REST paths served by RegisterHandlers.
const (
	TxnHistoryPath       = "/scheduler/txn-history"
	DumpPath             = "/scheduler/dump"
	StatusPath           = "/scheduler/status"
	KeyTimelinePath      = "/scheduler/key-timeline"
	GraphSnapshotPath    = "/scheduler/graph-snapshot"
	DownstreamResyncPath = "/scheduler/downstream-resync"
)

// Retry policy of a downstream resync requested over REST with retry=true.
const (
	restResyncRetryPeriod   = time.Second
	restResyncRetryMaxCount = 3
)

// RegisterHandlers registers the scheduler's REST API:
//
//	GET  /scheduler/txn-history       ?seq-num=N | ?since=UNIX&until=UNIX | ?last=N [&limit=N]
//	GET  /scheduler/dump              ?descriptor=NAME&key-prefix=P&view=NB|SB|cached
//	GET  /scheduler/status            [?key=K | ?key-prefix=P]
//	GET  /scheduler/key-timeline      ?key=K
//	GET  /scheduler/graph-snapshot    [?key-prefix=P]
//	POST /scheduler/downstream-resync [?retry=true&verbose=true]
//
// Bodies are JSON; proto values are encoded with protojson.
func (s *Scheduler) RegisterHandlers(r Registrar) {
	r.HandleFunc("GET "+TxnHistoryPath, s.handleTxnHistory)
	r.HandleFunc("GET "+DumpPath, s.handleDump)
	r.HandleFunc("GET "+StatusPath, s.handleStatus)
	r.HandleFunc("GET "+KeyTimelinePath, s.handleKeyTimeline)
	r.HandleFunc("GET "+GraphSnapshotPath, s.handleGraphSnapshot)
	r.HandleFunc("POST "+DownstreamResyncPath, s.handleDownstreamResync)
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	infra.WriteError(w, code, fmt.Sprintf(format, args...))
}

func parseUnixParam(r *http.Request, name string) (time.Time, bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, false, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("parameter %s=%q: want unix time in seconds", name, v)
	}
	return time.Unix(sec, 0), true, nil
}

// handleTxnHistory answers with one transaction (?seq-num=) or a page of them: at most
// ?limit= (default jsonpage.DefaultLimit, at most jsonpage.MaxLimit), the oldest of a
// ?since=/?until= selection, else the newest (?last=N: the N newest, within the limit).
// The X-Contiv-More header counts the transactions left out; they are encoded one at a
// time.
func (s *Scheduler) handleTxnHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if v := q.Get("seq-num"); v != "" {
		seq, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "parameter seq-num=%q: want a transaction sequence number", v)
			return
		}
		txn := s.GetRecordedTransaction(seq)
		if txn == nil {
			writeError(w, http.StatusNotFound, "transaction #%d is not recorded", seq)
			return
		}
		infra.WriteJSON(w, http.StatusOK, txn)
		return
	}
	limit, err := jsonpage.Limit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "parameter %v", err)
		return
	}
	last := 0
	if v := q.Get("last"); v != "" {
		if last, err = strconv.Atoi(v); err != nil || last < 0 {
			writeError(w, http.StatusBadRequest, "parameter last=%q: want a non-negative number of transactions", v)
			return
		}
	}
	since, hasSince, err := parseUnixParam(r, "since")
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	until, hasUntil, err := parseUnixParam(r, "until")
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if hasUntil {
		until = until.Add(time.Second - 1) // include the whole second
		if until.Before(since) {
			writeError(w, http.StatusBadRequest, "until is before since")
			return
		}
	}
	// The history hands out the record pointers only (8 bytes a transaction).
	txns := s.GetTransactionHistory(since, until)
	var left int
	switch {
	case hasSince || hasUntil:
		txns, left = jsonpage.Oldest(txns, limit)
	case q.Get("last") != "":
		txns = txns[len(txns)-min(last, len(txns)):]
		txns, left = jsonpage.Newest(txns, limit)
	default:
		txns, left = jsonpage.Newest(txns, limit)
	}
	if err := jsonpage.Write(w, txns, left); err != nil && s.log != nil {
		s.log.WithError(err).Debug("transaction history answer cut short")
	}
}

// dumpEntry is one value in the /scheduler/dump response.
type dumpEntry struct {
	Key        string          `json:"key"`
	Descriptor string          `json:"descriptor"`
	Value      json.RawMessage `json:"value"`
	Origin     api.ValueOrigin `json:"origin"`
	Metadata   any             `json:"metadata,omitempty"`
}

func (s *Scheduler) handleDump(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	descName, prefix := q.Get("descriptor"), q.Get("key-prefix")
	view := api.SBView
	if v := q.Get("view"); v != "" {
		var err error
		if view, err = api.ParseView(v); err != nil {
			writeError(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	var names []string
	switch {
	case descName != "":
		names = []string{descName}
	case prefix != "":
		names = s.DescriptorNames()
	default:
		writeError(w, http.StatusBadRequest, "parameter descriptor or key-prefix is required")
		return
	}
	out := []dumpEntry{}
	for _, name := range names {
		kvs, err := s.DumpValuesByDescriptor(name, view)
		switch {
		case errors.Is(err, api.ErrUnknownDescriptor):
			writeError(w, http.StatusBadRequest, "unknown descriptor %q", name)
			return
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		for _, kv := range kvs {
			if !strings.HasPrefix(kv.Key, prefix) {
				continue
			}
			val, err := api.MarshalProtoJSON(kv.Value)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "encode %s: %v", kv.Key, err)
				return
			}
			out = append(out, dumpEntry{Key: kv.Key, Descriptor: name, Value: val, Origin: kv.Origin,
				Metadata: jsonableMetadata(kv.Metadata)})
		}
	}
	infra.WriteJSON(w, http.StatusOK, out)
}

// jsonableMetadata returns md if encoding/json can encode it, its %+v text otherwise.
func jsonableMetadata(md api.Metadata) any {
	if md == nil {
		return nil
	}
	if _, err := json.Marshal(md); err != nil {
		return fmt.Sprintf("%+v", md)
	}
	return md
}

func (s *Scheduler) handleStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if key := q.Get("key"); key != "" {
		infra.WriteJSON(w, http.StatusOK, s.GetValueStatus(key))
		return
	}
	infra.WriteJSON(w, http.StatusOK, s.AllValueStatuses(q.Get("key-prefix")))
}

func (s *Scheduler) handleKeyTimeline(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		writeError(w, http.StatusBadRequest, "parameter key is required")
		return
	}
	tl := s.KeyTimeline(key)
	if tl == nil {
		tl = []KeyTimelineEntry{}
	}
	infra.WriteJSON(w, http.StatusOK, tl)
}

func (s *Scheduler) handleGraphSnapshot(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if t := q.Get("time"); t != "" {
		writeError(w, http.StatusBadRequest, "parameter time=%q: only the current graph is kept (use /scheduler/key-timeline and /scheduler/txn-history for the past)", t)
		return
	}
	nodes, err := s.GraphSnapshot(q.Get("key-prefix"))
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if nodes == nil {
		nodes = []GraphNode{}
	}
	infra.WriteJSON(w, http.StatusOK, nodes)
}

// resyncResponse is the body of POST /scheduler/downstream-resync.
type resyncResponse struct {
	SeqNum uint64 `json:"seqNum"`
	Error  string `json:"error,omitempty"`
}

func (s *Scheduler) handleDownstreamResync(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	parseBool := func(name string) (bool, bool) {
		v := q.Get(name)
		if v == "" {
			return false, true
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "parameter %s=%q: want true or false", name, v)
			return false, false
		}
		return b, true
	}
	retry, ok := parseBool("retry")
	if !ok {
		return
	}
	verbose, ok := parseBool("verbose")
	if !ok {
		return
	}
	ctx := api.WithResync(context.WithoutCancel(r.Context()), api.DownstreamResync, verbose)
	ctx = api.WithDescription(ctx, "downstream resync requested over REST")
	if retry {
		ctx = api.WithRetry(ctx, restResyncRetryPeriod, restResyncRetryMaxCount, true)
	}
	seq, err := s.StartNBTransaction().Commit(ctx)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, api.ErrClosedScheduler) {
			code = http.StatusServiceUnavailable
		}
		infra.WriteJSON(w, code, resyncResponse{SeqNum: seq, Error: err.Error()})
		return
	}
	infra.WriteJSON(w, http.StatusOK, resyncResponse{SeqNum: seq})
}
