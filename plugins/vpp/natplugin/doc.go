// Package natplugin teaches the KV scheduler VPP's NAT44 (endpoint-dependent,
// the nat44-ed plugin of VPP 25.10): the global NAT44 configuration with its
// interface features and address pool, and labelled sets of DNAT mappings
// (one per Kubernetes service in Contiv).
//
// Keys owned:
//
//	config/vpp/nat/v2/nat44-global                        Nat44Global     vpp-nat44-global
//	vpp/nat44/interface/<iface>/feature/<in|out> (derived) interface feature vpp-nat44-interface
//	vpp/nat44/address/<ip>/twice-nat/<on|off>    (derived) pool address      vpp-nat44-address
//	config/vpp/nat/v2/dnat44/<label>                      DNat44          vpp-dnat44
//	vpp/nat44/dnat44-endpoints-free/<label>      (SB, notified) an external DNat44's endpoints are free
//
// Dependencies (an arrow reads "waits for"):
//
//	Nat44Global (enables the NAT44-ED plugin, sets forwarding)
//	  ├─ derives interface features ──> config/vpp/v2/interfaces/<iface>
//	  └─ derives pool addresses ──────> VrfTable <vrf_id> (IDs other than 0 and ~0)
//	DNat44 ──> Nat44Global (the plugin must be enabled)
//	       ──> VrfTable of every non-zero local / identity VRF
//	       ──> interfaces named by external_interface / interface
//	       ──> DNAT44FreeKey(label), for an external DNat44 only (conflict.go)
//
// The DNat44 path, by file (what to read to change it):
//
//	dnat.go      the descriptor: its callbacks wired to what follows; DNat44Dependencies
//	validate.go  Validate (validChange: a change is checked by the entries that changed)
//	same.go      the model compared field by field (sameDNat44, dropCommon) and the
//	             equivalence the ValueComparator uses (EquivalentDNat44)
//	mapping.go   the parsed form of an entry (mapping, local) and its parsing and checks
//	plan.go      the planner: planChange(old value, new value, what Validate parsed of the
//	             new one, interface resolver) returns the ordered requests (steps); it does
//	             no I/O and is table-tested without VPP (plan_test.go); planUndo plans the
//	             undo of a failed call
//	requests.go  the binapi messages of a mapping (requestBuilder: one block per kind)
//	exec.go      the executor: Create/Update/Delete and their asynchronous forms send the
//	             planned steps (sendBatch, or the pipeline across values), undo the ones
//	             that succeeded when some fail, and remember failed undos (leftovers)
//	retrieve.go  Retrieve: the dumps grouped by tag and rebuilt into DNat44 values
//	conflict.go  the agent's values ahead of external ones on an external endpoint
//	parsed.go, pipeline.go, vpp.go: the cache of what Validate parsed, the pipeline,
//	             sendBatch
//
// A field added to the DNat44 model makes fields_test.go fail until same.go compares it
// (or notComparedFields says why not) and plannerFieldChanges lists a change of it that
// the planner turns into requests (parse it in mapping.go, compare it in mapping.equal,
// send it in requests.go). Why the scheduler does not diff one derived value per
// mapping instead: docs/ARCHITECTURE.md, "The DNat44 path".
//
// VPP messages used: nat44_ed_plugin_enable_disable,
// nat44_forwarding_enable_disable, nat44_show_running_config, nat_set_timeouts,
// ip_reassembly_set, nat44_add_del_address_range, nat44_address_dump,
// nat44_interface_add_del_feature, nat44_interface_dump,
// nat44_ed_add_del_output_interface, nat44_ed_output_interface_get,
// nat44_add_del_static_mapping_v2, nat44_static_mapping_dump,
// nat44_add_del_lb_static_mapping, nat44_lb_static_mapping_add_del_local,
// nat44_lb_static_mapping_dump, nat44_add_del_identity_mapping,
// nat44_identity_mapping_dump.
//
// Cost: the requests of one descriptor call are pipelined (sendBatch), so a
// DNat44 with many mappings costs about one round trip; creations and updates of
// many DNat44s in one transaction are pipelined across values too (CreateAsync,
// UpdateAsync: the scheduler starts them all, then waits for each), so 10k new
// services or a node join changing 1,000 NodePort services cost one pipeline, not
// one round trip per value (BenchmarkProgram10kDNAT, BenchmarkNodeJoin1kNodePorts).
// An update sends only the mappings that differ: a node joining adds the two
// mappings of its IPs to each NodePort DNat44, an endpoint added to a service one
// local to each of its LB mappings (TestNodePortUpdateProgramsOnlyTheChangedMappings).
// Nothing is parsed twice needlessly: entries equal field by field in the old and the
// new value are paired by comparison (no address parsing, no allocation) and only the
// others are parsed and planned; an unchanged value is recognised the same way; the
// mappings of a value that list the same locals (every port of a NodePort service)
// share one parsed copy of them; the Create of a value uses what its Validate parsed
// (parsedCache: bounded, emptied as values are created or found unchanged, so nothing
// of it stays at rest), and so does the Update of a value whose every entry changed (a
// backend of a NodePort service replaced changes all its ~100 mappings); a changed value
// is told apart from an equivalent one by the first pair of entries that differ, not by
// parsing both values (and the new value's entry is taken as Validate parsed it).
// Validate checks a value against the last one it accepted for the key (validChange):
// the entries the two have in common at their start and their end are valid and
// distinct already, so a change of a few entries (a node joining: two of ~100 in each
// NodePort value) parses and compares for duplicates only those, by the text of the
// others (O(mappings) comparisons, no parsing or allocation for the unchanged ones).
// A new key, identity mappings, more than 16 changed entries, or changed entries that
// are address-only or name an interface are checked whole: O(mappings + locals)
// comparisons, O(mappings) address parsing, and a sort of the mappings' packed
// external endpoints to find duplicates (no map of strings). An update pairs the old
// and new mappings by position when they keep their order (no map), computes the
// difference of the locals once per list of locals the mappings share, and allocates
// the messages of its requests in one block per kind (and the pipeline's records of
// them in one block per value). Requests carry what they do as data and are described
// only when they fail (no closure per request; the undo of a call's requests is built
// only when one of them failed).
// Measured in docs/PERFORMANCE.md ("The scheduler and the NAT descriptors at the
// scale of issue #17").
//
// DNat44 in VPP: every entry of a DNat44 becomes one VPP mapping, tagged
// with the label (see Tag): a static mapping with one local becomes
// nat44_add_del_static_mapping_v2, one with several locals
// nat44_add_del_lb_static_mapping (probabilities, affinity), an identity
// mapping nat44_add_del_identity_mapping (address-only when the port is 0).
// Static and LB mappings are always out2in-only; twice-NAT NONE, ENABLED and
// SELF become no flag, NAT_IS_TWICE_NAT and NAT_IS_SELF_TWICE_NAT. VPP's
// static mapping has no session affinity: it is ignored for a single local,
// where it makes no difference. An update touches only the mappings that
// changed: an LB mapping whose locals changed gets
// nat44_lb_static_mapping_add_del_local for the locals added and removed
// (new ones first, so that VPP's minimum of two always holds) and keeps the
// sessions of the other locals; other changed mappings are deleted and
// added again. If a request of a Create, Update or Delete fails, the
// requests of the call that succeeded are undone (best effort), so VPP keeps
// the old value, as the scheduler assumes. The descriptor remembers the adds whose
// undo failed (with an error other than BUSY, which is tried again): the same add,
// refused later by VPP as existing, counts as done, so a retry completes instead of
// failing for good (TestDNat44CreateCompletesWhatAFailedUndoLeft). Retrieve groups the static, LB
// and identity mappings VPP dumps by tag; a tag is the label of a DNat44
// (NB's label when Tag of it is the tag). Mappings without a tag
// are not the agent's and are skipped; tagged ones are reported as the
// agent's (FromNB), so a full resync removes the DNat44s NB no longer has.
//
// Decisions:
//
//   - The agent's DNat44 values (Deps.Preferred; by default the service renderer's
//     labels, "<namespace>/<name>" and DNAT-identities) win every conflict on an
//     external (address, port, protocol) over values of other labels (written by an
//     operator under /vnf-agent/<node>/config/), whatever the order in which a resync
//     creates them: VPP keeps one mapping per external endpoint, and the first one
//     created used to keep it, so after a restart an external value could take a
//     Service over. An external value depends on DNAT44FreeKey(label), which the
//     descriptor notifies (SB) while no agent's value maps one of its endpoints; it is
//     PENDING on it, or FAILED with an error naming both keys and the endpoint when the
//     scheduler tried it first, and is created when the agent's value lets the endpoint
//     go. An agent's value created over an applied external one first deletes the
//     external mappings on its endpoints. Not in the per-mapping build (natpermapping).
//   - The NAT44-ED plugin is enabled by the first Create of Nat44Global
//     (nat44_ed_plugin_enable_disable; "already enabled" is success) with
//     Sessions translations per thread, and never disabled: disabling flushes
//     every NAT setting, including the mappings of other values. Deleting
//     Nat44Global turns forwarding off. VPP 25.10 cannot be asked whether the
//     plugin is enabled; Retrieve reads nat44_show_running_config and takes a
//     non-zero session count for "enabled".
//   - virtual_reassembly: VPP 25.10 removed nat_set_reass; NAT44-ED uses
//     VPP's IPv4 shallow virtual reassembly, which it turns on by itself.
//     timeout (s), max_reassemblies and max_fragments are applied with
//     ip_reassembly_set (IPv4, type SHALLOW_VIRTUAL; timeout_ms = timeout ×
//     1000, max_reassembly_length = max_fragments; unset fields and removal
//     give VPP's defaults 100 ms, 1024, 3, walk 10 s). This setting is global
//     to VPP, not NAT's own. drop_fragments has no counterpart and is not
//     applied (a warning is logged). Reassembly settings cannot be read back
//     in the model's terms: Retrieve reports what NB asks for.
//   - timeouts (udp, tcp_established, tcp_transitory, icmp, seconds) are
//     sent with nat_set_timeouts, all four at once, when the timeouts VPP
//     runs with change; a field left 0 (or no timeouts) is VPP's default
//     (300, 7440, 240, 60: VPP itself takes 0 literally, a session expiring
//     at once), and a value of 2^31 s or more is invalid. They are global to
//     VPP (every session of every VRF), deleting Nat44Global restores the
//     defaults, and Retrieve reads them from nat44_show_running_config (VPP
//     25.10 has no nat_get_timeouts): nil when they are the defaults.
//   - Output-feature interfaces are read back with
//     nat44_ed_output_interface_get, a reply-and-details request that govpp
//     channels cannot carry: it needs GoVPP to be a govppapi.Connection
//     (streams). Without one, Retrieve assumes NB's output interfaces exist.
//   - Pool addresses are added one by one (first = last) with
//     nat44_add_del_address_range; vrf_id goes to VPP as given, 0xFFFFFFFF
//     being VPP's "any tenant VRF".
//   - A mapping's tag is its label when that fits VPP's string[64] with its
//     NUL (MaxTagLen, 63 bytes), else the label's start, "~" and 16 hex digits
//     of its SHA-256 (Tag): labels sharing their first 63 bytes stay apart.
//   - VRF 0xFFFFFFFF of a single-local or identity mapping is VPP's "inside
//     VRF", which this plugin enables as 0: it is treated as 0.
//
// What it does not do: it never disables the NAT44-ED plugin (that would
// flush all NAT state, including other values'); it does not manage NAT
// sessions (the service renderer dumps and deletes idle sessions itself),
// NAT workers, VRF routing tables of NAT, or interface-address
// pools (nat44_add_del_interface_addr). virtual_reassembly.drop_fragments
// has no VPP 25.10 counterpart (see NewNat44GlobalDescriptor).
//
// Built on plugins/vpp/internal/vppbase like every VPP plugin: its channel (messages
// checked by govppmux, vppbase.ReplyTimeout), descriptor deps, address conversions and
// the one retry rule for VPP errors (vppbase.IsRetriable) come from there.
// The descriptors take typed values through kvapi.Typed (a wrong-typed value is an
// invalid-value error).
package natplugin
