package statseg

import "fmt"

// SimpleCounter is a simple counter vector entry ([thread][index] of u64), for
// counters the VPP-shaped helpers do not cover (cnat, FIB, a plugin's own).
type SimpleCounter struct {
	s *Segment
	i uint32
}

// CombinedCounter is a combined counter vector entry ([thread][index] of {packets,
// bytes}).
type CombinedCounter struct {
	s *Segment
	i uint32
}

// Scalar is a scalar entry: one u64 in the directory entry itself.
type Scalar struct {
	s *Segment
	i uint32
}

// NewSimpleCounter registers a simple counter vector of n elements per thread.
func (s *Segment) NewSimpleCounter(name string, n uint32) (SimpleCounter, error) {
	var i uint32
	err := s.change(func() (err error) { i, err = s.addCounter(typeSimple, name, n); return err })
	return SimpleCounter{s, i}, err
}

// NewCombinedCounter registers a combined counter vector of n elements per thread.
func (s *Segment) NewCombinedCounter(name string, n uint32) (CombinedCounter, error) {
	var i uint32
	err := s.change(func() (err error) { i, err = s.addCounter(typeCombined, name, n); return err })
	return CombinedCounter{s, i}, err
}

// NewScalar registers a scalar entry holding v.
func (s *Segment) NewScalar(name string, v uint64) (Scalar, error) {
	var i uint32
	err := s.change(func() (err error) { i, err = s.addEntry(typeScalar, name, v); return err })
	return Scalar{s, i}, err
}

// Remove deletes the entry with the given name (its slot becomes EMPTY and is reused
// by the next entry, as in VPP). Handles of the entry must not be used afterwards.
func (s *Segment) Remove(name string) error {
	return s.change(func() error {
		i, ok := s.byName[name]
		if !ok {
			return refused(fmt.Errorf("statseg: remove %q: no such entry", name))
		}
		s.removeEntry(i)
		return nil
	})
}

// Add adds n to element k of thread t; an element or thread out of range is ignored.
func (c SimpleCounter) Add(t int, k uint32, n uint64) {
	c.s.mu.RLock()
	if !c.s.closed && c.s.entries[c.i].typ == typeSimple {
		c.s.addSimple(c.i, t, k, n)
	}
	c.s.mu.RUnlock()
}

// Set stores v in element k of thread t (a gauge, like NAT's total-sessions).
func (c SimpleCounter) Set(t int, k uint32, v uint64) {
	c.s.mu.RLock()
	if !c.s.closed && c.s.entries[c.i].typ == typeSimple {
		c.s.setSimple(c.i, t, k, v)
	}
	c.s.mu.RUnlock()
}

// Validate grows every thread's vector to at least n elements (vlib_validate_simple_counter):
// a directory change, so readers re-read.
func (c SimpleCounter) Validate(n uint32) error {
	return c.s.change(func() error { return c.s.growCounter(c.i, n) })
}

// Add adds packets and bytes to element k of thread t.
func (c CombinedCounter) Add(t int, k uint32, packets, bytes uint64) {
	c.s.mu.RLock()
	if !c.s.closed && c.s.entries[c.i].typ == typeCombined {
		c.s.addCombined(c.i, t, k, packets, bytes)
	}
	c.s.mu.RUnlock()
}

// Zero zeroes element k of every thread (vlib_zero_combined_counter).
func (c CombinedCounter) Zero(k uint32) {
	c.s.mu.RLock()
	if !c.s.closed && c.s.entries[c.i].typ == typeCombined {
		for t := range c.s.entries[c.i].inner {
			c.s.zeroCombined(c.i, t, k)
		}
	}
	c.s.mu.RUnlock()
}

// Validate grows every thread's vector to at least n elements.
func (c CombinedCounter) Validate(n uint32) error {
	return c.s.change(func() error { return c.s.growCounter(c.i, n) })
}

// Set stores v.
func (c Scalar) Set(v uint64) {
	c.s.mu.RLock()
	if !c.s.closed && c.s.entries[c.i].typ == typeScalar {
		c.s.setScalar(c.i, v)
	}
	c.s.mu.RUnlock()
}
