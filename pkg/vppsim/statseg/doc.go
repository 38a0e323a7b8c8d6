// Package statseg writes VPP 25.10's stats segment: the shared memory behind
// stats.sock that govpp's adapter/statsclient (and vpp_get_stats, and the agent's
// statscollector) read. It is the simulator's counterpart of vlib/stats; the
// simulator's API handlers and forwarding graph call it, nothing else does.
//
//	simulator (vppsim)                      reader (govpp statsclient, any process)
//	  interface create/delete ─┐
//	  node error registration ─┤ change()    stats.sock (SOCK_SEQPACKET)
//	  acl_add_replace ─────────┤ in_progress  └─ accept: memfd sent as SCM_RIGHTS,
//	  NAT enable on interface ─┘ epoch+1          empty payload, close
//	  per packet: Add* ────────── atomic add     mmap(memfd, PROT_READ, MAP_SHARED)
//	          (read lock, no allocation)           header -> directory -> vectors
//
// # Layout (spec/vpp-ip6-cnat-stn-stats.md §4.2; vlib/stats/shared.h)
//
// A memfd of Config.Size bytes (32 MiB by default, STAT_SEGMENT_DEFAULT_SIZE), mapped
// shared. The header at offset 0 holds version 2, the writer's mapping address (base),
// the epoch (from 1), in_progress and a pointer to the directory vector; bytes 40..47
// stay zero so govpp keeps the version-2 type numbering. The heap starts one page in.
// Every pointer is base+offset. Vectors have VPP's 8-byte header (u32 length first)
// and the pointer points at element 0. A directory entry is 144 bytes: type, an 8-byte
// union (scalar value, data pointer or symlink target), and a 128-byte name.
//
// # Consistency (vlib/stats/stats.c vlib_stats_segment_lock/unlock)
//
// Every directory change (entry added or removed, vector grown or moved) runs under
// the write lock with in_progress=1 and ends with epoch+1, in_progress=0; a reader
// that saw another epoch, or in_progress, reads again. Counter updates touch neither
// field (so govpp's UpdateDir stays valid); they take the read lock, which only keeps
// a vector from moving under them, and add atomically. Freed blocks are reused only
// once fresh memory runs out (VPP reuses at once; see allocator).
//
// # Entries (names and shapes as VPP 25.10 registers them)
//
//	/sys/heartbeat, /sys/last_stats_clear, /sys/boottime   scalars, directory indices 0..2
//	/sys/vector_rate, num_worker_threads, input_rate, last_update   scalars
//	/if/names                                    name vector [sw_if_index]; a deleted interface reads "deleted"
//	/if/{drops,punt,ip4,ip6,rx-no-buf,rx-miss,rx-error,tx-error,mpls}   simple [thread][sw_if_index]
//	/if/{rx,tx}[-{unicast,multicast,broadcast}]  combined [thread][sw_if_index] {packets, bytes}
//	/interfaces/<name>/<counter>                 symlinks into the /if/ vectors, removed with the interface
//	/node/errors                                 simple [thread][global error index]
//	/err/<node>/<reason>                         symlinks into /node/errors
//	/sys/node/names, /sys/node/{clocks,vectors,calls,suspends}, /nodes/<node>/<counter>
//	                                             only with Config.PerNodeCounters (off in VPP by default)
//	/acl/<acl_index>/matches                     combined [thread][rule] (rules+1 elements), created once
//	                                             per index up to the highest ACL, zeroed on add/replace,
//	                                             never removed; counted only after EnableACLCounters(true)
//	/nat44-ed/total-sessions                     simple [thread][0]: the thread's session pool size (a gauge)
//	/nat44-ed/max-cfg-sessions                   scalar
//	/nat44-ed/{in2out,out2in}/{fastpath,slowpath}/{tcp,udp,icmp,other,drops}, /nat44-ed/hairpinning
//	                                             simple [thread][sw_if_index], validated by NATInterface
//
// Other subsystems (cnat's /net/cnat-translation, FIB's /net/route/to) can register
// their entries with NewSimpleCounter, NewCombinedCounter and NewScalar.
//
// # What a caller must do (as VPP's nodes do)
//
// Publish an interface (AddInterface) before counting on its index, register a
// node's errors (RegisterErrors, or EnsureError on first use) before counting them,
// zero an interface's counters on sw_interface_clear_stats (ClearInterfaceCounters), publish an ACL (SetACL) on
// acl_add_replace, validate NAT's per-interface counters (NATInterface) when NAT is
// enabled on an interface. Counts for an index that was never published are
// ignored: VPP would write past its vector.
//
// # Not simulated
//
// Worker threads beyond Config.Threads' vectors (the caller picks the thread), the
// periodic collector (heartbeat, vector rates: the caller sets them), /mem/ and
// /buffer-pools/ entries, the interface-rename path, the
// rx/tx-unicast/multicast/broadcast split unless the caller counts it.
package statseg
