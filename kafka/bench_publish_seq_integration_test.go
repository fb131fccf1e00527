//go:build integration

package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
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
	o, r, err := brokertest.SeqLatencyP50(20, 500, publish, write)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("bench: kafka-publish-seq-p50 ours=%.3f raw=%.3f ratio=%.2f\n", o, r, o/r)
}
