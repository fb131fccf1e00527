//go:build integration

package kafka

import (
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestIntegrationSendBatchWriterByShare publishes an unkeyed batch, then a
// batch whose records all carry one key and are more than fewBatchSize,
// and checks from the writers' counters that the first went through the
// writer capped at fewBatchSize, the second through the writer with the
// configured cap, every record acknowledged.
func TestIntegrationSendBatchWriterByShare(t *testing.T) {
	tr := itTransport(t)
	topic := uniq("batch-writers")
	app := itApp(t, tr, topic, 3)
	ctx := bgCtx(t, time.Minute)
	batch := func(n int, opts ...babelqueue.PublishOption) []babelqueue.BatchMessage {
		msgs := make([]babelqueue.BatchMessage, n)
		for i := range msgs {
			msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created", Data: map[string]int{"seq": i}, Options: opts}
		}
		return msgs
	}
	if _, err := app.PublishBatch(ctx, batch(1)); err != nil { // learns the partition count
		t.Fatal(err)
	}
	tr.fewWriter.Stats() // reset the counters
	tr.ownWriter.Stats()
	if _, err := app.PublishBatch(ctx, batch(2*fewBatchSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := app.PublishBatch(ctx, batch(fewBatchSize+1, babelqueue.WithKey([]byte("hot")))); err != nil {
		t.Fatal(err)
	}
	few, own := tr.fewWriter.Stats(), tr.ownWriter.Stats()
	if few.Messages != 2*fewBatchSize || own.Messages != fewBatchSize+1 {
		t.Fatalf("records written: capped writer %d, configured writer %d; want %d and %d",
			few.Messages, own.Messages, 2*fewBatchSize, fewBatchSize+1)
	}
	if few.BatchSize.Max > fewBatchSize || own.BatchSize.Max != fewBatchSize+1 {
		t.Fatalf("largest batches: capped writer %d, configured writer %d; want at most %d and %d",
			few.BatchSize.Max, own.BatchSize.Max, fewBatchSize, fewBatchSize+1)
	}
}
