package vppsim

import "fmt"

// wirePort is the Linux end of an interface: a TAP file descriptor or a
// raw socket. send writes one frame without blocking (a full queue drops
// it, as a full ring would); close stops its reader.
type wirePort interface {
	send(frame []byte)
	close()
}

// attachNICs binds the NICs given as NAME=LINUXIF to their Linux
// interfaces: a raw socket moves their frames. The NIC keeps its own MAC,
// not the Linux interface's, so the Linux stack of the simulator's
// namespace treats the NIC's frames as another host's and never routes
// them a second time; the Linux interface is made promiscuous so that it
// delivers them. The caller holds s.mu.
func (st *state) attachNICs() error {
	for _, name := range st.s.nicNames {
		link, ok := st.s.nicLinks[name]
		i := st.byName[name]
		if !ok || i == nil || i.port != nil {
			continue
		}
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
