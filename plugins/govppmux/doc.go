// Package govppmux owns the agent's connection to VPP's binary API and hands out govpp
// channels to the plugins that program VPP (the descriptors of plugins/vpp/...).
//
//	Init ──> govpp.conf (defaults, validation) ──> transport ──> core.AsyncConnect
//	           socket-client: vppsock (default, package vppsock: writes of
//	           concurrent senders batched, replies read through a large buffer)
//	           or govpp (govpp's adapter/socketclient, the fallback)
//	           │ waits for the first Connected event, logs show_version
//	           ▼
//	plugins: RegisterMessages(msgs...) ──> AfterInit: CheckCompatiblity(all) ──> error
//	           naming every message VPP does not know (start-up fails)
//	           ▼
//	watch goroutine: govpp connection events
//	   Disconnected / NotResponding ──> health INIT, reconnect attempts paced by
//	                       retryingAdapter: capped exponential backoff
//	                       (retry-connect-timeout doubling up to
//	                       retry-connect-max-timeout, on Deps.Clock), for as long
//	                       as the agent runs; each failure reported (INIT + reason)
//	   Connected again ──> version + messages checked again, health OK,
//	                       Deps.OnReconnect called (cmd/contiv-agent pushes a
//	                       HealingResync{AfterError}: the controller then runs a
//	                       full resync, VPP may have restarted empty)
//	   start-up only: retry-connect-count failed attempts ──> Init fails
//
// Health probing is govpp's own: core pings VPP every health-check-probe-interval and
// reports a disconnect after health-check-threshold timeouts. govpp keeps these
// settings in package variables of go.fd.io/govpp/core; Init sets them from govpp.conf
// (only when they differ, so several plugins with the same configuration never race).
// That is the one piece of process-wide state this package touches.
//
// Channels handed out stay valid across reconnects (govpp re-learns the message table
// on the same connection); requests sent while VPP is away fail, which descriptors
// report as retriable errors. Pipeline, PipelineEach, Dump and DumpEach help
// descriptors batch requests: a window of requests is sent before the first reply is
// read, saving round trips. Window(ch) is that window: ChannelWindow (256) on the
// channels this plugin hands out, whose reply buffers hold twice as many, and
// DefaultWindow (64) on any other channel (govpp drops replies that find a full reply
// buffer for 100 ms, so a window must never exceed the buffer). Pipelines go through
// the channel's Pipe (NewPipe): on the plugin's channels it sends over a stream of
// govpp's core opened for the channel, written by the caller's goroutine and with one
// watchdog per stream instead of two timers per reply (about half the CPU per
// message); NewChannel opens such a channel on a connection of the caller's. The plugin also
// implements govppapi.Connection (streams, Invoke, WatchEvent) for requests channels
// cannot carry.
//
// Not done here: statistics (the stats socket is only checked for presence and
// otherwise ignored), shared-memory transport, the govpp proxy, request tracing.
package govppmux
