package babelqueue

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// settleGoroutines waits for the goroutine count to come back to at most
// want, and reports whether it did.
func settleGoroutines(want int) (int, bool) {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > want; i++ {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n, n <= want
}

func TestConsumeHandlesUntilCancelledAndLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithPollTimeout(time.Hour)) // Pop must wake on a publish, not on a timeout
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{}, 16)
	for _, urn := range []string{"urn:t:a", "urn:t:b"} {
		a.Handle(urn, func(ctx context.Context, env *Envelope) error {
			mu.Lock()
			seen[env.Meta.Queue]++
			mu.Unlock()
			done <- struct{}{}
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "q1", "q2", "q3", "q1") }()

	pub := context.Background()
	for i := 0; i < 3; i++ {
		a.Publish(pub, "urn:t:a", nil, ToQueue("q1"))
		a.Publish(pub, "urn:t:b", nil, ToQueue("q2"))
	}
	for i := 0; i < 6; i++ {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 6 messages handled", i)
		}
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Consume after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not return after cancel")
	}
	if seen["q1"] != 3 || seen["q2"] != 3 {
		t.Errorf("seen = %v", seen)
	}
	if mem.Acked("q1") != 3 || mem.Acked("q2") != 3 {
		t.Errorf("acked q1=%d q2=%d", mem.Acked("q1"), mem.Acked("q2"))
	}
	if n, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, n)
	}
}

func TestConsumeBadMessagesDoNotStopTheLoop(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithMaxAttempts(1))
	good := make(chan struct{}, 1)
	a.Handle("urn:t:ok", func(context.Context, *Envelope) error { good <- struct{}{}; return nil })
	a.Handle("urn:t:fail", func(context.Context, *Envelope) error { return errors.New("boom") })
	a.Handle("urn:t:panic", func(context.Context, *Envelope) error { panic("boom") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "orders") }()
	bg := context.Background()
	mem.Publish(bg, "orders", "{not json")
	mem.Send(bg, &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: envBody(t, "urn:t:ok", 0), From: nil, Headers: map[string]string{wire.HeaderSchemaVersion: "9"}})
	a.Publish(bg, "urn:t:fail", nil, ToQueue("orders"))
	a.Publish(bg, "urn:t:panic", nil, ToQueue("orders"))
	a.Publish(bg, "urn:t:nobody", nil, ToQueue("orders"))
	a.Publish(bg, "urn:t:ok", nil, ToQueue("orders"))
	select {
	case <-good:
	case err := <-errc:
		t.Fatalf("Consume stopped: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the good message behind the bad ones was not handled")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Consume = %v", err)
	}
	if mem.Len("orders.dlq") != 5 {
		t.Errorf("DLQ holds %d, want 5 (poison, version, fail, panic, unknown)", mem.Len("orders.dlq"))
	}
}

// popFails fails Pop on one queue.
type popFails struct {
	*bqtest.InMemoryTransport
	queue string
	err   error
}

func (p popFails) Receive(ctx context.Context, queue string, timeout time.Duration) (*ReceivedMessage, error) {
	if queue == p.queue {
		return nil, p.err
	}
	return p.InMemoryTransport.Pop(ctx, queue, timeout)
}

func TestConsumeReturnsUnrecoverableTransportErrors(t *testing.T) {
	before := runtime.NumGoroutine()
	broken := errors.New("connection reset for good")
	a := testApp(popFails{bqtest.NewInMemoryTransport(), "bad", broken}, WithPollTimeout(time.Hour))
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(context.Background(), "good", "bad") }()
	select {
	case err := <-errc:
		if !errors.Is(err, broken) {
			t.Fatalf("Consume = %v, want it to wrap the Pop error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not stop on a Pop error (and cancel the other queue)")
	}
	if n, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after", before, n)
	}

	mem := bqtest.NewInMemoryTransport()
	b := testApp(mem)
	errc = make(chan error, 1)
	go func() { errc <- b.Consume(context.Background(), "orders") }()
	mem.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Consume on a closed transport = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not stop when the transport closed")
	}
}

func TestConsumeStoppingMidHandlerHandsTheMessageBack(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	started := make(chan struct{})
	a.Handle("urn:t:slow", func(ctx context.Context, env *Envelope) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	a.Publish(context.Background(), "urn:t:slow", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx) }()
	<-started
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Consume = %v", err)
	}
	msgs := mem.Messages(DefaultQueue)
	if len(msgs) != 1 || mustDecode(t, msgs[0].Body).Attempts != 0 || mem.Len(DefaultQueue+".dlq") != 0 {
		t.Fatalf("message after shutdown = %+v, want it back, uncounted", msgs)
	}
}

func TestConsumeBacksOffAfterAFailedWrite(t *testing.T) {
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithClock(clock), WithFailureBackoff(time.Minute), WithMaxAttempts(1))
	var calls atomic.Int32
	a.Handle("urn:t:x", func(context.Context, *Envelope) error { calls.Add(1); return errors.New("boom") })
	mem.SetFault(func(op, q string) error {
		if q == "orders.dlq" {
			return errors.New("refused")
		}
		return nil
	})
	a.Publish(context.Background(), "urn:t:x", nil, ToQueue("orders"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "orders") }()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal("the loop is not waiting on the backoff timer")
	}
	if calls.Load() != 1 {
		t.Fatalf("handler called %d times during the backoff, want 1", calls.Load())
	}
	mem.SetFault(nil)
	clock.Advance(time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for mem.Len("orders.dlq") == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if mem.Len("orders.dlq") != 1 || calls.Load() != 2 {
		t.Errorf("after the backoff: dlq=%d calls=%d", mem.Len("orders.dlq"), calls.Load())
	}
	cancel()
	<-errc
}

func TestDrainFollowsMessagesAcrossQueues(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	var order []string
	a.Handle("urn:t:step1", func(ctx context.Context, env *Envelope) error {
		order = append(order, "step1")
		_, err := a.Publish(ctx, "urn:t:step2", nil, ToQueue("first")) // lands in a queue drained earlier
		return err
	})
	a.Handle("urn:t:step2", func(context.Context, *Envelope) error { order = append(order, "step2"); return nil })
	a.Publish(context.Background(), "urn:t:step1", nil, ToQueue("second"))
	if n := drain(t, a, "first", "second"); n != 2 {
		t.Errorf("Drain = %d, want 2", n)
	}
	if len(order) != 2 || order[1] != "step2" {
		t.Errorf("order = %v", order)
	}
}

func TestDrainDefaultQueueAndContext(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	a.Handle("urn:t:x", func(context.Context, *Envelope) error { return nil })
	a.Publish(context.Background(), "urn:t:x", nil)
	if n := drain(t, a); n != 1 {
		t.Errorf("Drain() = %d, want 1 from the default queue", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain(cancelled) = %v", err)
	}
}

func TestLogsGoToTheConfiguredLogger(t *testing.T) {
	var buf bqtest.SyncBuffer
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))), WithMaxAttempts(1))
	a.Handle("urn:t:x", func(context.Context, *Envelope) error { return errors.New("boom") })
	id, _ := a.Publish(context.Background(), "urn:t:x", nil, ToQueue("orders"))
	drain(t, a, "orders")
	out := buf.String()
	for _, want := range []string{`"msg":"babelqueue: handler failed"`, `"error":"boom"`, `"message_id":"` + id + `"`,
		`"queue":"orders"`, `"msg":"babelqueue: message dead-lettered"`, `"dead_letter_queue":"orders.dlq"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

func TestConsumeDoesNotSpinOnAReleasedMessage(t *testing.T) {
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithUnknownURNStrategy(StrategyRelease), WithClock(clock), WithFailureBackoff(time.Minute))
	mem.Publish(context.Background(), "orders", envBody(t, "urn:t:nobody", 0))
	var releases atomic.Int32
	mem.SetFault(func(op, q string) error {
		if op == "release" {
			releases.Add(1)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "orders") }()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal("the loop never paused on the message it had released")
	}
	if n := releases.Load(); n != 2 {
		t.Errorf("released %d times before pausing, want 2", n)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if mem.Len("orders")+mem.InFlight("orders") != 1 {
		t.Errorf("the released message was lost or duplicated: len %d inflight %d", mem.Len("orders"), mem.InFlight("orders"))
	}
}
