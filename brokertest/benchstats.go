package brokertest

import (
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Median returns the median of xs, the mean of the middle two for an even
// count, or 0 for none. It sorts xs in place.
func Median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// BareSleepRate returns how many sleeps of d per second n goroutines that
// do nothing else complete within run. A benchmark of handlers that sleep
// compares its rate with it: the host, not the code, decides how late a
// sleep wakes.
func BareSleepRate(n int, d, run time.Duration) float64 {
	var count atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(run)
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				time.Sleep(d)
				count.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds()
}

// LoadAverage returns the host's one-minute load average as /proc/loadavg
// gives it, or "?" where there is none; a benchmark round prints it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
