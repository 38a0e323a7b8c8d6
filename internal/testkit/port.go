package testkit

import "net"

// FreeTCPPort returns a TCP port that nothing listened on, on any address, when it
// was asked for (for a server the code under test opens on a port of its choosing;
// another process may take the port in between, as with any such helper).
func FreeTCPPort(tb T) uint16 {
	tb.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		tb.Fatalf("find a free TCP port: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		tb.Fatalf("find a free TCP port: close %d: %v", port, err)
	}
	return uint16(port)
}
