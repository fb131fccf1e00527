//go:build integration

package kafka

import (
	"fmt"
	"sort"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

// TestBenchKafkaPublishSeqLatency compares, in one run and interleaved, the
// p50 of a sequential App.Publish with that of a raw kafka-go single-record
// write (a Writer sending each record at once, acks=all).
func TestBenchKafkaPublishSeqLatency(t *testing.T) {
	benchOnly(t)
	tr := itTransport(t)
	topic := uniq("bench-seq")
	ensure(t, tr, topic, 3)
	ctx := bgCtx(t, 2*time.Minute)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	raw := &kafkago.Writer{Addr: kafkago.TCP(brokerList(t)...), Balancer: &Murmur2Balancer{}, BatchSize: 1,
		RequiredAcks: kafkago.RequireAll, Transport: &kafkago.Transport{}}
	defer raw.Close()
	body := envelope(t, 0)
	payload := map[string]any{"order_id": 1042}
	publish := func() error { _, err := app.Publish(ctx, "urn:babel:orders:created", payload); return err }
	write := func() error {
		hs, ts := projection(body, time.Now())
		return raw.WriteMessages(ctx, kafkago.Message{Topic: topic, Value: []byte(body), Headers: toKafkaHeaders(hs), Time: ts})
	}
	for range 20 { // warm metadata and connections of both sides
		if err := publish(); err != nil {
			t.Fatal(err)
		}
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 500
	ours, rawLat := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := publish(); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, time.Since(start))
		start = time.Now()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		rawLat = append(rawLat, time.Since(start))
	}
	p50 := func(xs []time.Duration) float64 {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return float64(xs[len(xs)/2]) / float64(time.Millisecond)
	}
	o, r := p50(ours), p50(rawLat)
	fmt.Printf("bench: kafka-publish-seq-p50 ours=%.3f raw=%.3f ratio=%.2f\n", o, r, o/r)
}
