package vppsim

// wirePort is the Linux end of an interface: a TAP file descriptor or a
// raw socket. send writes one frame without blocking (a full queue drops
// it, as a full ring would); close stops its reader.
type wirePort interface {
	send(frame []byte)
	close()
}
