// Package vppbase is the one base the VPP plugins (plugins/vpp/ifplugin, l2plugin,
// l3plugin, natplugin, and aclplugin to come) are built on, so that they agree on
// what they need, how they talk to VPP and which failures they retry.
//
// What it holds:
//
//	Scheduler, GoVPP          what a VPP plugin needs of the KV scheduler and govppmux
//	OpenChannel, ReplyTimeout one channel per plugin: messages registered (checked by
//	                          govppmux against VPP), reply timeout set
//	DescriptorDeps, Descriptor what every descriptor of a plugin gets: logger (with the
//	                          descriptor name), channel, optional stream connection,
//	                          the interface metadata map (logical name -> sw_if_index)
//	Call, IsRetval            one request and its reply; the retval of a VPP error
//	IsRetriable, Retriable    THE rule for which failures the scheduler retries
//	AddrToAPI, PrefixToAPI,   the conversions between net/netip and VPP's ip_types,
//	AddrFromAPI, ...          written once
//
// A plugin built on it:
//
//	type Deps struct { Log; Scheduler vppbase.Scheduler; GoVPP vppbase.GoVPP }
//	Init:  ch, err := vppbase.OpenChannel("vpp-xplugin", p.GoVPP, messages)
//	       deps := vppbase.DescriptorDeps{Log: p.Log, Ch: ch, Ifaces: ...}
//	       p.Scheduler.RegisterKVDescriptor(kvapi.Typed(kvapi.TypedDescriptor[*x.Model, M]{
//	           ..., IsRetriableFailure: vppbase.IsRetriable}))
//
// # Which VPP errors are retried
//
// The scheduler retries a failed Create, Update or Delete (in a transaction committed
// WithRetry, with backoff) only when IsRetriableFailure says the failure may go away.
// The rule, for every VPP plugin:
//
//   - never retried: *kvapi.InvalidValueError and kvapi.ErrInvalidValueType (the value
//     itself is wrong), and the VPP retvals in Permanent. Each of them means that VPP
//     refuses the request for what it says, whatever else is configured:
//     VNET_API_ERROR_INVALID_VALUE (and _2) and INVALID_ARGUMENT are what VPP's
//     handlers return for a field out of its domain (an MTU out of range, a prefix
//     length over 32, an LB mapping with fewer than two locals, an unknown protocol,
//     ring sizes that are not a power of two); UNIMPLEMENTED is a message this VPP does
//     not handle; NON_ETHERNET, SAME_SRC_DST, INVALID_DECAP_NEXT, FEATURE_DISABLED (a
//     feature the interface type has not), BD_ID_EXCEED_MAX, BD_NOT_MODIFIABLE,
//     BD_ALREADY_HAS_BVI, INVALID_REGISTRATION and DUPLICATE_IF_ADDRESS describe a
//     request that conflicts with fixed properties. Retrying the same request gets the
//     same answer; the value is re-tried when NB changes it.
//   - retried: everything else. VPP reports a missing object with its own codes
//     (NO_SUCH_ENTRY, NO_SUCH_FIB, INVALID_SW_IF_INDEX, VALUE_EXIST after a lost reply,
//     UNSUPPORTED while the NAT plugin is being enabled, ...): another value may create
//     it meanwhile. BUSY, UNSPECIFIED, SYSCALL_ERROR_*, reply timeouts and a lost
//     connection are transient by nature.
//
// A plugin may add its own permanent errors (ifplugin: a NIC that does not exist) with
// Retriable(extra...). The rule is tested once, in this package.
//
// Not here: anything about a particular VPP object; descriptors stay in their plugins.
package vppbase
