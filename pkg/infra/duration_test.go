package infra

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDurationReadsNanosecondsAndStrings(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: `1000000000`, want: time.Second},
		{in: `"1m30s"`, want: 90 * time.Second},
		{in: `"soon"`, wantErr: `"soon" is not a duration (want e.g. "5s")`},
		{in: `true`, wantErr: `true is not a duration: want nanoseconds or a string like "5s"`},
	}
	for _, tc := range tests {
		var d Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || time.Duration(d) != tc.want {
			t.Errorf("%s: %v, %v", tc.in, time.Duration(d), err)
		}
	}
	out, _ := json.Marshal(Duration(5 * time.Second))
	if string(out) != `"5s"` || Duration(time.Minute).String() != "1m0s" {
		t.Errorf("marshal %s", out)
	}
}
