// Package scale is the whole-agent scale benchmark (issue #17 item 4): etcd, the VPP
// simulator and contiv-agent each in their own process, a generated cluster written
// into etcd in the contiv-ksr layout, and the agent measured from the outside.
//
// It runs only when asked: `make bench-scale`, or CONTIV_SCALE=1 go test -run
// TestScale -v ./test/scale/ (plain `go test ./...` and `make bench` skip it). The
// setup comes from environment variables (defaults in brackets):
//
//	CONTIV_SCALE_NODES      N nodes [50] (2..200; the agent runs as the first)
//	CONTIV_SCALE_PODS       P pods per node [110]
//	CONTIV_SCALE_SERVICES   S Services [10000]
//	CONTIV_SCALE_ENDPOINTS  E endpoints per Service [10]
//	CONTIV_SCALE_NODEPORTS  K of the Services are NodePort [1000]
//	CONTIV_SCALE_CHANGES    Endpoints changes measured one by one [1000]
//	CONTIV_SCALE_BURST      Endpoints changes of the burst [10000]
//	CONTIV_SCALE_JOINS      times a node joins and leaves in a round, the median of each
//	                        reported [5]
//	CONTIV_SCALE_BEFORE     git ref of the code to compare with [bb8e401]; "none" = only this tree
//	CONTIV_SCALE_TAGS       build tags of this tree's agent, separated by commas [none]; when
//	                        set without CONTIV_SCALE_BEFORE, the agent compared with is this
//	                        tree built without them: the same commit side by side, e.g.
//	                        CONTIV_SCALE_TAGS=natpermapping (the DNat44 path of one derived
//	                        value per mapping, plugins/vpp/natplugin/permapping.go)
//	CONTIV_SCALE_BEFORE_SLICES  1: the "before" agent reads EndpointSlices too [0: it is
//	                        given v1 Endpoints, the form agents before the EndpointSlice
//	                        work read; this tree's agent always gets EndpointSlices, a
//	                        Service in slices of at most 100 endpoints]
//	CONTIV_SCALE_FAMILY     ipv4 or dual [ipv4]; dual compares IP families instead of
//	                        code: this tree's agent (with CONTIV_SCALE_TAGS) on the
//	                        IPv4-only cluster and on the same cluster dual-stack, side
//	                        by side, and the table ends with the ratio dual / IPv4 of
//	                        the medians and the median of the rounds' ratios (issue
//	                        #28's bound: 1.5x). Dual-stack: every
//	                        node has an IPv6 InternalIP, pod CIDR (fd00:10:1:<k>::/64)
//	                        and VPP address, every pod an IPv6 address beside its
//	                        IPv4 one, and contiv.conf the ipamConfig.ipv6 of
//	                        docs/CONFIG.md; Services stay IPv4 (IPv6 Services come
//	                        with the cnat renderer). The run fails if the agent's
//	                        /contiv/v1/ipam has no IPv6 pod subnet. Not with
//	                        CONTIV_SCALE_BEFORE. E.g.
//	                        CONTIV_SCALE_FAMILY=dual CONTIV_SCALE_ROUNDS=3 make bench-scale
//	CONTIV_SCALE_RENDERER   nat44, cnat or both [nat44]: the contiv.conf serviceRenderer of
//	                        this tree's agent. cnat: every variant of this tree renders
//	                        with cnat (a CONTIV_SCALE_BEFORE ref keeps its own); both
//	                        compares renderers instead of code, as
//	                        CONTIV_SCALE_FAMILY=dual compares families: this tree's
//	                        agent (with CONTIV_SCALE_TAGS) with serviceRenderer nat44
//	                        and with cnat on the same cluster, alternating per round,
//	                        and the table ends with the ratio cnat / nat44 of the
//	                        medians and the median of the rounds' ratios (each round
//	                        runs the two one after the other: on a machine whose speed
//	                        drifts, the second is the steadier figure). The simulator then waits for cnat translations
//	                        (Sim.LookupCNAT) instead of NAT44 mappings: the same
//	                        (address, port, protocol) keys, the backends are the
//	                        translation's paths. Not with CONTIV_SCALE_BEFORE or
//	                        CONTIV_SCALE_FAMILY=dual. E.g.
//	                        CONTIV_SCALE_RENDERER=both CONTIV_SCALE_ROUNDS=3 make bench-scale
//	CONTIV_SCALE_ROUNDS     rounds of before/after, interleaved [1]
//	CONTIV_SCALE_PROFILE    a directory: CPU profiles of each phase and heap profiles at
//	                        rest and after the burst are saved there [none]
//	CONTIV_SCALE_TRACE      1: execution traces of the first resync, the node join and
//	                        leave too (with CONTIV_SCALE_PROFILE) [0]
//	CONTIV_SCALE_LOG_LEVEL  the agent's log level [warning]; with CONTIV_SCALE_PROFILE its
//	                        log is kept there too
//	CONTIV_SCALE_CONTROLLER_CONF  controller.conf of this tree's agent, lines separated
//	                        by ";" (e.g. "maxBatchedChanges: 1") [none: the defaults]
//
// etcd and the simulator are this test binary started again in a role (the etcd of
// pkg/etcdembed; pkg/vppsim with a small control server on a unix socket that reports
// message counts and waits for NAT mappings, or cnat translations). The simulator of this tree serves both
// agents, so that the comparison is of the agents alone. The agent is built from this
// tree (with CONTIV_SCALE_TAGS) and, for the comparison, from the other ref (a temporary
// detached worktree) or from this tree without the tags, and run in production mode (etcd.conf, govpp.conf, ...), as root in a private mount
// namespace whose /var/run/contiv is a tmpfs (its node-ID file stays its own).
//
// What is measured, and how:
//   - first resync: from the agent's start to contiv_controller_events_total of
//     "Database Resync" becoming non-zero (/readiness polled every 25 ms, the metric
//     read once it answers 200: a scrape of /metrics costs the agent ~1 ms of CPU),
//     and the resync event's own processing time
//     (contiv_controller_event_processing_duration_seconds);
//   - memory: VmRSS and VmHWM from /proc/<pid>/status, go_memstats_heap_alloc_bytes
//     from /metrics; the burst's peak is VmHWM after writing 5 to /proc/<pid>/clear_refs
//     before the burst;
//   - one Endpoints change: the time from just before the etcd Put to the moment the
//     simulator's NAT mapping (cnat translation) of the Service holds the new backend
//     (the simulator's control server checks after every nat44_ (cnat_) request it
//     executes, from its request hook; the wait is in place before the Put: the server
//     answers with its headers first), with the agent's allocations and GC cycles from
//     its metrics, and the VPP messages per change; a wait for several mappings (first
//     resync, join, leave, burst) checks 200 us after its last check ended;
//   - CPU: user + system time of the agent, the simulator, etcd and the harness during
//     the first resync, the single changes, each node join and leave and the burst
//     (/proc/<pid>/stat, ticks of 10 ms); the table has the agent's and the
//     simulator's for the first resync, the burst and the node join (the mean of the
//     round's joins);
//   - node join and leave: event time is the processing time of the controller events
//     of the phase (the growth of contiv_controller_event_processing_duration_seconds
//     _sum and _count: the event history would encode each event's transaction, which
//     older agents made hundreds of MB large), wall time until the simulator maps every
//     NodePort on (or no longer on) the node's IP;
//   - the burst: time from the first Put until the simulator holds the final backends of
//     every changed Service; no full resync means contiv_controller_events_total of
//     resync events did not grow;
//   - VPP messages: the simulator's per-message counters, reset before each phase;
//   - allocations: the growth of the agent's go_memstats_alloc_bytes_total from its
//     start to the end of the first resync, during the node join and during the burst.
package scale
