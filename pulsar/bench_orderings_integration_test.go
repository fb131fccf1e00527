//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// fillPartitioned writes n bench envelopes to the partitioned topic in
// batches: keyed round robin over keys keys (the partition of the key's
// hash), or, with keys 0, keyless, one partition after the other, so that
// every partition holds the same count.
func (b *consumeBench) fillPartitioned(topic string, n, keys int) {
	t := b.t
	var seq atomic.Int64
	opts := benchProducerOptions(topic)
	opts.BatchingMaxPublishDelay = 0 // the client's default, 10 ms
	opts.MessageRouter = func(m *pulsar.ProducerMessage, tm pulsar.TopicMetadata) int {
		if m.Key == "" {
			return int(seq.Add(1) % int64(tm.NumPartitions()))
		}
		h := fnv.New32a()
		h.Write([]byte(m.Key))
		return int(h.Sum32() % tm.NumPartitions())
	}
	p, err := b.c.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var i int
	b.fillBatched(p, n, func() *pulsar.ProducerMessage {
		m := &pulsar.ProducerMessage{Payload: b.body, Properties: b.props}
		if keys > 0 {
			m.Key = fmt.Sprintf("key-%d", i%keys)
		}
		i++
		return m
	})
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
}

// oursPartitioned consumes n messages of a new topic of partitions
// partitions, filled by fillPartitioned, through a Consumer (App) on a
// subscription of type st with appOpts, whose handler sleeps delay, and
// returns messages per second from the first handled to the last.
func (b *consumeBench) oursPartitioned(partitions, n, keys int, delay time.Duration, st pulsar.SubscriptionType, appOpts ...babelqueue.Option) float64 {
	t := b.t
	q := uniqueQueue(t)
	brokertest.PulsarPartitionedTopic(t, q, partitions)
	tr := newIntegrationTransport(t, WithSubscriptionType(st), WithRepublishRetries())
	defer tr.Close()
	if _, err := tr.consumerFor(q); err != nil { // subscribe before the fill
		t.Fatal(err)
	}
	b.fillPartitioned(q, n, keys)
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var handled atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	cons := NewConsumer(tr, q, map[string]babelqueue.Handler{
		"urn:babel:bench:ping": func(context.Context, *babelqueue.Envelope) error {
			time.Sleep(delay)
			switch c := handled.Add(1); {
			case c == 1:
				mu.Lock()
				first = time.Now()
				mu.Unlock()
			case c == int64(n):
				mu.Lock()
				last = time.Now()
				mu.Unlock()
				cancel()
			}
			return nil
		},
	}, appOpts...)
	if err := cons.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := handled.Load(); got < int64(n) {
		t.Fatalf("handled %d of %d messages in %v", got, n, benchPhaseLimit)
	}
	mu.Lock()
	defer mu.Unlock()
	return float64(n-1) / last.Sub(first).Seconds()
}

// TestBenchPulsarAppIOBoundOrderings measures an App whose handler takes
// 5 ms (time.Sleep) with 6 handlers at once on a topic of 6 partitions
// under each ordering, on the subscription type it maps to, against the
// same ceiling of 6 handlers per 5 ms: OrderKey on Key_Shared with
// messages keyed over 200 keys, OrderPartition on Failover and OrderNone
// on Shared with keyless messages spread evenly. It prints, with the
// median of its rounds (the rounds' lines give the host's load average),
// "bench: pulsar-app-io-bound-order-<key|partition|none> ours=<msg/s> ceiling=<msg/s> ratio=<ours/ceiling>",
// and the same line for 6 bare goroutines sleeping 5 ms
// (pulsar-app-io-bound-order-bare-sleep): what the host lets the ceiling be.
func TestBenchPulsarAppIOBoundOrderings(t *testing.T) {
	benchEnabled(t)
	const (
		partitions, keys, inFlight = 6, 200, 6
		latency                    = 5 * time.Millisecond
		total, rounds              = 6000, 3
	)
	b := newConsumeBench(t)
	ceiling := float64(inFlight) / latency.Seconds()
	for _, c := range []struct {
		order babelqueue.Ordering
		st    pulsar.SubscriptionType
		keys  int
	}{{babelqueue.OrderKey, pulsar.KeyShared, keys}, {babelqueue.OrderPartition, pulsar.Failover, 0}, {babelqueue.OrderNone, pulsar.Shared, 0}} {
		name := "pulsar-app-io-bound-order-" + c.order.String()
		var rates []float64
		for round := range rounds {
			r := b.oursPartitioned(partitions, total, c.keys, latency, c.st, babelqueue.WithConcurrency(inFlight, c.order))
			fmt.Printf("bench-round: %s round=%d subscription=%s ours=%.0f ceiling=%.0f ratio=%.2f load-average=%s\n",
				name, round+1, subscriptionTypeName(c.st), r, ceiling, r/ceiling, brokertest.LoadAverage())
			rates = append(rates, r)
		}
		ours := brokertest.Median(rates)
		fmt.Printf("bench: %s ours=%.0f ceiling=%.0f ratio=%.2f\n", name, ours, ceiling, ours/ceiling)
	}
	bare := brokertest.BareSleepRate(inFlight, latency, 2*time.Second)
	fmt.Printf("bench: pulsar-app-io-bound-order-bare-sleep ours=%.0f ceiling=%.0f ratio=%.2f\n", bare, ceiling, bare/ceiling)
}
