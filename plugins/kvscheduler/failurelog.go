package kvscheduler

import (
	"sync"
	"time"
)

// RepeatedFailureLogInterval is how long the same failure of a key (same error text)
// is logged at debug level only, after it was logged as a warning: a value that keeps
// failing (retries, healing resyncs) warns once, then at most once per interval, with
// the number of repetitions in between (field "repeated").
const RepeatedFailureLogInterval = time.Minute

// failureLogLimit is the number of keys whose last failure is remembered; beyond it,
// the entries older than RepeatedFailureLogInterval are forgotten.
const failureLogLimit = 1024

// failureLog decides which failed operations are logged as warnings.
type failureLog struct {
	mu   sync.Mutex
	keys map[string]*loggedFailure
}

// loggedFailure is the last failure of a key logged as a warning.
type loggedFailure struct {
	err        string
	at         time.Time
	suppressed int // repetitions logged at debug since
}

// warn tells whether the failure of key with errText at now is to be logged as a
// warning and, if so, how many repetitions of the previous warning were not.
func (f *failureLog) warn(key, errText string, now time.Time) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.keys[key]; ok && last.err == errText && now.Sub(last.at) < RepeatedFailureLogInterval {
		last.suppressed++
		return false, 0
	}
	suppressed := 0
	if last, ok := f.keys[key]; ok && last.err == errText {
		suppressed = last.suppressed
	}
	if f.keys == nil {
		f.keys = make(map[string]*loggedFailure)
	}
	if len(f.keys) >= failureLogLimit {
		for k, e := range f.keys {
			if now.Sub(e.at) >= RepeatedFailureLogInterval {
				delete(f.keys, k)
			}
		}
	}
	f.keys[key] = &loggedFailure{err: errText, at: now}
	return true, suppressed
}
