package brokertest

import (
	"fmt"
	"slices"
	"time"
)

// SeqLatencyP50 measures two sequential publish paths against each other:
// warm calls of each first (metadata, connections), then n rounds, each
// timing one call of ours and then one of raw, so that both sides see the
// same broker and machine load. It returns the median latency of each side
// in milliseconds, or the first error a call returned.
func SeqLatencyP50(warm, n int, ours, raw func() error) (oursMs, rawMs float64, err error) {
	if n <= 0 {
		return 0, 0, fmt.Errorf("brokertest: %d latency rounds; want at least one", n)
	}
	for range warm {
		if err := ours(); err != nil {
			return 0, 0, fmt.Errorf("brokertest: warm-up of ours: %w", err)
		}
		if err := raw(); err != nil {
			return 0, 0, fmt.Errorf("brokertest: warm-up of raw: %w", err)
		}
	}
	o, r := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := ours(); err != nil {
			return 0, 0, fmt.Errorf("brokertest: ours: %w", err)
		}
		o = append(o, time.Since(start))
		start = time.Now()
		if err := raw(); err != nil {
			return 0, 0, fmt.Errorf("brokertest: raw: %w", err)
		}
		r = append(r, time.Since(start))
	}
	return medianMs(o), medianMs(r), nil
}

// medianMs returns the median of xs (the upper middle for an even count)
// in milliseconds; it sorts xs.
func medianMs(xs []time.Duration) float64 {
	slices.Sort(xs)
	return float64(xs[len(xs)/2]) / float64(time.Millisecond)
}
