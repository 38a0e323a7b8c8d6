// Package cniplugin is the logic of contiv-cni, the CNI plugin of Contiv-VPP. The
// container runtime executes the binary for every CNI command; it does no networking itself but forwards the command over gRPC
// (the RemoteCNI service of plugins/podmanager/cni) to the contiv agent on the node, which
// wires the pod into VPP, and turns the agent's reply into a CNI result.
//
// It speaks CNI spec 1.1 (and accepts configurations of 0.3.0 to 1.1.0):
//
//	ADD      optional IPAM plugin first (its result goes to the agent as ipam_data),
//	         then RemoteCNI.Add; the result has the agent's interfaces (eth0 with its
//	         MAC and sandbox), IPs with gateway and interface index, routes and DNS.
//	         When the ADD fails after the IPAM plugin ran, the IPAM allocation is released.
//	DEL      RemoteCNI.Delete, then the IPAM plugin's DEL. A DEL for a pod the agent does
//	         not know succeeds, so a repeated DEL succeeds. A DEL whose removal the agent
//	         cannot persist yet (a full disk) fails with "try again later" (11) until a
//	         retry succeeds; the IPAM plugin's DEL then runs with the retry.
//	CHECK    needs prevResult (the runtime's cached ADD result); RemoteCNI.Check verifies
//	         that the agent has the pod with this container and netns, that the netns
//	         still exists, and that its network is in place (wired by ipnet, its VPP
//	         and Linux interfaces configured in the scheduler); then contiv-cni looks
//	         into the pod's netns (a netlink handle bound to it) for what prevResult
//	         records: the interface, up, with its MAC, each of its addresses, each
//	         route; then the IPAM plugin's CHECK.
//	STATUS   success when the agent's socket accepts a connection (and the IPAM plugin's
//	         STATUS succeeds).
//	GC       not forwarded to the agent (it forgets a pod on DEL, and recovers only pods
//	         whose network namespace exists after a restart); passed to the IPAM plugin,
//	         if any, so it can release stale allocations.
//	VERSION  the supported versions.
//
// Network configuration keys besides the standard ones:
//
//	grpcServer     mandatory: the agent's address, a unix socket path if it starts with
//	               "/", else TCP host:port
//	logFile        where each request is logged (default /tmp/contiv-cni.log; "" logs to
//	               the plugin's stderr, which the runtime usually keeps); rotated to
//	               <logFile>.1 at 4 MiB
//	etcdEndpoints  accepted for compatibility with upstream configurations, unused
//
// Errors are printed as the spec's error JSON (cniVersion, code, msg, details) with the
// configuration's cniVersion, or 1.1.0 when it has none that contiv-cni supports.
// Error codes (the "code" of the CNI error JSON):
//
//	3    CHECK: the pod's network namespace does not exist (or is no namespace),
//	     found by the agent (cni.ResultUnknownContainer) or by contiv-cni
//	4    invalid CNI_* environment variables (checked by the CNI library); CNI_ARGS
//	     whose K8S_POD_NAME or K8S_POD_NAMESPACE breaks the Kubernetes name rules
//	     (checked here and by the agent); a request the agent refuses as invalid
//	     (cni.ResultInvalid: a container ID bound to another pod, no netns)
//	5    the agent's socket may not be opened (permission denied): retrying the
//	     same call cannot succeed
//	6    the configuration or prevResult cannot be decoded
//	7    invalid network configuration: no grpcServer, or one that is neither an
//	     absolute socket path nor host:port; a prevResult on ADD (contiv-cni must be
//	     the first plugin of a chain); no prevResult on CHECK; a configuration on
//	     stdin larger than MaxConfigSize (1 MiB; the read stops there)
//	11   try again later: the agent cannot be reached, is not processing events yet,
//	     is stopping (its event loop ended the request's event unprocessed), or did
//	     not answer in time (gRPC status Unavailable, DeadlineExceeded, ...); or the
//	     agent failed the ADD and reverted it
//	     (cni.ResultTryAgain: a VPP or Linux error of the transaction, no free IP,
//	     the pod state not durable); the runtime retries
//	50   STATUS only: the agent is not available (its socket accepts no connection)
//	999  the agent processed the request and failed it otherwise (its message is the
//	     error message, e.g. a missing K8S_POD_NAME), its reply was unusable, or CHECK
//	     found the pod's network not as the ADD set it up (the message names what
//	     differs)
//
// Errors of a delegated IPAM plugin are passed through with their own codes.
package cniplugin
