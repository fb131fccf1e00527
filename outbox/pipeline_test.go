package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/outbox"
)

// batchTransport is an in-memory transport with a batch path: each
// SendBatch is counted while it runs (the most at once is kept), takes a
// little time, and refuses the bodies in refuse once each.
type batchTransport struct {
	babelqueue.Transport
	now, most atomic.Int32
	mu        sync.Mutex
	refuse    map[string]bool
}

func (b *batchTransport) SendBatch(ctx context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	n := b.now.Add(1)
	defer b.now.Add(-1)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	var errs driver.SendErrors
	for i, o := range outs {
		b.mu.Lock()
		refused := b.refuse[o.Body]
		delete(b.refuse, o.Body)
		b.mu.Unlock()
		if refused {
			if errs == nil {
				errs = make(driver.SendErrors, len(outs))
			}
			errs[i] = errors.New("refused")
			continue
		}
		if _, err := b.Transport.Send(ctx, o); err != nil {
			return nil, err
		}
	}
	if errs != nil {
		return nil, errs
	}
	return nil, nil
}

// TestRunSendsAtMostInFlightBatches: Run's workers claim and settle while
// others send, but no more than WithInFlight batches are with the sender
// at once; every row goes out once it is acknowledged, in order per
// key, a refused row again after its backoff, through the transport's
// batch path; Run returns nil once stopped.
func TestRunSendsAtMostInFlightBatches(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "outbox.db")+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob := newOutbox(t, db, outbox.SQLite)
	const keys, perKey = 40, 5
	var msgs []outbox.Message
	for i := range perKey {
		for k := range keys {
			msgs = append(msgs, outbox.Message{Queue: "q", Key: fmt.Appendf(nil, "k%d", k), Body: fmt.Appendf(nil, "%d/%d", k, i)})
		}
	}
	write(t, db, ob, true, msgs...)
	tr := &batchTransport{Transport: bqtest.NewInMemoryTransport(), refuse: map[string]bool{"3/1": true, "7/0": true}}
	r := newRelay(t, db, ob, outbox.TransportSender{Transport: tr}, outbox.WithInFlight(2), outbox.WithBatchSize(8),
		outbox.WithPoll(5*time.Millisecond), outbox.WithBackoff(10*time.Millisecond, 10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for {
		st, err := ob.Stats(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d rows still pending", st.Pending)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after its context was cancelled: %v, want nil", err)
	}
	if most := tr.most.Load(); most > 2 || most < 1 {
		t.Fatalf("at most %d batches were sent at once, want 1-2 (WithInFlight(2))", most)
	}
	got := tr.Transport.(*bqtest.InMemoryTransport).Messages("q")
	if len(got) != keys*perKey {
		t.Fatalf("%d messages published, want %d (each once)", len(got), keys*perKey)
	}
	next := map[string]int{}
	for _, m := range got {
		var k, i int
		if _, err := fmt.Sscanf(m.Body, "%d/%d", &k, &i); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(k)
		if i != next[key] {
			t.Fatalf("key %s: got row %d, want %d (order per key)", key, i, next[key])
		}
		next[key]++
	}
}
