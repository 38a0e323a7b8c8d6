// Package policy is the policy plugin: it enforces Kubernetes
// NetworkPolicies (networking.k8s.io/v1) on this node with VPP ACLs.
//
//	controller event ──> Plugin (EventHandler)
//	                        │
//	                        ▼
//	   cache/         pods, namespaces, policies; label indexes; the one
//	                  selector evaluator (cache.Matches)
//	   processor/     which local pods to recompute for the event
//	   configurator/  policies -> each pod's ContivRule lists (ingress, egress)
//	   renderer/      ContivRule and its total order; the Renderer interface
//	   renderer/cache/  LOCAL / EGRESS / GLOBAL / REFLECTION tables,
//	                  shared by content hash, updated incrementally
//	   renderer/acl/  tables -> vpp_acl.ACL and InterfaceACLs values
//	                        │ UpdateTxnFactory(change) / ResyncTxnFactory()
//	                        ▼
//	                 the event's transaction -> vpp aclplugin descriptors
//
// Events handled: every resync; KubeStateChange of "pod", "namespace" and
// "policy"; CNI AddPod (the new pod is policed in the transaction that wires
// it, with the IP IPAM gave it, instead of when contiv-ksr reports its IP
// as upstream did) and DeletePod (its ACL list goes). Revert of a failed
// AddPod forgets the pod. The plugin is registered after service.
//
// Keys owned (staged by the ACL renderer):
//
//	config/vpp/acls/v2/acl/contiv-policy-<hash>          pod outputs
//	config/vpp/acls/v2/acl/contiv-policy-EGRESS-<hash>   pod inputs (egress rules)
//	config/vpp/acls/v2/acl/contiv-policy-NODE-GLOBAL     node outputs
//	config/vpp/acls/v2/acl/contiv-policy-REFLECTION      inputs (reply sessions)
//	config/vpp/acls/v2/interface/<interface>             the ACL lists of an interface
//
// The lists of an interface are shared (ACLLists, package ifacls): the
// service plugin's firewall of loadBalancerSourceRanges puts its ACLs on the
// uplinks' input lists before the policy's, and ifacls stages the merged value.
//
// Rule owners (for the statscollector's per-policy rule counters): the
// configurator names, rule by rule, the policies each rule comes from; the
// renderer cache keeps, for every table, the distinct owner lists of the pods
// using it (counted) and their union (Table.Owners), recomputed only for the
// tables whose users changed; the ACL renderer publishes them by ACL name
// (acl.Owners, under a lock, entries replaced per changed ACL). The plugin
// provides them as RuleOwnersKey (ACLRules, safe from the scrape goroutine).
//
// Placement, semantics and the differences from upstream are described in
// renderer/cache, configurator and docs/dev-guide/POLICIES.md.
//
// Costs: a resync is O(policies × selected peers + local pods × their
// rules). A pod or namespace change evaluates each policy's peer selectors
// once (O(policies)), recompiles the policies that reference the object and
// recomputes only the local pods those select; a pod's egress change also
// revisits every local pod's part for it (O(local pods)). Memory is bounded
// by what is live, without a resync: tables and their pods' parts go with
// the last pod that uses them, and the ACL renderer's memo of converted
// rules is swept once it holds more than twice the rules of the live tables.
// Within a recomputed pod, the parts of its LOCAL table that the change does
// not concern are kept, and its new ACLs take the VPP rules they share with
// the ones they replace (GLOBAL per pod address); what remains (the pod's
// rules, the table's hash and rules) is linear in the rules of the
// recomputed tables, which a dual-stack cluster doubles: a label change
// there costs 1.8-1.9x the IPv4 one (BenchmarkLabelChange, 1,000 policies;
// 2.0-2.1x before the reuse above).
//
// IP families: every address of a pod counts (pod.AllIPAddresses; IPAM's
// GetPodIPs for the local pods): a dual-stack peer is permitted on both its
// addresses, ipBlocks of either family select addresses of their family,
// GLOBAL has one segment per address of a pod (with its rules towards that
// family) and local pod-to-pod parts are computed per family. The cluster
// networks, the always-allowed node sources and this node's pod subnets of
// every family come from IPAM (ThisNodeAddresses). A rule without addresses
// becomes one VPP rule per family of the cluster (renderer/acl: a VPP rule has
// one family and an ACL list ends in an implicit deny), and on a cluster with
// IPv6 the pod interfaces' ACLs first permit ICMPv6 neighbour solicitations and
// advertisements (types 135-136), which VPP 25.10 runs through them. IPv6-only
// clusters are policed like the others (the plugin used to turn itself off
// there: every IPv6 pod failed open).
//
// Not done: SCTP named ports (the pod model has no SCTP container ports, so they do
// not resolve and allow nothing).
package policy
