package vppsim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFailSpec parses a failure injection "msg=retval[:times]", e.g.
// "ip_route_add_del=-3" (always) or "tap_create_v3=-13:2" (twice), for
// FailMessage.
func ParseFailSpec(spec string) (name string, retval int32, times int, err error) {
	name, val, ok := strings.Cut(spec, "=")
	if !ok || name == "" || val == "" {
		return "", 0, 0, fmt.Errorf("fail spec %q: want msg=retval[:times]", spec)
	}
	rv, count, hasCount := strings.Cut(val, ":")
	v, err := strconv.ParseInt(rv, 10, 32)
	if err != nil {
		return "", 0, 0, fmt.Errorf("fail spec %q: retval: %w", spec, err)
	}
	if hasCount {
		times, err = strconv.Atoi(count)
		if err != nil || times <= 0 {
			return "", 0, 0, fmt.Errorf("fail spec %q: times must be a positive number", spec)
		}
	}
	return name, int32(v), times, nil
}

// ParseDelaySpec parses a delay injection "msg=duration", e.g.
// "sw_interface_dump=200ms", for DelayMessage.
func ParseDelaySpec(spec string) (name string, d time.Duration, err error) {
	name, val, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("delay spec %q: want msg=duration", spec)
	}
	d, err = time.ParseDuration(val)
	if err != nil || d < 0 {
		return "", 0, fmt.Errorf("delay spec %q: invalid duration", spec)
	}
	return name, d, nil
}
