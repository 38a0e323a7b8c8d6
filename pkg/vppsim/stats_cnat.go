package vppsim

import "github.com/contiv-vpp/contiv-vpp/pkg/vppsim/statseg"

// cnatCounterName is cnat's translation counter (cnat_translation.c:
// cnat_translation_counters, a combined counter thread × translation id).
const cnatCounterName = "/net/cnat-translation"

// cnatStats is the translation counter's handle in the current segment.
type cnatStats struct {
	ok bool
	c  statseg.CombinedCounter
}

// cnatCounterReset validates and zeroes the counter of a new translation id
// (vlib_validate_combined_counter + vlib_zero_combined_counter). The entry
// appears with the first translation, as VPP's stats entry is made by the
// first validation.
func (st *state) cnatCounterReset(id uint32) {
	g := st.seg()
	if g == nil {
		return
	}
	cs := &st.cnat.stats
	if !cs.ok {
		c, err := g.NewCombinedCounter(cnatCounterName, id+1)
		if err != nil {
			st.s.log.WithError(err).Warn("stats segment: cnat translation counter")
			return
		}
		cs.c, cs.ok = c, true
	}
	if err := cs.c.Validate(id + 1); err != nil {
		st.s.log.WithError(err).Warn("stats segment: cnat translation counter")
	}
	cs.c.Zero(id)
}

// cnatCount counts a packet a translation created a session for.
func (st *state) cnatCount(id uint32, bytes int) {
	if st.cnat.stats.ok && st.seg() != nil {
		st.cnat.stats.c.Add(statsThread, id, 1, uint64(bytes))
	}
}
