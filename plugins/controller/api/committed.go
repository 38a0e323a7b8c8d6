package api

// CommitObserver is an optional interface of an EventHandler. After the controller
// committed the transaction of an update event the handler took part in (Update
// returned without error), it calls Committed with the event and the commit's
// error: nil means that everything the event staged is programmed (an update that
// staged nothing counts as programmed when its handlers finished). It is not called
// for resyncs, nor for an event stopped by an aborting handler. Committed runs in the
// event loop and must return quickly; it is how a handler measures the time from a
// change to its programming (contiv_network_programming_duration_seconds).
type CommitObserver interface {
	Committed(event Event, err error)
}
