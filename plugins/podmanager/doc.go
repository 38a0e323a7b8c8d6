// Package podmanager is the agent side of CNI: it serves the RemoteCNI gRPC API that
// contiv-cni calls, turns each CNI ADD/DEL into a blocking AddPod/DeletePod event for the
// controller, keeps the set of pods running on this node, and recovers it after a
// restart. It configures nothing itself: ipnet wires the pods when it handles the events.
//
// # Request flow
//
//	contiv-cni ──gRPC, unix socket /var/run/contiv/cni.sock──▶ podmanager server
//	  Add:    pod from CNI_ARGS (K8S_POD_NAME, K8S_POD_NAMESPACE), interface name from
//	          CNI_IFNAME (InterfaceName; "" = eth0; a name Linux refuses is invalid)
//	          CNI_NETNS: a path of at most MaxNetnsPathLen (63) bytes, VPP's limit for a
//	          TAP's host namespace (longer: refused naming the path, never cut)
//	          [pod known with another container/netns ⇒ DeletePod, wait for it]
//	          [pod known with this sandbox under another interface name ⇒ refused]
//	          AddPod ──PushEvent──▶ event loop: podmanager, ipam, ipnet, service ... (Forward,
//	          RevertOnFailure) ──Done──▶ reply with the interfaces/routes ipnet filled in
//	  Delete: DeletePod (Reverse, BestEffortIgnoreErrors); an unknown pod, a DEL of an
//	          older sandbox of the pod, or of another interface name than the pod's,
//	          succeeds without an event; a removal not durable yet (a full disk) is
//	          answered cni.ResultTryAgain, the retry persists it (see below)
//	  Check:  answered from the local pods (the netns must still exist, the interface
//	          name match) and CheckPodWiring, no event
//
// The agent wires one interface per pod, named after the ADD's CNI_IFNAME. The same
// sandbox added again under another name is a second attachment of the network (a
// meta-plugin such as Multus adding it twice), not a new sandbox: it is refused with
// cni.ResultInvalid (ErrOtherIfName) rather than treated like a new sandbox, since
// replacing the wiring would cut the pod off the interface it already uses; the DEL
// that cleans up after the refused ADD leaves the pod alone.
//
// One request waits at most Config.RequestTimeout for its events; requests for the same
// pod are serialised. Failures of the handlers are replies with cni.ResultError; when the
// event loop takes no event (queue full, stopping) or does not process it in time, the
// request ends with the gRPC status Unavailable or DeadlineExceeded instead, which
// contiv-cni reports as "try again later" (see package cni).
//
// # Events handled
//
// Every resync (checks the local pods against the Kubernetes pods and contiv-ksr's sync
// marker, see Restart recovery), AddPod (records the LocalPod with its ADD time; fails with ErrObsoletePod when the pod is
// still recorded with another sandbox, with ErrOtherIfName when it is recorded with the
// same sandbox under another interface name) and DeletePod (forgets it). Revert of an AddPod
// restores the previous record. KubeStateChange of pods and of contiv-ksr's pod sync
// marker (ksrsync/pod): they follow the unconfirmed pods between resyncs (unconfirmed.go;
// a new marker that proves one gone pushes its DeletePod as a follow-up). The plugin
// stages no configuration.
//
// # Restart recovery
//
// Upstream Contiv-VPP found the local pods after a restart by listing the Docker sandbox
// containers. This port does not depend on a container runtime; instead:
//
//  1. Every change of the local pods (a completed ADD, a DEL, a revert) is appended as
//     one JSON line to Config.StateFile (default /var/run/contiv/pods.json, a tmpfs: a
//     reboot forgets the pods together with their sandboxes). The file opens with a
//     snapshot of all pods; once the journal of changes after it outgrows twice the
//     pods (and at least 64 entries), a new snapshot replaces the file atomically
//     (temporary file + rename; the change is in the journal first, so a failed
//     compaction loses nothing). A change thus costs one small write whatever the
//     number of pods; nothing is fsynced. A record holds the pod ID, the container ID,
//     the network namespace path and inode, the pod's interface name (ifName; the
//     records of older agents have none and mean eth0) and the pod's IPs of every
//     family (ipAddresses, the primary first; ipAddress repeats the primary, and the
//     records of agents before dual-stack have it alone), which IPAM keeps for the pod
//     after a restart (LocalPod.IPAddresses). An unreadable last line (an interrupted append) is ignored
//     with a warning. Agents older than this format (1: a snapshot only) cannot read
//     the file: after a downgrade they set it aside as pods.json.bad and recover no pods.
//  2. Init reads the file and drops every record whose network namespace is gone: the
//     path no longer exists, is no namespace file any more (unmounted placeholder), or
//     names another namespace than recorded (a /proc/<pid>/ns/net whose PID was reused).
//     A path that cannot be examined keeps its record, with a warning. The agent must
//     therefore see the pods' netns paths (/var/run/netns, /proc of the host).
//  3. Pods the state file lacks are recovered from the container runtime's CNI result
//     cache (Config.CNICacheDir, libcni's /var/lib/cni/results, which containerd, CRI-O
//     and cnitool keep from ADD to DEL): the entries whose configuration runs contiv-cni
//     with this agent's socket give the container ID, network namespace, pod (CNI_ARGS),
//     interface name and IPs (those of the pod's interface, every family). A state file that lost writes (a full disk) or was removed thus does not
//     make the agent delete running pods' interfaces or hand their IPs to new pods; the
//     IPAM also keeps the IPs that the Kubernetes state shows. The agent must see the
//     cache directory (a hostPath mount in the DaemonSet).
//  4. Every resync checks the local pods against the Kubernetes state, but absence
//     from that copy is no deletion: it may be stale (contiv-ksr down, between
//     leaders, lagging; etcd down and the agent reading its bolt mirror). A local
//     pod that the copy lacks, or shows on another node (status.hostIP not among
//     this node's management IPs; checked only when Deps.NodeSync knows this node),
//     is dropped only when contiv-ksr's sync marker (ksrsync/pod, api/k8s/ksrsync)
//     proves the copy complete as of more than Config.MaxClockSkew after the pod's
//     ADD: the pod existed in the API server before the marker's list, so its
//     absence means it was deleted. A marker later than this node's clock plus
//     MaxClockSkew proves nothing (a clock off by more, or a forged marker). Every record keeps the time of its ADD
//     (addedAt); the records of older agents and the pods recovered from the CNI
//     cache count as added when this agent recovered them. Any other such pod keeps
//     its interface and IP, is logged at warning with the reason at every resync and
//     counted (contiv_podmanager_unconfirmed_pods), until its CNI DEL or a resync or
//     new sync marker that proves it gone (then a DeletePod unwires it and releases
//     its IP); when contiv-ksr then reflects the pod, it is confirmed and nothing
//     changes.
//     A contiv-ksr older than this agent publishes no marker: pods are then removed
//     by CNI DEL only.
//
// A change that cannot be made durable (the state file unwritable, a full disk) is not
// silently accepted: the ADD is undone (a DeletePod, waited for) and answered with
// cni.ResultTryAgain naming the cause, so the kubelet retries it; the plugin reports
// itself not ready through Deps.Status ("local pods cannot be persisted in <file>: ...")
// and counts the failure (contiv_podmanager_state_write_errors_total) until a write
// succeeds. A DEL unwires the pod all the same, but while its removal is not durable it
// is answered with cni.ResultTryAgain naming the cause, and so is every retry (each one
// tries to persist the removal again) until a write succeeds: acknowledged, the DEL
// would not be repeated, and the pod would come back after a restart. Its IP is
// released at once; no new pod gets it before the removal is durable, since the ADD's
// own write (after a failure, a snapshot of all pods) is what makes it durable.
//
// The pods that survive are the LocalPods that ipnet and the other handlers rebuild
// their configuration from in the same resync, so the pods keep their interfaces and
// addresses across an agent restart.
package podmanager
