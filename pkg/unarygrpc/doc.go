// Package unarygrpc makes a single unary gRPC call over HTTP/2 cleartext, on a
// connection it opens for that call alone and closes before returning.
//
// It exists for short-lived processes such as the CNI plugin binary contiv-cni,
// which the container runtime starts for every pod operation and which makes
// exactly one call to the agent before it exits. For such a process the client
// machinery of google.golang.org/grpc (its package initialisation, name
// resolver, load balancer, transport goroutines and connection state machine)
// costs more than the call itself: against a local grpc-go server,
// grpc.NewClient + one unary call + Close takes two to three times as long as [Call]
// even in a warm process (compare BenchmarkGRPCGoClient with BenchmarkCall),
// and more in a freshly started one. This package imports neither
// google.golang.org/grpc nor net/http nor golang.org/x/net/http2; it uses only
// the HPACK coder of golang.org/x/net/http2/hpack, the status codes of
// google.golang.org/grpc/codes and google.golang.org/protobuf/proto.
//
// [Call] dials the server, writes the HTTP/2 client preface, a SETTINGS frame,
// the request HEADERS and as much of the request DATA as the initial flow
// control windows allow in one write, and then runs a single-goroutine loop
// that reads the server's frames, answers SETTINGS and PING, returns flow
// control credit for received DATA, sends the rest of the request as the
// server grants window, and ends when the server's trailers arrive. Failures
// are reported as [*Error] values carrying a gRPC status code, following the
// code mapping grpc-go uses where it matters to callers (an unreachable
// server is codes.Unavailable, an expired context codes.DeadlineExceeded).
//
// What it deliberately does not do:
//   - no TLS or other transport security: the server is reached in cleartext
//     (h2c with prior knowledge), meant for a unix socket or a local address;
//   - no compression: it never sends grpc-encoding or grpc-accept-encoding and
//     rejects compressed response messages;
//   - no streaming: exactly one request message and one response message;
//   - no retries, no name resolution beyond what net.Dialer does, no load
//     balancing, no keepalive, no metadata beyond the headers it needs, and no
//     access to response headers or trailers other than the status;
//   - one call per connection: the connection is never reused.
//
// A server that accepts the connection but sends no HTTP/2 preface (its first
// SETTINGS frame) within 5 s fails the call with codes.Unavailable: a socket that is
// open but not served yet. After the preface, calls without a deadline on their
// context wait as long as the server takes; callers should always pass a context with
// a deadline.
package unarygrpc
