package testkit

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeTCPPortCanBeListenedOn(t *testing.T) {
	port := FreeTCPPort(t)
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(int(port)))
	if err != nil {
		t.Fatalf("listen on the free port %d: %v", port, err)
	}
	_ = ln.Close()
}
