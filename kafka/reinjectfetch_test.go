package kafka

import (
	"testing"
	"time"
)

func TestReinjectFetchWaitIsAQuarterOfTheTierWithinBounds(t *testing.T) {
	for _, c := range []struct{ tier, want time.Duration }{
		{5 * time.Minute, reinjectFetchMaxWait},
		{time.Second, 250 * time.Millisecond},
		{200 * time.Millisecond, 50 * time.Millisecond},
		{40 * time.Millisecond, 10 * time.Millisecond},
		{39 * time.Millisecond, 0},
		{time.Millisecond, 0},
	} {
		if got := reinjectFetchWait(c.tier); got != c.want {
			t.Errorf("reinjectFetchWait(%v) = %v, want %v", c.tier, got, c.want)
		}
		if got := reinjectFetchWait(c.tier); got > c.tier/4 {
			t.Errorf("reinjectFetchWait(%v) = %v waits past a quarter of the tier", c.tier, got)
		}
	}
}
