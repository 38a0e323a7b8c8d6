package controller

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
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

// serveEventHistory answers with the recorded events, selected by (in precedence order)
// seq-num, since/until (unix seconds), from/to (sequence numbers, both needed), first,
// last; without arguments the whole history.
func (c *Controller) serveEventHistory(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	records := c.history.snapshot()
	uintArg := func(name string) (uint64, bool, error) {
		s := q.Get(name)
		if s == "" {
			return 0, false, nil
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %q is not a non-negative integer", name, s)
		}
		return v, true, nil
	}
	var args = map[string]uint64{}
	var given = map[string]bool{}
	for _, name := range []string{"seq-num", "since", "until", "from", "to", "first", "last"} {
		v, ok, err := uintArg(name)
		if err != nil {
			infra.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		args[name], given[name] = v, ok
	}

	var out []*EventRecord
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
		for _, r := range records {
			if !r.ProcessingStart.Before(since) && !r.ProcessingStart.After(until) {
				out = append(out, r)
			}
		}
	case given["from"] || given["to"]:
		if !given["from"] || !given["to"] {
			infra.WriteError(w, http.StatusBadRequest, "from and to must be given together")
			return
		}
		for _, r := range records {
			if r.SeqNum >= args["from"] && r.SeqNum <= args["to"] {
				out = append(out, r)
			}
		}
	case given["first"]:
		n := min(int(args["first"]), len(records))
		out = records[:n]
	case given["last"]:
		n := min(int(args["last"]), len(records))
		out = records[len(records)-n:]
	default:
		out = records
	}
	if out == nil {
		out = []*EventRecord{}
	}
	infra.WriteJSON(w, http.StatusOK, out)
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
