//go:build !linux

package vppsim

import "errors"

func (s *Sim) attachRaw(i *iface, ifName string) error {
	return errors.New("raw sockets need Linux")
}

func (s *Sim) attachTap(i *iface, t hostTap) {}

func setPromisc(name string) error {
	return errors.New("binding NICs to Linux interfaces needs Linux")
}
