//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// TestDeduplicatingProducerBatchesOneKeyPerEntry publishes keyed messages
// from many goroutines at once through a deduplicating producer, which
// sends asynchronously, and reads the topic back entry by entry: no entry
// may hold two keys (with the client's default batching, entries held up
// to 20). A Key_Shared subscription dispatches a whole entry to the
// consumer of one key, so an entry mixing keys would hand another key's
// messages to that consumer, beside the consumer that owns them.
func TestDeduplicatingProducerBatchesOneKeyPerEntry(t *testing.T) {
	const keys, perKey = 20, 20
	q := uniqueQueue(t)
	r := newRawReader(t, rawClient(t), q)
	name := "keybatch-" + q[strings.LastIndex(q, "-")+1:]
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithDeduplication(name), WithSubscriptionType(pulsar.KeyShared)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, keys)
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perKey {
				if _, err := pub.Publish(ctx, "urn:it:keybatch", map[string]int{"k": k, "n": i}, babelqueue.ToQueue(q),
					babelqueue.WithKey(fmt.Appendf(nil, "key-%d", k))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	type entry struct{ ledger, id int64 }
	keysOf := map[entry]map[string]bool{}
	batched := 0
	for range keys * perKey {
		m := r.next(t, 30*time.Second)
		id := m.ID()
		e := entry{id.LedgerID(), id.EntryID()}
		if keysOf[e] == nil {
			keysOf[e] = map[string]bool{}
		}
		keysOf[e][m.Key()] = true
		if id.BatchSize() > 1 {
			batched++
		}
	}
	for e, ks := range keysOf {
		if len(ks) > 1 {
			t.Errorf("entry %d:%d holds %d keys: %v", e.ledger, e.id, len(ks), ks)
		}
	}
	t.Logf("%d messages in %d entries, %d of them in batches of several", keys*perKey, len(keysOf), batched)
}
