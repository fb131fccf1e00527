//go:build integration

package kafkashare

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

const urn = "urn:babel:share:test"

func newApp(t testing.TB, tr babelqueue.Transport, queue string, opts ...babelqueue.Option) *babelqueue.App {
	t.Helper()
	app, err := babelqueue.NewApp(tr, append([]babelqueue.Option{
		babelqueue.WithDefaultQueue(queue),
		babelqueue.WithPollTimeout(200 * time.Millisecond),
		babelqueue.WithOnError(func(error) {}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// consumeUntil runs app.Consume until done() holds or the timeout passed.
func consumeUntil(t testing.TB, app *babelqueue.App, queue string, timeout time.Duration, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- app.Consume(ctx, queue) }()
	for ctx.Err() == nil && !done() {
		time.Sleep(20 * time.Millisecond)
	}
	timedOut := ctx.Err() != nil
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Consume: %v", err)
	}
	if timedOut && !done() {
		t.Fatalf("not done after %v", timeout)
	}
}

// The App runs on a share group unchanged: every published envelope is
// handled exactly once with concurrency, with its key and attempts 0.
func TestShareAppHandlesEveryMessageOnce(t *testing.T) {
	for _, members := range []int{1, 2} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) { handleEveryMessageOnce(t, members) })
	}
}

func handleEveryMessageOnce(t *testing.T, members int) {
	q := newTopic(t, 3)
	tr := newTransport(t, WithMembers(members))
	app := newApp(t, tr, q, babelqueue.WithConcurrency(16, babelqueue.OrderNone))
	const n = 300
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if _, err := app.Publish(ctx, urn, map[string]any{"i": i}, babelqueue.WithKey([]byte(fmt.Sprint(i%7)))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[int]int{}
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		var d struct{ I int }
		if err := env.BindData(&d); err != nil {
			return err
		}
		if env.Attempts != 0 {
			t.Errorf("message %d: attempts %d, want 0", d.I, env.Attempts)
		}
		mu.Lock()
		seen[d.I]++
		mu.Unlock()
		return nil
	})
	consumeUntil(t, app, q, 60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == n })
	// Nothing comes back after the acknowledgements.
	app2 := newApp(t, tr, q)
	extra := atomic.Int64{}
	app2.Handle(urn, func(context.Context, *babelqueue.Envelope) error { extra.Add(1); return nil })
	consumeFor(t, app2, q, 3*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if seen[i] != 1 {
			t.Errorf("message %d handled %d times", i, seen[i])
		}
	}
	if extra.Load() != 0 {
		t.Errorf("%d messages delivered again after they were accepted", extra.Load())
	}
}

// consumeFor runs app.Consume for d.
func consumeFor(t testing.TB, app *babelqueue.App, queue string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := app.Consume(ctx, queue); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Consume: %v", err)
	}
}

// A failing handler is retried by releases: the broker's delivery count
// gives attempts 0, 1, 2; at the third delivery the message goes to the
// DLQ with the standard dead_letter block and attempts 3, and the original
// is accepted (it never comes back).
func TestShareRetriesThenDeadLetters(t *testing.T) {
	q := newTopic(t, 1)
	tr := newTransport(t)
	app := newApp(t, tr, q, babelqueue.WithMaxAttempts(3))
	ctx := context.Background()
	id, err := app.Publish(ctx, urn, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var attempts []int
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		mu.Lock()
		attempts = append(attempts, env.Attempts)
		mu.Unlock()
		return errors.New("always fails")
	})
	dl := make(chan []byte, 1)
	go func() {
		rs := readAll(t, q+".dlq", 1, 60*time.Second)
		if len(rs) > 0 {
			dl <- rs[0].Value
		}
		close(dl)
	}()
	consumeUntil(t, app, q, 60*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(attempts) >= 3 })
	body := <-dl
	if body == nil {
		t.Fatal("no dead letter")
	}
	block, ok := wire.DeadLetterOf(body)
	if !ok {
		t.Fatalf("dead letter without a dead_letter block: %s", body)
	}
	if block.Reason != wire.ReasonFailed || block.Attempts != 3 || block.OriginalQueue != q || *block.Error != "always fails" {
		t.Errorf("dead_letter = %+v", block)
	}
	if n, _ := wire.BodyAttempts(body); n != 3 {
		t.Errorf("dead letter attempts = %d, want 3", n)
	}
	env, err := wire.Decode(body)
	if err != nil || env.Meta.ID != id {
		t.Errorf("dead letter meta.id = %v (err %v), want %s", env, err, id)
	}
	consumeFor(t, app, q, 3*time.Second) // the original was accepted: nothing comes back
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(attempts) != "[0 1 2]" {
		t.Errorf("attempts seen = %v, want [0 1 2]", attempts)
	}
}

// A poison record goes to the DLQ at once, wrapped, and is not retried.
func TestSharePoisonDeadLettersAtOnce(t *testing.T) {
	q := newTopic(t, 1)
	tr := newTransport(t)
	app := newApp(t, tr, q)
	ctx := context.Background()
	if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: q, Body: "not json"}); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	app.Handle(urn, func(context.Context, *babelqueue.Envelope) error { handled.Add(1); return nil })
	got := make(chan []byte, 1)
	go func() {
		rs := readAll(t, q+".dlq", 1, 30*time.Second)
		if len(rs) > 0 {
			got <- rs[0].Value
		}
		close(got)
	}()
	var body []byte
	consumeUntil(t, app, q, 30*time.Second, func() bool {
		select {
		case body = <-got:
			return true
		default:
			return false
		}
	})
	block, ok := wire.DeadLetterOf(body)
	if !ok || block.Reason != wire.ReasonPoison || block.Attempts != 1 {
		t.Fatalf("poison dead letter = %s (block %+v)", body, block)
	}
	if handled.Load() != 0 {
		t.Errorf("a handler ran for a poison record")
	}
}

// A handler that runs longer than the acquisition lock keeps its record:
// the lock is renewed, no loss is reported and the record is handled once.
func TestShareLongHandlerRenewsLock(t *testing.T) {
	q := newTopic(t, 1)
	var lost atomic.Int64
	tr := newTransport(t, WithLockDuration(2*time.Second), WithOnLockLost(func(LockLost) { lost.Add(1) }))
	app := newApp(t, tr, q, babelqueue.WithConcurrency(2, babelqueue.OrderNone))
	ctx := context.Background()
	if _, err := app.Publish(ctx, urn, map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	var done atomic.Bool
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		runs.Add(1)
		time.Sleep(5 * time.Second) // 2.5 locks
		done.Store(true)
		return nil
	})
	consumeUntil(t, app, q, 30*time.Second, done.Load)
	consumeFor(t, app, q, 3*time.Second)
	if runs.Load() != 1 {
		t.Errorf("handler ran %d times, want 1 (the lock was not kept)", runs.Load())
	}
	if lost.Load() != 0 {
		t.Errorf("%d lock losses reported while renewing", lost.Load())
	}
}

// A retried record is held, its lock renewed, for the retry delay, then
// released; the lateness of its next delivery past the delay is logged.
func TestShareRetryDelayLateness(t *testing.T) {
	q := newTopic(t, 1)
	const delay = 500 * time.Millisecond
	tr := newTransport(t, WithRetryDelay(delay))
	app := newApp(t, tr, q, babelqueue.WithMaxAttempts(5))
	ctx := context.Background()
	if _, err := app.Publish(ctx, urn, map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at []time.Time
	app.Handle(urn, func(ctx context.Context, env *babelqueue.Envelope) error {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if env.Attempts < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	consumeUntil(t, app, q, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(at) == 4 })
	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		if gap < delay {
			t.Errorf("delivery %d came %v after the previous one, before the %v delay", i, gap, delay)
		}
		worst = max(worst, gap-delay)
	}
	t.Logf("retry delay %v: worst lateness %v over %d retries", delay, worst, len(at)-1)
}

// HandBack releases the record: it is delivered again with the broker's
// delivery count, so its attempts reads 1; Ack then accepts it for good.
func TestShareHandBackReleases(t *testing.T) {
	q := newTopic(t, 1)
	tr := newTransport(t)
	ctx := context.Background()
	app := newApp(t, tr, q)
	id, err := app.Publish(ctx, urn, map[string]any{"x": 1}, babelqueue.WithKey([]byte("k1")))
	if err != nil {
		t.Fatal(err)
	}
	receive := func() *driver.ReceivedMessage {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			m, err := tr.Receive(ctx, q, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				return m
			}
		}
		t.Fatal("nothing received")
		return nil
	}
	m := receive()
	// The headers are deferred (Header reads them; FillHeaders builds the map).
	if n, _ := wire.BodyAttempts(m.Body); n != 0 || string(m.Key) != "k1" || header(m, wire.HeaderMessageID) != id {
		m.FillHeaders()
		t.Fatalf("first delivery: attempts %d key %q headers %v", n, m.Key, m.Headers)
	}
	if err := tr.HandBack(ctx, m); err != nil {
		t.Fatal(err)
	}
	m2 := receive()
	if m2.Offset != m.Offset {
		t.Fatalf("after HandBack got offset %d, want %d", m2.Offset, m.Offset)
	}
	if n, _ := wire.BodyAttempts(m2.Body); n != 1 || header(m2, wire.HeaderAttempts) != "1" {
		t.Errorf("second delivery: body attempts %d, header %q; want 1", n, header(m2, wire.HeaderAttempts))
	}
	if err := tr.Ack(ctx, m2); err != nil {
		t.Fatal(err)
	}
	if m3, err := tr.Receive(ctx, q, 3*time.Second); err != nil || m3 != nil {
		t.Errorf("after Ack: %v, %v; want nothing", m3, err)
	}
}

// header returns m's header key, "" when absent.
func header(m *driver.ReceivedMessage, key string) string {
	v, _ := m.Header(key)
	return v
}

// Close releases what is held: another member receives it at once.
func TestShareCloseReleasesHeld(t *testing.T) {
	q := newTopic(t, 1)
	group := fmt.Sprintf("sg-close-%d", time.Now().UnixNano())
	tr := newTransport(t, WithShareGroup(group))
	ctx := context.Background()
	if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: q, Body: envelopeBody(t)}); err != nil {
		t.Fatal(err)
	}
	var m *driver.ReceivedMessage
	for deadline := time.Now().Add(30 * time.Second); m == nil && time.Now().Before(deadline); {
		var err error
		if m, err = tr.Receive(ctx, q, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if m == nil {
		t.Fatal("nothing received")
	}
	tr.Close()
	tr2 := newTransport(t, WithShareGroup(group))
	var m2 *driver.ReceivedMessage
	for deadline := time.Now().Add(30 * time.Second); m2 == nil && time.Now().Before(deadline); {
		var err error
		if m2, err = tr2.Receive(ctx, q, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if m2 == nil || m2.Offset != m.Offset {
		t.Fatalf("after Close: %v, want offset %d again", m2, m.Offset)
	}
}
