package ipam

import "math/bits"

// hostSet is a sparse bitmap of host numbers: 64-bit words kept in a map, so its size
// follows the number of members, not the size of the subnet (a /64 costs no more than
// a /24). Finding the next free host skips a full word per step, so with k members a
// search looks at no more than k/64+1 words, however large the subnet.
type hostSet struct {
	words map[uint64]uint64 // word number -> member bits; absent words are empty
	n     int
}

// len returns the number of members.
func (s *hostSet) len() int { return s.n }

// has tells whether i is a member.
func (s *hostSet) has(i uint64) bool {
	return s.words[i>>6]&(uint64(1)<<(i&63)) != 0
}

// add makes i a member; it returns false when i already was one.
func (s *hostSet) add(i uint64) bool {
	if s.words == nil {
		s.words = make(map[uint64]uint64)
	}
	w, bit := s.words[i>>6], uint64(1)<<(i&63)
	if w&bit != 0 {
		return false
	}
	s.words[i>>6] = w | bit
	s.n++
	return true
}

// remove drops i; it returns false when i was no member.
func (s *hostSet) remove(i uint64) bool {
	w, bit := s.words[i>>6], uint64(1)<<(i&63)
	if w&bit == 0 {
		return false
	}
	if w &^= bit; w == 0 {
		delete(s.words, i>>6)
	} else {
		s.words[i>>6] = w
	}
	s.n--
	return true
}

// nextFree returns the smallest non-member in [from, to].
func (s *hostSet) nextFree(from, to uint64) (uint64, bool) {
	for from <= to {
		word := from >> 6
		free := ^s.words[word] &^ (uint64(1)<<(from&63) - 1)
		if free != 0 {
			i := word<<6 | uint64(bits.TrailingZeros64(free))
			if i > to {
				break
			}
			return i, true
		}
		next := (word + 1) << 6
		if next == 0 { // past the largest number
			break
		}
		from = next
	}
	return 0, false
}
