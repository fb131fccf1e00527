//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// TestBenchPulsarPublishSeqLatency compares, in one run and interleaved,
// the p50 of a sequential App.Publish with that of a raw pulsar-client-go
// producer Send without batching (each message sent at once).
func TestBenchPulsarPublishSeqLatency(t *testing.T) {
	benchEnabled(t)
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	oursQ, rawQ := uniqueQueue(t), uniqueQueue(t)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(oursQ))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.CreateProducer(pulsar.ProducerOptions{Topic: rawQ, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	body := benchBody(t, rawQ)
	projection := wire.ProjectBody([]byte(body))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	payload := map[string]any{"order_id": 1042, "note": "benchmark"}
	publish := func() error { _, err := app.Publish(ctx, "urn:babel:bench:ping", payload); return err }
	send := func() error {
		props := make(map[string]string, 8)
		for _, h := range projection.Headers() {
			props[h.Key] = h.Value
		}
		_, err := raw.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(body), Properties: props})
		return err
	}
	o, r, err := brokertest.SeqLatencyP50(20, 500, publish, send)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("bench: pulsar-publish-seq-p50 ours=%.3f raw=%.3f ratio=%.2f\n", o, r, o/r)
}
