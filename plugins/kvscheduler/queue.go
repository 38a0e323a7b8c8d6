package kvscheduler

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/contiv-vpp/contiv-vpp/plugins/kvscheduler/api"
)

type reqKind int

const (
	reqNB reqKind = iota
	reqSB
	reqRetry
	reqDump
)

const (
	reqQueued int32 = iota
	reqStarted
	reqCancelled
)

// request is one unit of work for the transaction goroutine.
type request struct {
	kind     reqKind
	ctx      context.Context
	values   []api.KeyValuePair   // reqNB
	sb       []api.KVWithMetadata // reqSB
	retry    retryReq             // reqRetry
	dumpDesc *descriptor          // reqDump

	state atomic.Int32
	done  chan struct{} // nil for fire-and-forget requests

	seq  uint64
	err  error
	dump []api.KVWithMetadata
}

// retryReq asks to retry failed operations of an earlier transaction.
type retryReq struct {
	keys    []retryKey
	attempt int // 1 for the first retry
	opt     api.RetryOpt
	origSeq uint64
}

// queue is an unbounded FIFO of requests. Pushing never blocks, so descriptors may
// push SB notifications from inside a transaction.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []*request
	head   int
	closed bool
}

func (q *queue) init() {
	q.cond = sync.NewCond(&q.mu)
}

func (q *queue) push(r *request) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, r)
	q.cond.Signal()
	return true
}

// pop waits for the next request; false once the queue is closed.
func (q *queue) pop() (*request, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.head == len(q.items) && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, false
	}
	r := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return r, true
}

// close stops the queue and returns the requests that will never run.
func (q *queue) close() []*request {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	rest := q.items[q.head:]
	q.items, q.head = nil, 0
	q.cond.Broadcast()
	return rest
}

// run is the transaction goroutine.
func (s *Scheduler) run() {
	defer s.wg.Done()
	for {
		r, ok := s.q.pop()
		if !ok {
			return
		}
		if !r.state.CompareAndSwap(reqQueued, reqStarted) {
			continue // cancelled while queued
		}
		switch r.kind {
		case reqNB:
			r.seq, r.err = s.execNB(r.ctx, r.values)
		case reqSB:
			s.execSB(r.sb)
		case reqRetry:
			s.execRetry(r.retry)
		case reqDump:
			r.dump, r.err = s.execDumpSB(r.dumpDesc)
		}
		if r.done != nil {
			close(r.done)
		}
		s.logSummaries()
	}
}
