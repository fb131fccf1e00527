//go:build integration

package kafka

import (
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestIntegrationSendBatchWriterBySize publishes a batch of fewBatchSize
// records and one of more, and checks from the writers' counters that the
// first went through the writer capped at fewBatchSize and the second
// through the writer with the configured cap, every record acknowledged.
func TestIntegrationSendBatchWriterBySize(t *testing.T) {
	tr := itTransport(t)
	topic := uniq("batch-writers")
	ensure(t, tr, topic, 3)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	ctx := bgCtx(t, time.Minute)
	tr.fewWriter.Stats() // reset the counters
	tr.ownWriter.Stats()
	for _, n := range []int{fewBatchSize, fewBatchSize + 1} {
		msgs := make([]babelqueue.BatchMessage, n)
		for i := range msgs {
			msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: map[string]int{"seq": i}}
		}
		if _, err := app.PublishBatch(ctx, msgs); err != nil {
			t.Fatalf("batch of %d: %v", n, err)
		}
	}
	few, own := tr.fewWriter.Stats(), tr.ownWriter.Stats()
	if few.Messages != fewBatchSize || own.Messages != fewBatchSize+1 {
		t.Fatalf("records written: capped writer %d, configured writer %d; want %d and %d",
			few.Messages, own.Messages, fewBatchSize, fewBatchSize+1)
	}
	if few.BatchSize.Max > fewBatchSize {
		t.Fatalf("the capped writer sent a batch of %d records", few.BatchSize.Max)
	}
}
