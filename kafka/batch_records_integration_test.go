//go:build integration

package kafka

import (
	"strconv"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// TestIntegrationPublishBatchReusesRecordSlabs publishes batches from
// several goroutines through one transport, so that the record and header
// slabs of acknowledged batches are reused by later ones, and reads every
// record back: each record's contract headers belong to its own body
// (bq-message-id is the body's meta.id), and every returned id is stored
// exactly once.
func TestIntegrationPublishBatchReusesRecordSlabs(t *testing.T) {
	const workers, batches, batch = 4, 5, 50
	tr := itTransport(t)
	topic := uniq("batch-slabs")
	app := itApp(t, tr, topic, 3)
	ctx := bgCtx(t, time.Minute)
	var mu sync.Mutex
	want := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for b := range batches {
				msgs := make([]babelqueue.BatchMessage, batch)
				for i := range msgs {
					msgs[i] = babelqueue.BatchMessage{URN: "urn:babel:orders:created",
						Data: map[string]string{"seq": strconv.Itoa((w*batches+b)*batch + i)}}
				}
				ids, err := app.PublishBatch(ctx, msgs)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, id := range ids {
					want[id] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const n = workers * batches * batch
	got := readTopic(t, topic, n, 30*time.Second, time.Second)
	if len(got) != n {
		t.Fatalf("read %d records; want %d", len(got), n)
	}
	for _, m := range got {
		env, err := wire.Decode(m.Value)
		if err != nil {
			t.Fatalf("record at offset %d: %v", m.Offset, err)
		}
		var id string
		for _, h := range m.Headers {
			if h.Key == wire.HeaderMessageID {
				id = string(h.Value)
			}
		}
		if id != env.Meta.ID || !want[id] {
			t.Fatalf("record at offset %d: bq-message-id %q, body meta.id %q (returned: %v)", m.Offset, id, env.Meta.ID, want[id])
		}
		delete(want, id)
	}
}
