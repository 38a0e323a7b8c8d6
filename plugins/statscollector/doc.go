// Package statscollector exports VPP's data-plane counters as Prometheus metrics,
// in Kubernetes terms: per pod interface traffic and drops labelled with the pod,
// VXLAN tunnel traffic per remote node, VPP's error counters by node and reason,
// NAT44 sessions, and NetworkPolicy rule matches (docs/METRICS-DATAPLANE.md lists
// every metric). It is what Contiv-VPP's statscollector was, read from VPP's stats
// segment through govpp's adapter/statsclient instead of the vpp-agent's interface
// state.
//
//	GET /metrics ─> Collect (one scrape at a time, bounded by ScrapeTimeout)
//	                  │ statsclient: PrepareDirOnIndex(indexes of the last listing),
//	                  │   or PrepareDir(patterns) when VPP's directory epoch moved
//	                  ▼
//	                entries /if/{rx,tx,drops}, /err/*, /acl/<i>/matches, /nat44-ed/*
//	                  │ sw_if_index ─ Interfaces (scheduler metadata) ─> logical name
//	                  │   ─ Pods (ipnet.GetPodByIf) ─> namespace, pod
//	                  │   ─ vxlan<ID> ─ Nodes (nodesync) ─> remote node
//	                  │ acl_index ─ ACLs (scheduler metadata) ─> ACL name
//	                  │   ─ PolicyRules (hook) ─> policy, verdict per rule
//	                  ▼
//	                const metrics (nothing kept between scrapes)
//
// # Design
//
//   - Collect on scrape: a prometheus.Collector reads the segment when scraped and
//     keeps no series, so the series of a deleted pod (or tunnel, or ACL) disappear
//     with the agent's record of its interface; a reused sw_if_index starts from its
//     new owner's labels. Nothing runs between scrapes.
//   - Cardinality: pods of this node × 5, remote nodes × 5, error counters that are
//     not zero (bounded by VPP's error registrations, about 2000 with the usual
//     plugins), policy rules that matched (bounded by the rules of the node's ACLs),
//     never per flow or per address.
//   - Cost: a scrape reads the /if/ vectors once (not the /interfaces/ symlinks: govpp's
//     UpdateDir does not refresh symlinks) and every /err/ symlink (their names are the
//     only map from error index to node and reason). The directory is listed with
//     regular expressions only when its epoch moved; otherwise the entries are read
//     by index. BenchmarkScrape110Pods measures a node of 110 pods.
//   - Bounds: a scrape retries a read that VPP's directory changes interrupted until
//     ScrapeTimeout; connecting waits for the socket at most ScrapeTimeout, and not at
//     all when the socket file does not exist (every GET /metrics would wait). Without a
//     readable segment only contiv_dataplane_stats_up 0 is exported and one warning
//     is logged per new problem.
//   - Reconnect: the plugin's own statsclient follows VPP restarts (govpp watches the
//     socket file); a client that lost VPP is disconnected and connected again at the
//     next scrape.
//
// # The policy hook
//
// VPP counts matches per ACL rule (/acl/<acl_index>/matches, after
// acl_stats_intf_counters_enable, which the ACL descriptor of plugins/vpp/aclplugin
// sends once per full resync). The ACL names the agent writes
// (contiv-policy-<hash>) are content hashes of rule tables shared by pods, and a
// rule of a table may come from several NetworkPolicies, so the name alone does not
// say which policy a rule enforces. The policy plugin provides PolicyRules
// (policy.RuleOwnersKey, read by Cell): for each ACL it renders, the policy (or
// policies) behind each rule index and whether it denies; rules no policy made
// (Policy "") are not exported. Without it (Deps.PolicyRules nil) no policy metric
// is exported.
//
// # What it does not do
//
// Per-flow data, the rx/tx split by unicast/multicast/broadcast, node runtime
// counters (off in VPP by default), cnat translations, memory and buffer pools.
package statscollector
