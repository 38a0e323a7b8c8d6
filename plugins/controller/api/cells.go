package api

import (
	"time"

	"github.com/contiv-vpp/contiv-vpp/pkg/infra"
)

// EventHandlers is the group of the controller's event handlers. A cell contributes its
// handler here; the controller calls them in the cells' start order (each handler after
// those of the plugins it needs), Forward events in that order, Reverse events
// backwards.
var EventHandlers = infra.NewGroup[EventHandler]("event-handlers")

// EventLoopKey is the controller's event loop, which plugins hold to push events.
var EventLoopKey = infra.NewKey[EventLoop]("event-loop")

// ResyncRequester is the DB watcher as the controller sees it: it serves POST
// /controller/resync by asking the watcher for a resync of the Kubernetes state.
type ResyncRequester interface {
	RequestResync()
}

// DBResyncKey is the DB watcher's resync request, which the controller reads when it
// connects (the watcher itself holds the event loop, so the two meet in Connect).
var DBResyncKey = infra.NewKey[ResyncRequester]("dbwatcher/resync")

// WatcherTimingKey is the DB watcher's timing from controller.conf, asked at the
// watcher's Init (after the controller's Init loaded it).
var WatcherTimingKey = infra.NewKey[func() (delayLocalResync, remoteDBProbingInterval time.Duration)]("controller/watcher-timing")
