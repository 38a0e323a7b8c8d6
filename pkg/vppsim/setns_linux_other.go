//go:build linux && !amd64 && !arm64

package vppsim

// sysSetns is unknown on this architecture; Linux mode then fails to enter
// namespaces with ENOSYS.
const sysSetns = -1
