// Package nsplugin resolves references to Linux network namespaces and runs
// work inside them, for the Linux descriptors (ifplugin, l3plugin) and for
// ipnet.
//
// A namespace is named by a linux_interfaces.NetNamespace reference:
//
//	UNDEFINED_NS        the agent's own namespace (/proc/self/ns/net)
//	PID <pid>           /proc/<pid>/ns/net
//	NAME <name>         <netns dir>/<name> (/var/run/netns/<name>, as "ip netns add")
//	FD <path>           the namespace bound at <path> (/proc/<pid>/ns/net, a CNI netns path)
//	MICROSERVICE        not supported: rejected with ErrUnsupportedReference
//
// Two ways to work in a namespace are offered. NetlinkHandle opens a netlink
// socket inside the namespace, so the caller never leaves its own thread's
// namespace; prefer it for everything netlink can do. WithNamespace switches
// the calling OS thread into the namespace for the length of a function (for
// ioctls, sysctls and sockets that netlink cannot reach), and switches back;
// a thread that cannot be switched back stays locked, so the Go runtime
// terminates it with the goroutine instead of reusing it.
//
// A namespace that does not exist (yet) gives a *NamespaceError that matches
// ErrNamespaceNotFound: a pod's namespace may appear later, so callers treat
// it as retriable.
//
// The package does not create or delete namespaces, and it keeps no state: a
// handle is opened per call and closed by the caller.
package nsplugin
