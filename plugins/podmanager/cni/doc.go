// Package cni holds the Remote CNI gRPC API (cni.proto) between the contiv-cni binary and
// the agent's pod manager, with the code protoc generates from it. The service name, the
// Add and Delete rpcs and the field numbers of CNIRequest and CNIReply are upstream
// Contiv-VPP's; the Check rpc is this port's addition.
//
// Beyond the messages, the wire contract is:
//   - CNIRequest.extra_arguments carries CNI_ARGS; the agent takes the pod from its
//     K8S_POD_NAME and K8S_POD_NAMESPACE.
//   - A reply with Result == ResultOK succeeded; the other results mean the agent
//     processed the request and refused it or failed (Error says why):
//     ResultError: an internal failure (CNI code 999);
//     ResultTryAgain: the request failed for a reason expected to pass (the dataplane
//     failed and the change was reverted, the pod state could not be made durable),
//     the kubelet should try again later (CNI code 11);
//     ResultInvalid: the request itself is wrong (pod name or namespace breaking the
//     Kubernetes name rules, a container ID bound to another pod, no netns); trying
//     again with the same request gives the same answer (CNI code 4, "invalid
//     necessary environment variables");
//     ResultUnknownContainer: CHECK found the pod's network namespace gone (CNI code 3,
//     "container unknown or does not exist").
//   - A gRPC status error instead of a reply means the agent could not process the
//     request now and the caller may try again later: codes.Unavailable (the event loop
//     took no event, or dropped it unprocessed: queue full, agent starting or stopping)
//     or codes.DeadlineExceeded
//     (the request's event was not processed in time).
package cni

// Values of CNIReply.Result.
const (
	// ResultOK is the result of a request that succeeded.
	ResultOK uint32 = 0
	// ResultError is the result of a request that failed; CNIReply.Error says why.
	ResultError uint32 = 1
	// ResultTryAgain is the result of a request that failed for a transient reason
	// (reverted): the caller should try again later.
	ResultTryAgain uint32 = 2
	// ResultInvalid is the result of a request refused as invalid: retrying the same
	// request cannot succeed.
	ResultInvalid uint32 = 3
	// ResultUnknownContainer is the result of a CHECK of a pod whose network namespace
	// no longer exists.
	ResultUnknownContainer uint32 = 4
)
