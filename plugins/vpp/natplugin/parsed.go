package natplugin

import (
	nat "github.com/contiv-vpp/contiv-vpp/api/models/vpp/nat"
)

// parsedCache keeps the mappings Validate parsed from the values it accepted, by value
// pointer, until the Create of the value takes them: the scheduler validates every
// value of a transaction before it creates them, and a first resync of 110,000
// mappings would otherwise parse each of them twice. Values given to the scheduler are
// not modified afterwards (the scheduler itself takes the same pointer for the same
// value), so the pointer identifies the content.
//
// A value found equal to the one in VPP (a resync restaging everything) is dropped
// by the comparator. The cache is bounded by the number of mappings it holds
// (maxParsedMappings): values validated but never created (pending, or replaced
// before their creation) are dropped oldest first. Only the descriptor's callbacks use it, on the scheduler's
// goroutine.
type parsedCache struct {
	byValue map[*nat.DNat44][]mapping
	order   []*nat.DNat44 // in the order added; may list values already taken
	size    int           // mappings held
}

// maxParsedMappings bounds the mappings parsedCache holds (about 100 bytes each, plus
// the locals, which mappings of one value share when they are the same).
const maxParsedMappings = 1 << 17

// put keeps the parsed mappings of v.
func (c *parsedCache) put(v *nat.DNat44, ms []mapping) {
	if len(ms) > maxParsedMappings {
		return
	}
	if c.byValue == nil {
		c.byValue = map[*nat.DNat44][]mapping{}
	}
	c.drop(v)
	for c.size+len(ms) > maxParsedMappings && len(c.order) > 0 {
		c.drop(c.order[0])
		c.order[0] = nil
		c.order = c.order[1:]
	}
	if len(c.order) > 2*len(c.byValue)+1024 {
		// mostly values already taken: keep the ones still held
		kept := make([]*nat.DNat44, 0, len(c.byValue)+1)
		for _, o := range c.order {
			if _, ok := c.byValue[o]; ok {
				kept = append(kept, o)
			}
		}
		c.order = kept
	}
	c.byValue[v] = ms
	c.order = append(c.order, v)
	c.size += len(ms)
}

// take returns the parsed mappings of v and forgets them; ok is false if they are not
// held.
func (c *parsedCache) take(v *nat.DNat44) (ms []mapping, ok bool) {
	ms, ok = c.byValue[v]
	if ok {
		c.drop(v)
	}
	return ms, ok
}

// peek returns the parsed mappings of v, keeping them; ok is false if they are not held.
func (c *parsedCache) peek(v *nat.DNat44) (ms []mapping, ok bool) {
	ms, ok = c.byValue[v]
	return ms, ok
}

// drop forgets the parsed mappings of v.
func (c *parsedCache) drop(v *nat.DNat44) {
	if ms, ok := c.byValue[v]; ok {
		delete(c.byValue, v)
		c.size -= len(ms)
	}
}
