package controller

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
	"github.com/contiv-vpp/contiv-vpp/pkg/jsonpage"
)

// REST paths served by the controller.
const (
	EventHistoryPath = "/controller/event-history"
	ResyncPath       = "/controller/resync"
)

func (c *Controller) registerHandlers(r infra.HandlerRegistrar) {
	r.HandleFunc("GET "+EventHistoryPath, c.serveEventHistory)
	r.HandleFunc("POST "+ResyncPath, c.serveResync)
}

// serveEventHistory answers with a page of the recorded events, selected by (in
// precedence order) seq-num, since/until (unix seconds), from/to (sequence numbers,
// both needed), first, last; without arguments the latest ones. A page holds at most
// ?limit= records (default jsonpage.DefaultLimit, at most jsonpage.MaxLimit): the
// oldest of a since/until, from/to or first selection, the newest otherwise; the
// X-Contiv-More header counts the records left out. Records are encoded one at a time.
func (c *Controller) serveEventHistory(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	limit, err := jsonpage.Limit(q)
	if err != nil {
		infra.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	var args = map[string]uint64{}
	var given = map[string]bool{}
	for _, name := range []string{"seq-num", "since", "until", "from", "to", "first", "last"} {
		s := q.Get(name)
		if s == "" {
			continue
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			infra.WriteError(w, http.StatusBadRequest, fmt.Sprintf("%s: %q is not a non-negative integer", name, s))
			return
		}
		args[name], given[name] = v, true
	}
	if (given["from"] || given["to"]) && !(given["from"] && given["to"]) {
		infra.WriteError(w, http.StatusBadRequest, "from and to must be given together")
		return
	}

	// The snapshot copies the record pointers only (8 bytes a record).
	records := c.history.snapshot()
	var out []*EventRecord
	left := 0
	switch {
	case given["seq-num"]:
		for _, r := range records {
			if r.SeqNum == args["seq-num"] {
				infra.WriteJSON(w, http.StatusOK, r)
				return
			}
		}
		infra.WriteError(w, http.StatusNotFound, fmt.Sprintf("seq-num: no event #%d in the history", args["seq-num"]))
		return
	case given["since"] || given["until"]:
		since := time.Unix(int64(args["since"]), 0)
		until := time.Now()
		if given["until"] {
			until = time.Unix(int64(args["until"]), 0)
		}
		out, left = selectOldest(records, limit, func(r *EventRecord) bool {
			return !r.ProcessingStart.Before(since) && !r.ProcessingStart.After(until)
		})
	case given["from"]:
		out, left = selectOldest(records, limit, func(r *EventRecord) bool {
			return r.SeqNum >= args["from"] && r.SeqNum <= args["to"]
		})
	case given["first"]:
		out, left = jsonpage.Oldest(records[:min(int(args["first"]), len(records))], limit)
	case given["last"]:
		out, left = jsonpage.Newest(records[len(records)-min(int(args["last"]), len(records)):], limit)
	default:
		out, left = jsonpage.Newest(records, limit)
	}
	if err := jsonpage.Write(w, out, left); err != nil {
		c.Log.WithError(err).Debug("event history answer cut short")
	}
}

// selectOldest returns the first limit records matching keep, and how many more match.
func selectOldest(records []*EventRecord, limit int, keep func(*EventRecord) bool) ([]*EventRecord, int) {
	var out []*EventRecord
	left := 0
	for _, r := range records {
		if !keep(r) {
			continue
		}
		if len(out) < limit {
			out = append(out, r)
		} else {
			left++
		}
	}
	return out, left
}

// serveResync asks the database watcher for a fresh snapshot.
func (c *Controller) serveResync(w http.ResponseWriter, _ *http.Request) {
	if c.DBWatcher == nil {
		infra.WriteError(w, http.StatusServiceUnavailable, "no database watcher: resync is not available")
		return
	}
	c.DBWatcher.RequestResync()
	infra.WriteJSON(w, http.StatusOK, map[string]string{"message": "database resync requested"})
}
