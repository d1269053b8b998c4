package webhook

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestCheckTimestampExtremes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1793188800, 0)
	tests := []struct {
		ts        int64
		tolerance time.Duration
		want      error
	}{
		{math.MaxInt64, DefaultTolerance, ErrTimestampTooNew},
		{maxUnixSeconds, DefaultTolerance, ErrTimestampTooNew},
		{maxUnixSeconds + 1, DefaultTolerance, ErrTimestampTooNew},
		{math.MinInt64, DefaultTolerance, ErrTimestampTooOld},
		{0, DefaultTolerance, ErrTimestampTooOld},
		{-1793188800, math.MaxInt64, nil},
		{1793188800, 0, nil},
		{1793188801, 0, ErrTimestampTooNew},
	}
	for _, tt := range tests {
		err := checkTimestamp("t", tt.ts, now, tt.tolerance)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("checkTimestamp(%d, tolerance %s) = %v, want %v", tt.ts, tt.tolerance, err, tt.want)
		}
	}
	if err := checkTimestamp("t", 1793188800, now, -time.Second); err == nil {
		t.Error("negative tolerance accepted a timestamp")
	}
}
