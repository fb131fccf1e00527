package brokertest

import (
	"strconv"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestBareSleepRateCountsEverySleep(t *testing.T) {
	// Two goroutines sleeping 10 ms for 100 ms complete at most 2 × 10
	// sleeps (plus the one each starts before the end), so at most about
	// 240 per second once the wall time is counted, and some at least.
	got := BareSleepRate(2, 10*time.Millisecond, 100*time.Millisecond)
	if got <= 0 || got > 240 {
		t.Fatalf("BareSleepRate = %.1f/s, want between 0 and 240", got)
	}
}

func TestLoadAverageIsANumberOrUnknown(t *testing.T) {
	got := LoadAverage()
	if got == "?" {
		return // no /proc/loadavg on this host
	}
	if _, err := strconv.ParseFloat(got, 64); err != nil {
		t.Errorf("LoadAverage() = %q, want a number or ?", got)
	}
}
