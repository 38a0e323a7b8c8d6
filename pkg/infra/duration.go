package infra

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration in configuration files. It reads both forms found in
// Contiv's files: an integer of nanoseconds (upstream's ConfigMaps, e.g. 1000000000) and
// a Go duration string ("1s", "1m30s"). It is written back as a string.
type Duration time.Duration

// UnmarshalJSON accepts a duration string or an integer of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (want e.g. \"5s\"): %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%s is not a duration: want nanoseconds or a string like \"5s\"", b)
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes the duration as a string ("5s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }
