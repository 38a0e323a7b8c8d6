package controller

import (
	"google.golang.org/protobuf/proto"

	"github.com/contiv-vpp/contiv-vpp/plugins/controller/api"
)

// External configuration.
//
// Values written for this node under /vnf-agent/<node>/config/ (and other external
// sources) are committed with the handlers' values. A key that a handler also stages
// (or staged and still owns) is the agent's: the agent's value wins, the external one is
// ignored for as long as both exist, and the conflict is logged once when it starts and
// counted (contiv_controller_external_config_conflicts_total, and the gauge
// contiv_controller_external_config_conflicts of keys in conflict now). A conflict is
// never an error: merging the two would let anyone who can write to etcd rewrite (or
// break, e.g. with a static mapping listed twice) what the agent renders.

// externalValue merges the values that every external source has for key; nil if none.
func (c *Controller) externalValue(key string) proto.Message {
	var merged proto.Message
	for _, src := range c.externalConfig {
		v, ok := src[key]
		if !ok {
			continue
		}
		if merged == nil {
			merged = proto.Clone(v)
		} else {
			proto.Merge(merged, v)
		}
	}
	return merged
}

// mergeExternalConfig stages the external values of keys the agent does not own: all of
// them for a resync, only the keys touched by this event for an update.
func (c *Controller) mergeExternalConfig(ev api.Event, txn *schedulerTxn) {
	if ev.Method() == api.DownstreamResync {
		return
	}
	if ev.Method().IsResync() {
		stillInConflict := make(map[string]struct{})
		for _, src := range c.externalConfig {
			for key := range src {
				if _, done := txn.merged[key]; done {
					continue
				}
				if internal := txn.values[key]; internal != nil {
					c.conflict(key, stillInConflict)
					continue
				}
				txn.merged[key] = c.externalValue(key)
			}
		}
		c.extConflicts = stillInConflict
		c.metrics.extConflicts.Set(float64(len(c.extConflicts)))
		return
	}
	touched := make(map[string]struct{})
	for key := range txn.values {
		touched[key] = struct{}{}
	}
	if e, ok := ev.(*api.ExternalConfigChange); ok {
		for key := range e.UpdatedKVs {
			touched[key] = struct{}{}
		}
	}
	for key := range touched {
		ext := c.externalValue(key)
		internal, staged := txn.values[key]
		if !staged {
			internal = c.internalConfig[key]
		}
		switch {
		case ext != nil && internal != nil:
			c.conflict(key, c.extConflicts) // the agent's value stays
		case ext != nil:
			delete(c.extConflicts, key)
			txn.merged[key] = ext
		case !staged:
			// External value removed: fall back to the internal one (or delete).
			delete(c.extConflicts, key)
			txn.merged[key] = internal
		default:
			delete(c.extConflicts, key)
		}
	}
	c.metrics.extConflicts.Set(float64(len(c.extConflicts)))
}

// conflict records that key has both an agent value and an external one; a conflict
// that was not known yet is logged and counted.
func (c *Controller) conflict(key string, into map[string]struct{}) {
	_, known := c.extConflicts[key]
	into[key] = struct{}{}
	if known {
		return
	}
	c.metrics.extConflictsTotal.Inc()
	c.Log.WithField("key", key).Warn("external configuration collides with a value of the agent: the agent's value is kept, the external one ignored")
}
