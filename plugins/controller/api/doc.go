// Package api is the contract between the controller's event loop and the plugins that
// handle its events (contivconf, nodesync, podmanager, ipam, ipnet, service, ...).
//
// An Event enters the loop through EventLoop.PushEvent. The loop asks every registered
// EventHandler whether it HandlesEvent, then calls Resync (for resync methods) or Update
// (for Update events, in the event's Direction) on each interested handler in turn. Handlers
// never touch the dataplane: they stage key-value pairs in the transaction they are given
// (ResyncOperations / UpdateOperations), and the controller commits the whole event as one
// transaction to the KV scheduler. When an Update event of type RevertOnFailure fails, the
// handlers that already ran are asked to Revert their internal state, in reverse order.
//
// Errors returned by handlers may be wrapped in FatalError (the agent must restart) or
// AbortEventError (stop processing this event, resync soon).
package api
