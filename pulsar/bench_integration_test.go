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
// producer settings, payload and concurrency.
//
// The machine they run on is shared and small, so one timing says little:
// a throughput benchmark runs several rounds (publish after an uncounted
// warm-up), each a pair of one ours and one raw run back to back in an
// order that alternates, prints every round as a "bench-round:" line, and
// reports on its "bench:" line the median of the ours runs, the median of
// the raw runs and the median of the per-round ratios ours/raw.

const (
	benchConcurrency = 32
	benchSeqMessages = 200
	benchPhaseLimit  = 60 * time.Second

	// benchPublishMessages and benchPublishRounds size each publish
	// throughput comparison: about one second per round.
	benchPublishMessages = 5000
	benchPublishRounds   = 11
	// benchPublishPropsRounds sizes the comparison with a raw producer
	// that sets the contract's properties by hand, which is informative
	// only.
	benchPublishPropsRounds = 7
	// benchConsumeMessages and benchConsumeRounds size the consume
	// throughput benchmark, whose rounds also fill a topic each.
	benchConsumeMessages = 6000
	benchConsumeRounds   = 7
	// benchWarmupMessages is the size of the uncounted warm-up runs.
	benchWarmupMessages = 1000
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

// pairedRounds runs ours and raw rounds times each, in pairs whose order
// alternates, prints each pair as a "bench-round:" line and then the
// "bench:" line of name: the median of the ours values, the median of the
// raw values and the median of the per-pair ratios ours/raw. Pairing and
// medians keep a shared, loaded machine from deciding the result: one slow
// run moves neither.
func pairedRounds(name string, rounds int, ours, raw func() float64) {
	var oursV, rawV, ratios []float64
	for round := 1; round <= rounds; round++ {
		var a, b float64
		order := "ours-first"
		if round%2 == 1 {
			a = ours()
			b = raw()
		} else {
			order = "raw-first"
			b = raw()
			a = ours()
		}
		oursV, rawV, ratios = append(oursV, a), append(rawV, b), append(ratios, a/b)
		fmt.Printf("bench-round: %s round=%d order=%s ours=%.0f raw=%.0f ratio=%.2f\n", name, round, order, a, b, a/b)
	}
	fmt.Printf("bench: %s ours=%.0f raw=%.0f ratio=%.2f\n", name, median(oursV), median(rawV), median(ratios))
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

// TestBenchPulsarPublishThroughput compares Publish with a raw producer
// sending the same payload (pulsar-publish-throughput), and, to tell the
// binding's own cost from the cost of what the contract puts on every
// message, with a raw producer that also sets the same properties and
// event time by hand (pulsar-publish-throughput-raw-same-properties).
func TestBenchPulsarPublishThroughput(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	oursQ, rawQ, propsQ := uniqueQueue(t), uniqueQueue(t), uniqueQueue(t)
	body := benchBody(t, oursQ)
	projection := babelqueue.ProjectBody([]byte(body))
	props := map[string]string{}
	for _, h := range projection.Headers() {
		props[h.Key] = h.Value
	}
	raw, err := c.CreateProducer(benchProducerOptions(rawQ))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rawProps, err := c.CreateProducer(benchProducerOptions(propsQ))
	if err != nil {
		t.Fatal(err)
	}
	defer rawProps.Close()
	sendOurs := func(ctx context.Context) error { return tr.Publish(ctx, oursQ, body) }
	sendRaw := func(ctx context.Context) error {
		_, err := raw.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body)})
		return err
	}
	sendRawProps := func(ctx context.Context) error {
		m := make(map[string]string, len(props))
		for k, v := range props {
			m[k] = v
		}
		_, err := rawProps.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body), Properties: m,
			EventTime: time.UnixMilli(projection.CreatedAt)})
		return err
	}
	// Warm up the producers (connection, topic creation, the broker's code
	// paths) without counting it.
	for _, send := range []func(context.Context) error{sendOurs, sendRaw, sendRawProps} {
		concurrently(t, benchWarmupMessages, send)
	}
	ours := func() float64 { return concurrently(t, benchPublishMessages, sendOurs) }
	pairedRounds("pulsar-publish-throughput", benchPublishRounds, ours,
		func() float64 { return concurrently(t, benchPublishMessages, sendRaw) })
	pairedRounds("pulsar-publish-throughput-raw-same-properties", benchPublishPropsRounds, ours,
		func() float64 { return concurrently(t, benchPublishMessages, sendRawProps) })
}

func TestBenchPulsarConsumeThroughput(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	body := benchBody(t, "bench")
	props := map[string]string{}
	for _, h := range babelqueue.ProjectBody([]byte(body)).Headers() {
		props[h.Key] = h.Value
	}
	// fill writes benchConsumeMessages projected envelopes to a new topic
	// from benchConcurrency concurrent publishers, untimed.
	fill := func() string {
		topic := uniqueQueue(t)
		p, err := c.CreateProducer(benchProducerOptions(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		concurrently(t, benchConsumeMessages, func(ctx context.Context) error {
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
		for i := 0; i < benchConsumeMessages; i++ {
			msg, err := tr.Pop(ctx, q, 10*time.Second)
			if err != nil || msg == nil {
				t.Fatalf("Pop %d: %v", i, err)
			}
			if err := tr.Ack(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		return float64(benchConsumeMessages) / time.Since(start).Seconds()
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
		for i := 0; i < benchConsumeMessages; i++ {
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
		return float64(benchConsumeMessages) / time.Since(start).Seconds()
	}
	pairedRounds("pulsar-consume-throughput", benchConsumeRounds, ours, raw)
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
