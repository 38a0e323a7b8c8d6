package kvscheduler

import (
	"sort"
	"strings"
)

// nodeSet is a set of nodes that stays a small slice while it is small (most
// dependency keys have one or two dependents) and becomes a map when it grows, so that
// both memory per entry and removal cost stay low.
type nodeSet struct {
	small []*node
	big   map[*node]struct{}
}

const smallSetMax = 16

func (s *nodeSet) add(n *node) {
	if s.big != nil {
		s.big[n] = struct{}{}
		return
	}
	for _, m := range s.small {
		if m == n {
			return
		}
	}
	if len(s.small) < smallSetMax {
		s.small = append(s.small, n)
		return
	}
	s.big = make(map[*node]struct{}, 2*smallSetMax)
	for _, m := range s.small {
		s.big[m] = struct{}{}
	}
	s.big[n] = struct{}{}
	s.small = nil
}

func (s *nodeSet) remove(n *node) {
	if s.big != nil {
		delete(s.big, n)
		return
	}
	for i, m := range s.small {
		if m == n {
			last := len(s.small) - 1
			s.small[i] = s.small[last]
			s.small[last] = nil
			s.small = s.small[:last]
			return
		}
	}
}

func (s *nodeSet) size() int {
	if s.big != nil {
		return len(s.big)
	}
	return len(s.small)
}

// appendTo appends the members to out (in no particular order).
func (s *nodeSet) appendTo(out []*node) []*node {
	if s.big != nil {
		for n := range s.big {
			out = append(out, n)
		}
		return out
	}
	return append(out, s.small...)
}

// sortedKeys is an ordered set of strings kept as a list of sorted chunks (a flat
// B-tree of height one). Insert and remove cost O(log n + chunk size); a prefix scan
// costs O(log n + matches). It indexes the keys of existing values so AnyOf
// dependencies are answered without looking at unrelated values.
type sortedKeys struct {
	chunks [][]string
	n      int
}

const chunkMax = 256

// chunkFor returns the index of the first chunk whose last key is >= k
// (len(chunks) if none).
func (s *sortedKeys) chunkFor(k string) int {
	return sort.Search(len(s.chunks), func(i int) bool {
		c := s.chunks[i]
		return c[len(c)-1] >= k
	})
}

func (s *sortedKeys) insert(k string) {
	ci := s.chunkFor(k)
	if ci == len(s.chunks) {
		if ci == 0 {
			s.chunks = append(s.chunks, make([]string, 0, 8))
		} else {
			ci--
		}
	}
	c := s.chunks[ci]
	i := sort.SearchStrings(c, k)
	if i < len(c) && c[i] == k {
		return
	}
	c = append(c, "")
	copy(c[i+1:], c[i:])
	c[i] = k
	s.n++
	if len(c) <= chunkMax {
		s.chunks[ci] = c
		return
	}
	half := len(c) / 2
	right := make([]string, len(c)-half, chunkMax)
	copy(right, c[half:])
	clear(c[half:])
	s.chunks[ci] = c[:half]
	s.chunks = append(s.chunks, nil)
	copy(s.chunks[ci+2:], s.chunks[ci+1:])
	s.chunks[ci+1] = right
}

func (s *sortedKeys) remove(k string) {
	ci := s.chunkFor(k)
	if ci == len(s.chunks) {
		return
	}
	c := s.chunks[ci]
	i := sort.SearchStrings(c, k)
	if i == len(c) || c[i] != k {
		return
	}
	copy(c[i:], c[i+1:])
	c[len(c)-1] = ""
	c = c[:len(c)-1]
	s.n--
	if len(c) > 0 {
		s.chunks[ci] = c
		return
	}
	copy(s.chunks[ci:], s.chunks[ci+1:])
	s.chunks[len(s.chunks)-1] = nil
	s.chunks = s.chunks[:len(s.chunks)-1]
}

// ascendPrefix calls f for every key with the given prefix, in order, until f
// returns false.
func (s *sortedKeys) ascendPrefix(prefix string, f func(k string) bool) {
	for ci := s.chunkFor(prefix); ci < len(s.chunks); ci++ {
		c := s.chunks[ci]
		i := 0
		if len(c) > 0 && c[0] < prefix {
			i = sort.SearchStrings(c, prefix)
		}
		for ; i < len(c); i++ {
			if !strings.HasPrefix(c[i], prefix) {
				return
			}
			if !f(c[i]) {
				return
			}
		}
	}
}
