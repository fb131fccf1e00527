//go:build integration

package kafka

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestBenchKafkaAppIOBoundOrderings measures an App whose handler takes
// 5 ms (time.Sleep) with 6 handlers at once on 6 partitions under each
// ordering, against the same ceiling of 6 handlers per 5 ms: OrderKey on
// records keyed over 200 keys, OrderPartition and OrderNone on keyless
// records. With one lane per partition OrderPartition can run 6 at once,
// so the three share the ceiling. It prints, with the median of its
// rounds (the rounds' lines give the host's load average),
// "bench: kafka-app-io-bound-order-<key|partition|none> ours=<msg/s> ceiling=<msg/s> ratio=<ours/ceiling>",
// and the same line for 6 bare goroutines sleeping 5 ms
// (kafka-app-io-bound-order-bare-sleep): what the host lets the ceiling be.
func TestBenchKafkaAppIOBoundOrderings(t *testing.T) {
	benchOnly(t)
	const (
		partitions, keys, inFlight = 6, 200, 6
		latency                    = 5 * time.Millisecond
		total, rounds              = 6000, 3
	)
	tr := itTransport(t)
	keyed, keyless := uniq("bench-io-keyed"), uniq("bench-io-keyless")
	ensure(t, tr, keyed, partitions)
	ensure(t, tr, keyless, partitions)
	ctx := bgCtx(t, 5*time.Minute)
	body := envelope(t, 0)
	fillKeyed(t, ctx, keyed, body, total, keys)
	fillKeyless(t, ctx, keyless, body, total)
	ceiling := float64(inFlight) / latency.Seconds()
	for _, c := range []struct {
		order babelqueue.Ordering
		topic string
	}{{babelqueue.OrderKey, keyed}, {babelqueue.OrderPartition, keyless}, {babelqueue.OrderNone, keyless}} {
		name := "kafka-app-io-bound-order-" + c.order.String()
		var rates []float64
		for round := range rounds {
			runtime.GC()
			r := consumeAppWith(t, ctx, c.topic, total, latency, babelqueue.WithConcurrency(inFlight, c.order))
			fmt.Printf("bench-round: %s round=%d ours=%.0f ceiling=%.0f ratio=%.2f load-average=%s\n", name, round+1, r, ceiling, r/ceiling, brokertest.LoadAverage())
			rates = append(rates, r)
		}
		ours := brokertest.Median(rates)
		fmt.Printf("bench: %s ours=%.0f ceiling=%.0f ratio=%.2f\n", name, ours, ceiling, ours/ceiling)
	}
	// What 6 bare goroutines sleeping 5 ms reach on this host right after:
	// the ceiling a loaded host leaves.
	bare := brokertest.BareSleepRate(inFlight, latency, 2*time.Second)
	fmt.Printf("bench: kafka-app-io-bound-order-bare-sleep ours=%.0f ceiling=%.0f ratio=%.2f\n", bare, ceiling, bare/ceiling)
}
