// Package cni holds the Remote CNI gRPC API (cni.proto) between the contiv-cni binary and
// the agent's pod manager, with the code protoc generates from it. The service name, the
// Add and Delete rpcs and the field numbers of CNIRequest and CNIReply are upstream
// Contiv-VPP's; the Check rpc is this port's addition.
//
// Beyond the messages, the wire contract is:
//   - CNIRequest.extra_arguments carries CNI_ARGS; the agent takes the pod from its
//     K8S_POD_NAME and K8S_POD_NAMESPACE.
//   - A reply with Result == ResultOK succeeded; ResultError means the agent processed the
//     request and refused it or failed (Error says why). Such failures are final: trying
//     again with the same request gives the same answer.
//   - A gRPC status error instead of a reply means the agent could not process the
//     request now and the caller may try again later: codes.Unavailable (the event loop
//     took no event: queue full, agent starting or stopping) or codes.DeadlineExceeded
//     (the request's event was not processed in time).
package cni

// Values of CNIReply.Result.
const (
	// ResultOK is the result of a request that succeeded.
	ResultOK uint32 = 0
	// ResultError is the result of a request that failed; CNIReply.Error says why.
	ResultError uint32 = 1
)
