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
//	    ├─ no write in progress: the caller writes the buffer at once, in its own
//	    │  goroutine (a lone request costs one syscall and no goroutine hop), and goes
//	    │  on writing whatever other senders appended meanwhile
//	    └─ a write in progress: the frame waits, and the writer sends it together with
//	       every other waiting frame in its next syscall (group commit). The pending
//	       buffer is bounded (Options.MaxPendingBytes): when the peer stops reading,
//	       senders block until there is room, the connection fails, or Disconnect.
//
//	reader goroutine ── bufio.Reader (Options.ReadBufferSize) ──> MsgCallback per message
//	    a message that fits the buffer is handed over in place (no copy; govpp's core
//	    copies what it keeps), a larger one through a scratch buffer
//
//	Disconnect ──> sockclnt_delete{index} (queued behind pending frames), waits up to
//	    Options.DisconnectTimeout for VPP to close, closes the socket, waits for the
//	    reader goroutine. Idempotent; senders blocked on a full buffer get an error.
//
// Errors: a failed write or read breaks the connection for good; the sender whose
// write failed gets the error and so does every later SendMsg, until the next Connect.
// Frames that were queued behind a failed write are dropped (their requests time out
// in govpp, which then reconnects). Every error names the socket path.
//
// Not done here: VPP's shared-memory transport, the stats socket, and message
// tracing (govpp's core traces).
package vppsock
