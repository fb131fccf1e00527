//go:build integration

package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
)

// shareHandled is what a share-group handler saw of one delivery.
type shareHandled struct {
	attempts   int
	deadLetter bool
	headers    map[string]string
}

// Records dead-lettered by a share group at max attempts are redriven by
// the Kafka redrive (redrive.Run over a kafka.Transport, the path of `bq
// redrive`) back to the work topic, where the same share group hands each
// one to the App again, exactly once, with the dead_letter block removed
// and attempts 0 (CONTRACT.md 8); nothing is dead-lettered a second time.
func TestShareRedriveDeadLettersHandledAgainOnce(t *testing.T) {
	const n, maxAttempts = 24, 2
	q := newTopic(t, 3)
	dlq := q + ".dlq"
	tr := newTransport(t)
	app := newApp(t, tr, q, babelqueue.WithMaxAttempts(maxAttempts), babelqueue.WithConcurrency(8, babelqueue.OrderNone),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx := context.Background()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("rd-%03d", i)
		if _, err := app.Publish(ctx, urn, map[string]int{"i": i}, babelqueue.WithEnvelopeOptions(babelqueue.WithID(ids[i])),
			babelqueue.WithKey(fmt.Appendf(nil, "k-%d", i%5))); err != nil {
			t.Fatal(err)
		}
	}

	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	failed := map[string][]int{}           // meta.id -> attempts of the failed deliveries
	handled := map[string][]shareHandled{} // meta.id -> deliveries after the redrive
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		if failing.Load() {
			failed[env.Meta.ID] = append(failed[env.Meta.ID], env.Attempts)
			return errors.New("downstream down")
		}
		handled[env.Meta.ID] = append(handled[env.Meta.ID], shareHandled{
			attempts: env.Attempts, deadLetter: env.DeadLetter != nil, headers: babelqueue.HeadersFromContext(ctx)})
		return nil
	})
	count := func(m map[string][]int) (total int) {
		for _, v := range m {
			total += len(v)
		}
		return total
	}

	// Phase 1: every delivery fails; at max attempts each message goes to
	// the DLQ and the original is accepted.
	consumeUntil(t, app, q, 2*time.Minute, func() bool { mu.Lock(); defer mu.Unlock(); return count(failed) >= n*maxAttempts })
	dead := readAll(t, dlq, n, time.Minute)
	if len(dead) != n {
		t.Fatalf("%d dead letters in %s, want %d", len(dead), dlq, n)
	}
	for _, r := range dead {
		block, ok := wire.DeadLetterOf(r.Value)
		if !ok || block.Reason != wire.ReasonFailed || block.Attempts != maxAttempts || block.OriginalQueue != q {
			t.Fatalf("dead letter %s: dead_letter = %+v (present %v), want reason failed, attempts %d, original_queue %s", r.Value, block, ok, maxAttempts, q)
		}
	}
	mu.Lock()
	for _, id := range ids {
		if got := fmt.Sprint(failed[id]); got != "[0 1]" {
			t.Errorf("%s failed with attempts %s, want [0 1]", id, got)
		}
	}
	mu.Unlock()

	// Phase 2: the downstream is back; the Kafka redrive moves the dead
	// letters back to q.
	failing.Store(false)
	kt, err := bqkafka.New(bqkafka.WithBrokers(brokertest.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	defer kt.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := redrive.Run(rctx, kt, dlq, redrive.WithPollTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("redrive: %v", err)
	}
	if res.Moved != n || res.Kept != 0 {
		t.Fatalf("redrive moved %d, kept %d (examined %d), want %d and 0", res.Moved, res.Kept, res.Examined, n)
	}
	for _, it := range res.Items {
		if it.Target != q {
			t.Errorf("%s redriven to %q, want %q", it.MessageID, it.Target, q)
		}
	}

	distinct := func() int { mu.Lock(); defer mu.Unlock(); return len(handled) }
	consumeUntil(t, app, q, 2*time.Minute, func() bool { return distinct() >= n })
	consumeFor(t, app, q, 3*time.Second) // a second delivery of any would show here

	mu.Lock()
	defer mu.Unlock()
	if extra := count(failed) - n*maxAttempts; extra != 0 {
		t.Errorf("%d failed deliveries after the redrive, want 0", extra)
	}
	for _, id := range ids {
		hs := handled[id]
		if len(hs) != 1 {
			t.Errorf("%s handled %d times after the redrive, want 1", id, len(hs))
			continue
		}
		h := hs[0]
		if h.attempts != 0 || h.deadLetter {
			t.Errorf("%s after the redrive: attempts %d, dead_letter present %v; want 0 and absent", id, h.attempts, h.deadLetter)
		}
		if h.headers[wire.HeaderRedriveCount] != "1" || h.headers[wire.HeaderAttempts] != "0" {
			t.Errorf("%s after the redrive: %s=%q %s=%q, want 1 and 0", id,
				wire.HeaderRedriveCount, h.headers[wire.HeaderRedriveCount], wire.HeaderAttempts, h.headers[wire.HeaderAttempts])
		}
	}
	if again := readAll(t, dlq, n+1, 3*time.Second); len(again) != n {
		t.Errorf("%d records in %s after the redrive, want the %d first dead letters only", len(again), dlq, n)
	}
}
