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
//	watch goroutine: govpp connection events, and vppsock's loss reports
//	   socket lost (vppsock: VPP closed or reset the socket, a read failed; at once)
//	   or Disconnected / NotResponding (govpp's health check)
//	                   ──> health INIT naming the cause, not connected, the
//	                       connection's context cancelled with the cause (pipes
//	                       waiting for replies fail at once, wrapping
//	                       ErrConnectionLost), failed sends name the loss; a second
//	                       notice of the same loss (core's probe) is not reported
//	                       again
//	                   ──> reconnect attempts paced by retryingAdapter: capped
//	                       exponential backoff (retry-connect-timeout doubling up
//	                       to retry-connect-max-timeout, on Deps.Clock), for as long
//	                       as the agent runs; each failure reported (INIT + reason).
//	                       After a socket loss the plugin makes the attempts itself,
//	                       underneath govpp's core (core still believes it is
//	                       connected, and keeps its channels and message IDs); after
//	                       a health-check verdict core's own loop makes them
//	   Connected again ──> version + messages checked again, health OK,
//	                       Deps.OnReconnect called (cmd/contiv-agent pushes a
//	                       HealingResync{AfterError}: the controller then runs a
//	                       full resync, VPP may have restarted empty)
//	   start-up only: retry-connect-count failed attempts ──> Init fails
//	   not answered for liveness-timeout (90 s) ──> health ERROR (watchdog.go):
//	                       /liveness fails, the kubelet restarts the vswitch
//	                       container and VPP with it; OK again if VPP answers first
//
// Loss detection. With the vppsock transport (the default), the loss of the socket is
// known at once: vppsock's reader reports it (vppsock.LossCallback), never for our
// own Disconnect or Close. govpp's core offers no way to be told of a disconnect (it
// learns of one only from its health probe), so the plugin reconnects the transport
// itself, underneath core: this is sound only if VPP came back with the same message
// table (core caches message IDs), which vppsock's MessageTableDigest tells. If the
// table changed, the plugin disconnects again and core's next health probe fails,
// making core reconnect and relearn the IDs (one probe interval later). If core's
// probe fails while the plugin is reconnecting, core's loop takes over (the adapter
// counts core's Disconnect calls; one Connect at a time), so there are never two
// reconnects of one loss. Requests in flight on a channel (SendRequest/ReceiveReply
// rather than a Pipe) still wait for their reply timeout: core's channels cannot be
// interrupted from outside.
//
// Health probing is govpp's own, and the only detection with govpp's socketclient and
// for a VPP that hangs with the socket open: core pings VPP every
// health-check-probe-interval; a probe that fails (the socket is gone) reports
// Disconnected, health-check-threshold probes in a row that time out report
// NotResponding. govpp keeps these settings in package variables of
// go.fd.io/govpp/core; Init sets them from govpp.conf (only when they differ, so
// several plugins with the same configuration never race). That is the one piece of
// process-wide state this package touches. These variables, and the other behaviours
// of govpp's core that the reconnect path relies on beyond its API (how its loop
// drives the adapter, when it calls the adapter's Disconnect), are named in
// govpp_internals.go and asserted against the pinned govpp by its test.
//
// Liveness. Reconnecting repairs a VPP that restarted; a VPP that hangs (stopped,
// deadlocked, its socket open) answers no attempt, and waiting does not repair it. So,
// as Felix fails its liveness when its dataplane loop stops, the watchdog (watchdog.go)
// reports the VPP component ERROR once VPP has stayed unanswered for liveness-timeout
// since the loss was noticed: every report passes through it, and the INIT of the
// failed reconnect attempts is raised to ERROR, with the socket, the time and the
// bound named. A connection that works again resets it.
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
