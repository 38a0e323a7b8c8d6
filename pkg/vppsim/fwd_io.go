package vppsim

import (
	"bytes"
	"fmt"
	"net"
)

// wirePort is the Linux end of an interface: a TAP file descriptor or a
// raw socket. send writes one frame without blocking (a full queue drops
// it, as a full ring would); close stops its reader.
type wirePort interface {
	send(frame []byte)
	close()
}

// attachNICs binds the NICs given as NAME=LINUXIF to their Linux
// interfaces: a raw socket moves their frames. The NIC has its own MAC
// (boundNICMAC), not the Linux interface's, so the Linux stack of the
// simulator's namespace treats the NIC's frames as another host's and never
// routes them a second time; the Linux interface is made promiscuous so that
// it delivers them. The caller holds s.mu.
func (st *state) attachNICs() error {
	for _, name := range st.s.nicNames {
		link, ok := st.s.nicLinks[name]
		i := st.byName[name]
		if !ok || i == nil || i.port != nil {
			continue
		}
		ifc, err := net.InterfaceByName(link)
		if err != nil {
			st.releaseHost()
			return fmt.Errorf("vppsim: NIC %s: find Linux interface %q: %w", name, link, err)
		}
		i.mac = boundNICMAC(ifc.HardwareAddr)
		if err := setPromisc(link); err != nil {
			st.releaseHost()
			return fmt.Errorf("vppsim: NIC %s: %w", name, err)
		}
		if err := st.s.attachRaw(i, link); err != nil {
			st.releaseHost()
			return fmt.Errorf("vppsim: NIC %s: %w", name, err)
		}
	}
	return nil
}

// bindNICs binds the NICs of the current state at Start, unless the
// simulator is already closed.
func (s *Sim) bindNICs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.st.attachNICs(); err != nil {
		return err
	}
	s.nicsBound = true
	return nil
}

// boundNICMAC is the MAC of a NIC bound to a Linux interface whose MAC is hw.
// A VPP NIC has its hardware's burned-in MAC: a different one on every
// machine, and the same after VPP restarts. The simulator has no hardware, so
// it makes one (the spec is silent; this is the simulator's choice):
// 08:00:27 followed by the last three bytes of the Linux interface's MAC,
// which differ from link to link as Linux's random MACs do and stay as long
// as the link exists. It never equals hw, so the Linux stack never takes the
// NIC's frames for its own. Unbound NICs keep the fixed 08:00:27:5a:00:0N of
// newState (several simulators on one node network need bound NICs anyway).
func boundNICMAC(hw net.HardwareAddr) [6]byte {
	m := [6]byte{0x08, 0x00, 0x27}
	if len(hw) == len(m) {
		copy(m[3:], hw[3:])
	}
	if bytes.Equal(m[:], hw) {
		m[3] ^= 0x80
	}
	return m
}
