//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// The broker benchmarks run only with BQ_BENCH=1 (make bench). Each is
// bounded in message count and wall time, and compares the binding with
// raw pulsar-client-go in the same run, on the same broker, with the same
// producer settings.

const (
	benchMessages    = 3000
	benchConcurrency = 32
	benchSeqMessages = 200
	benchPhaseLimit  = 60 * time.Second
	benchRounds      = 5
)

func benchEnabled(t *testing.T) {
	if os.Getenv("BQ_BENCH") != "1" {
		t.Skip("set BQ_BENCH=1 to run the broker benchmarks")
	}
}

func benchBody(t *testing.T, queue string) string {
	env, err := babelqueue.Make("urn:babel:bench:ping", map[string]any{"order_id": 1042, "note": "benchmark"}, babelqueue.WithQueue(queue))
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// concurrently runs send n times from benchConcurrency goroutines and
// returns messages per second.
func concurrently(t *testing.T, n int, send func(ctx context.Context) error) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(n))
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < benchConcurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if err := send(ctx); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("send: %v", err)
	}
	return float64(n) / el.Seconds()
}

// pairedRounds runs ours and raw benchRounds times each, in pairs whose
// order alternates, and returns the median of each and the median of the
// per-pair ratios ours/raw. Pairing and medians keep a shared, loaded
// machine from deciding the result: one slow round moves neither.
func pairedRounds(ours, raw func() float64) (o, r, ratio float64) {
	var oursV, rawV, ratios []float64
	for round := 0; round < benchRounds; round++ {
		var a, b float64
		if round%2 == 0 {
			a = ours()
			b = raw()
		} else {
			b = raw()
			a = ours()
		}
		oursV, rawV, ratios = append(oursV, a), append(rawV, b), append(ratios, a/b)
	}
	return median(oursV), median(rawV), median(ratios)
}

func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func benchProducerOptions(topic string) pulsar.ProducerOptions {
	return pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: DefaultBatchingMaxPublishDelay}
}

func TestBenchPulsarPublishThroughput(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	oursQ, rawQ := uniqueQueue(t), uniqueQueue(t)
	body := benchBody(t, oursQ)
	raw, err := c.CreateProducer(benchProducerOptions(rawQ))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Warm up both producers (connection, topic creation).
	if err := tr.Publish(context.Background(), oursQ, body); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	runOurs := func() float64 {
		return concurrently(t, benchMessages, func(ctx context.Context) error { return tr.Publish(ctx, oursQ, body) })
	}
	runRaw := func() float64 {
		return concurrently(t, benchMessages, func(ctx context.Context) error {
			_, err := raw.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body)})
			return err
		})
	}
	ours, base, ratio := pairedRounds(runOurs, runRaw)
	fmt.Printf("bench: pulsar-publish-throughput ours=%.0f raw=%.0f ratio=%.2f\n", ours, base, ratio)
}

func TestBenchPulsarConsumeThroughput(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	body := benchBody(t, "bench")
	props := map[string]string{}
	for _, h := range babelqueue.ProjectBody([]byte(body)).Headers() {
		props[h.Key] = h.Value
	}
	// fill writes benchMessages projected envelopes to a new topic.
	fill := func() string {
		topic := uniqueQueue(t)
		p, err := c.CreateProducer(benchProducerOptions(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		concurrently(t, benchMessages, func(ctx context.Context) error {
			_, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body), Properties: props})
			return err
		})
		return topic
	}
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))

	// Each round subscribes before the clock starts and lets the receive
	// queue fill, then times receive + acknowledge of every message.
	ours := func() float64 {
		q := fill()
		if _, err := tr.consumerFor(q); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
		defer cancel()
		start := time.Now()
		for i := 0; i < benchMessages; i++ {
			msg, err := tr.Pop(ctx, q, 10*time.Second)
			if err != nil || msg == nil {
				t.Fatalf("Pop %d: %v", i, err)
			}
			if err := tr.Ack(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		return float64(benchMessages) / time.Since(start).Seconds()
	}
	raw := func() float64 {
		q := fill()
		rc, err := c.Subscribe(pulsar.ConsumerOptions{Topic: q, SubscriptionName: DefaultSubscription, Type: pulsar.Shared,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		time.Sleep(300 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
		defer cancel()
		start := time.Now()
		for i := 0; i < benchMessages; i++ {
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			m, err := rc.Receive(rctx)
			rcancel()
			if err != nil {
				t.Fatalf("raw receive %d: %v", i, err)
			}
			if err := rc.Ack(m); err != nil {
				t.Fatal(err)
			}
		}
		return float64(benchMessages) / time.Since(start).Seconds()
	}
	o, r, ratio := pairedRounds(ours, raw)
	fmt.Printf("bench: pulsar-consume-throughput ours=%.0f raw=%.0f ratio=%.2f\n", o, r, ratio)
}

func TestBenchPulsarPublishSeqP50(t *testing.T) {
	benchEnabled(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	q := uniqueQueue(t)
	body := benchBody(t, q)
	ctx, cancel := context.WithTimeout(context.Background(), benchPhaseLimit)
	defer cancel()
	if err := tr.Publish(ctx, q, body); err != nil { // warm up
		t.Fatal(err)
	}
	lat := make([]time.Duration, 0, benchSeqMessages)
	for i := 0; i < benchSeqMessages; i++ {
		start := time.Now()
		if err := tr.Publish(ctx, q, body); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50 := lat[len(lat)/2]
	fmt.Printf("bench: pulsar-publish-seq-p50-ms value=%.2f\n", float64(p50.Microseconds())/1000)
}
