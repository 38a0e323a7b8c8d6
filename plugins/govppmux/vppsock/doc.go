// Package vppsock is a client of VPP's binary API over its unix socket
// (/run/vpp/api.sock): an implementation of govpp's adapter.VppAPI that core.Connection
// drives, written for pipelined traffic.
//
//	Connect ──> dial (connect-timeout) ──> sockclnt_create{name}  (message ID 15, fixed)
//	             <── sockclnt_create_reply{client index, message table}
//	             │   the table (name_crc -> ID) answers GetMsgID until the next Connect
//	             ▼
//	SendMsg(ctx, payload) ── copies the frame (16-byte header, length at bytes 8..11;
//	    │                    client index and context patched into the copy) into the
//	    │                    pending buffer
//	    ├─ a write in progress: the frame waits, and the writer sends it together with
//	    │  every other waiting frame in its next syscall (group commit)
//	    ├─ no write in progress, no request outstanding (a lone request, or a sender
//	    │  that waits for each reply): the caller writes at once, in its own goroutine
//	    │  (one syscall, no goroutine hop)
//	    └─ no write in progress, requests outstanding (a pipeline: the sender did not
//	       wait for the earlier replies, more frames are coming): the flusher goroutine
//	       is woken and the caller returns; by the time the flusher runs, the sender has
//	       usually queued more frames, and they all go in one syscall. govpp's core
//	       sends each channel's requests from one goroutine, so without this a
//	       pipelined channel would still cost one syscall per message.
//	    The pending buffer is bounded (Options.MaxPendingBytes): when the peer stops
//	    reading, senders block until there is room, the connection fails, or
//	    Disconnect.
//
//	reader goroutine ── bufio.Reader (Options.ReadBufferSize) ──> MsgCallback per message
//	    a message that fits the buffer is handed over in place (no copy; govpp's core
//	    copies what it keeps), a larger one through a scratch buffer
//
//	Disconnect ──> sockclnt_delete{index} (queued behind pending frames), waits up to
//	    Options.DisconnectTimeout for VPP to close, closes the socket, waits for the
//	    connection's two goroutines (reader, flusher) to end. Idempotent; senders
//	    blocked on a full buffer get an error.
//
// "Outstanding" is approximate: +1 per request sent, -1 per message read, never below
// zero. A count that stays high by mistake only routes lone requests through the
// flusher (one goroutine hop), it never delays a frame.
//
// Errors: a failed write or read breaks the connection for good; the sender whose
// write failed gets the error (when it wrote itself) and so does every later
// SendMsg, until the next Connect.
//
// Loss: when the reader's read fails while Disconnect did not start (VPP closed the
// socket: EOF; reset it: ECONNRESET; or any other read error), the connection is
// lost. Its error wraps ErrConnectionLost and names the socket and the cause, and the
// LossCallback (SetLossCallback) is called with it at once, once per connection, from
// the reader: the user learns that VPP went away without waiting for a health probe.
// Our own Disconnect (VPP closes the socket after sockclnt_delete) and the Connect
// that replaces a live connection are never reported. MessageTableDigest tells
// whether a new connection's message table is the old one's (VPP restarted with the
// same binary), so that cached message IDs may be kept.
// Frames that were queued behind a failed write are dropped (their requests time out
// in govpp, which then reconnects). Every error names the socket path.
//
// Figures (messages per second and per write, CPU and allocations per message, both
// transports): docs/PERFORMANCE.md, "VPP API transport".
//
// Not done here: VPP's shared-memory transport, the stats socket, and message
// tracing (govpp's core traces).
package vppsock
