package kafka

import (
	"testing"
	"time"
)

// A delayed publish takes the smallest tier that covers the delay; none
// covers a delay above the largest tier.
func TestTierForDelayTakesTheSmallestCoveringTier(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		want  int
	}{
		{time.Second, 1},
		{5 * time.Second, 1},
		{6 * time.Second, 2},
		{time.Hour, 0},
	} {
		if got := tierForDelay(c.delay, DefaultRetryTiers); got != c.want {
			t.Errorf("tierForDelay(%v) = %d, want %d", c.delay, got, c.want)
		}
	}
}
