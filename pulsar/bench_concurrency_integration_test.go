//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestBenchPulsarAppIOBound measures an App whose handler takes 5 ms
// (time.Sleep), 64 in flight with OrderKey on a Shared subscription (the
// App keeps the key order) and 200 keys, against the ceiling of 64
// handlers per 5 ms. It prints
// "bench: pulsar-app-io-bound-throughput ours=<msg/s> ceiling=<msg/s> ratio=<ours/ceiling>"
// with the median of its rounds, and the same rate against what bare
// goroutines sleeping 5 ms reach on this machine in the same run, against a
// raw pulsar-client-go consumer whose 64 goroutines each receive, sleep 5 ms
// and acknowledge (pulsar-app-io-bound-vs-raw-client, same keys and fill),
// and the process CPU time per message (pulsar-app-io-bound-cpu-us-per-record).
//
// The topic is filled as the Kafka bench fills its own (fillKeyed): in
// batches, here the client's default batching, about 180 messages per
// entry. The broker shares this machine's cores with the handlers, and its
// CPU goes per entry (dispatch, acknowledgement, reads), so a fill of one
// entry per message costs it about 4 times the CPU per message and delays
// the handlers' 5 ms timers. That fill is measured too, for both sides,
// under the name pulsar-app-io-bound-entry-per-message-*. Each round's
// bench-phase lines show where a handler slot's cycle went and the CPU of
// the machine, the broker and this process (BENCHMARKS.md at the
// repository root, "Pulsar IO-bound consumption").
func TestBenchPulsarAppIOBound(t *testing.T) {
	benchEnabled(t)
	b := newConsumeBench(t)
	b.keys = 200
	b.batchedFill = true
	ioBoundRounds(b, "pulsar-app-io-bound")
	b.batchedFill = false
	ioBoundRounds(b, "pulsar-app-io-bound-entry-per-message")
}

// ioBoundRounds runs the rounds of TestBenchPulsarAppIOBound on b's fill
// and prints their lines under name; ours and raw alternate in which goes
// first.
func ioBoundRounds(b *consumeBench, name string) {
	const (
		inFlight      = 64
		latency       = 5 * time.Millisecond
		total, rounds = 10000, 3
	)
	ceiling := float64(inFlight) / latency.Seconds()
	var rates, bare, vsBare, rawRates, vsRaw, cpus []float64
	for round := 1; round <= rounds; round++ {
		ours := func() {
			rs := b.ours(total, latency, []Option{WithSubscriptionType(pulsar.Shared)},
				babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
			r, cpu := rs[0], 0.0
			if rs[1] > 0 {
				cpu = 1e6 / rs[1]
				cpus = append(cpus, cpu)
			}
			fmt.Printf("bench-round: %s-throughput round=%d ours=%.0f ceiling=%.0f ratio=%.2f cpu-us-per-record=%.1f\n", name, round, r, ceiling, r/ceiling, cpu)
			fmt.Printf("bench-phase: %s round=%d side=ours rate=%.0f %s\n", name, round, r, b.last.String(inFlight))
			rates = append(rates, r)
		}
		raw := func() {
			r := b.rawConcurrent(total, inFlight, latency)
			fmt.Printf("bench-phase: %s round=%d side=raw rate=%.0f %s\n", name, round, r, b.last.String(inFlight))
			rawRates = append(rawRates, r)
		}
		if round%2 == 1 {
			ours()
			raw()
		} else {
			raw()
			ours()
		}
		vsRaw = append(vsRaw, rates[len(rates)-1]/rawRates[len(rawRates)-1])
		// What bare goroutines sleeping 5 ms reach on this machine right
		// after: the nominal ceiling is not reachable on a loaded host.
		bare = append(bare, brokertest.BareSleepRate(inFlight, latency, 2*time.Second))
		vsBare = append(vsBare, rates[len(rates)-1]/bare[len(bare)-1])
	}
	ours := brokertest.Median(rates)
	fmt.Printf("bench: %s-throughput ours=%.0f ceiling=%.0f ratio=%.2f\n", name, ours, ceiling, ours/ceiling)
	fmt.Printf("bench: %s-vs-bare-sleep ours=%.0f raw=%.0f ratio=%.2f\n", name, ours, brokertest.Median(bare), brokertest.Median(vsBare))
	fmt.Printf("bench: %s-vs-raw-client ours=%.0f raw=%.0f ratio=%.2f\n", name, ours, brokertest.Median(rawRates), brokertest.Median(vsRaw))
	if len(cpus) > 0 {
		fmt.Printf("bench: %s-cpu-us-per-record value=%.1f\n", name, brokertest.Median(cpus))
	}
}

// TestBenchPulsarConsumeConcurrent compares an App with 64 handlers at
// once (OrderKey, Shared) and a no-op handler with a raw consumer, in
// paired rounds, and prints
// "bench: pulsar-consume-concurrent-throughput ours=... raw=... ratio=...".
func TestBenchPulsarConsumeConcurrent(t *testing.T) {
	benchEnabled(t)
	b := newConsumeBench(t)
	conc := babelqueue.WithConcurrency(64, babelqueue.OrderKey)
	b.ours(benchWarmupMessages, 0, nil, conc)
	b.raw(benchWarmupMessages)
	pairedMetrics([]string{"pulsar-consume-concurrent-throughput", "pulsar-consume-concurrent-cpu-throughput"}, 5,
		func() []float64 { return b.ours(benchConsumeMessages, 0, nil, conc) },
		func() []float64 { return b.raw(benchConsumeMessages) })
}

// rawConcurrent consumes n messages (keyed as the App's rounds) with a raw
// Shared consumer read by inFlight goroutines, each receiving, sleeping
// delay and acknowledging, and returns messages per second.
func (b *consumeBench) rawConcurrent(n, inFlight int, delay time.Duration) float64 {
	t := b.t
	rc := b.rawFilled(n)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var claimed, handled, ackFailed, waited, slept, acked atomic.Int64
	var wg sync.WaitGroup
	var ended phaseEnd
	host0 := readHostCPU(b.brokerPID)
	cpu0, cpuKnown := processCPU()
	start := time.Now()
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for claimed.Add(1) <= int64(n) {
				t0 := time.Now()
				m, err := rc.Receive(ctx)
				if err != nil {
					return
				}
				t1 := time.Now()
				time.Sleep(delay)
				t2 := time.Now()
				if rc.Ack(m) != nil {
					ackFailed.Add(1)
				}
				t3 := time.Now()
				waited.Add(int64(t1.Sub(t0)))
				slept.Add(int64(t2.Sub(t1)))
				acked.Add(int64(t3.Sub(t2)))
				if handled.Add(1) == int64(n) {
					ended.mark(b.brokerPID)
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if f := ackFailed.Load(); f > 0 {
		t.Fatalf("raw: %d acknowledgements failed", f)
	}
	if got := handled.Load(); got < int64(n) {
		t.Fatalf("raw: handled %d of %d messages in %v", got, n, benchPhaseLimit)
	}
	b.last = phaseStats{n: n, wall: wall, host: ended.host.minus(host0), cpu: ended.cpu - cpu0, cpuKnown: cpuKnown,
		slept: time.Duration(slept.Load()), waited: time.Duration(waited.Load()), acked: time.Duration(acked.Load())}
	return float64(n) / wall.Seconds()
}
