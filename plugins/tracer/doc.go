// Package tracer answers "why can't A reach B": it sends a real probe (a TCP SYN, a
// UDP datagram or an ICMP echo) from a pod's network namespace, or from the node's
// own, while VPP traces the packets its input nodes receive, and explains VPP's
// packet trace in Kubernetes terms: the pod interfaces, the NAT mapping (Service and
// backend), the NetworkPolicy rule that allowed or denied the packet, the VXLAN
// tunnel to another node, and the verdict. contiv-netctl trace drives it on every
// node the packet can cross.
//
//	POST /contiv/v1/trace/start  {count, timeoutSeconds}
//	       │ one trace at a time per node (409 while one runs); "clear trace", then
//	       │ "trace add <node> <count>" on virtio-input (pod and host TAPs),
//	       │ af-packet-input and dpdk-input (the NICs, VXLAN from other nodes)
//	       ▼
//	POST /contiv/v1/trace/probe  {source pod or host, destination, port, protocol}
//	       │ the probe runs in the pod's namespace (nsplugin) and reports what the
//	       │ sender saw: connected, answered, refused, unreachable, no answer
//	       ▼
//	POST /contiv/v1/trace/stop   {match: the probe's addresses}
//	       │ "show trace", then "clear trace" (which is also VPP's way to stop
//	       │ tracing: vlib_trace_stop_and_clear); Parse -> Explain with Names read
//	       │ from the agent's state now (interface metadata, ipnet, nodesync,
//	       │ the DNAT44 values of the service renderer, policy.RuleOwners)
//	       ▼
//	     Result: the matching packets, hop by hop, and the node's verdict
//
// A trace not stopped within its timeout is stopped by the plugin (at most
// MaxTimeout), so tracing is off unless a trace runs: VPP traces nothing between
// traces, and a trace costs at most MaxCount packet records per input node.
//
// The endpoints are admin endpoints (plugins/rest): they change VPP's state and
// reveal internals, and the probe runs code in a pod's namespace.
//
// Parse and Explain are pure (no I/O): their tests run on traces recorded from the
// simulator. The explanation knows the trace lines of the nodes VPP 25.10 prints and
// the simulator reproduces (docs/dev-guide/VPP-FORWARDING.md); an unknown node is
// shown as VPP printed it.
//
// What it does not do: trace IPv6 probes through NAT (the NAT44 lines only), follow
// a packet into the Linux stack of a pod (the trace ends where VPP hands the packet
// to a TAP), or keep traces after they are read.
package tracer
