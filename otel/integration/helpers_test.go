//go:build integration

package otel

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// consumeUntilCleanup runs app.Consume(queue) until the end of the test.
func consumeUntilCleanup(t *testing.T, app *babelqueue.App, queue string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Consume(ctx, queue) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Consume: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Consume did not stop")
		}
	})
}

// closeWithin registers close to run at cleanup and fails the test when it
// does not return within d (a hung broker client), instead of hanging it.
func closeWithin(t *testing.T, close func() error, d time.Duration) {
	t.Helper()
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("close: %v", err)
			}
		case <-time.After(d):
			t.Errorf("transport Close did not return within %v", d)
		}
	})
}

// handlerLog records the deliveries a handler saw.
type handlerLog struct {
	mu       sync.Mutex
	attempts []int
	headers  []map[string]string
	done     chan struct{}
	once     sync.Once
}

func newHandlerLog() *handlerLog { return &handlerLog{done: make(chan struct{})} }

// failOnce fails the first delivery and succeeds (closing done) after.
func (l *handlerLog) failOnce(ctx context.Context, env *babelqueue.Envelope) error {
	l.mu.Lock()
	l.attempts = append(l.attempts, env.Attempts)
	l.headers = append(l.headers, babelqueue.HeadersFromContext(ctx))
	first := len(l.attempts) == 1
	l.mu.Unlock()
	if first {
		return errors.New("projection store unavailable")
	}
	l.once.Do(func() { close(l.done) })
	return nil
}

// waitSpans waits until n spans named name have ended.
func waitSpans(t *testing.T, h *harness, name string, n int, within time.Duration) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := h.ended(name)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %q spans ended within %v, want %d (all: %v)", len(got), name, within, n, spanNames(h.spans.GetSpans()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkOneTrace checks the spans of a message published under root that
// failed once and then succeeded: one trace, root → send → each process
// span, the retry linking to the failed attempt, no error status.
func checkOneTrace(t *testing.T, h *harness, root trace.SpanContext, queue, system string) (first, second tracetest.SpanStub) {
	t.Helper()
	send := h.only(t, "send "+queue)
	process := waitSpans(t, h, "process "+queue, 2, 30*time.Second)
	if len(process) != 2 {
		t.Fatalf("%d process spans, want 2", len(process))
	}
	first, second = process[0], process[1]
	if send.Parent.SpanID() != root.SpanID() || send.SpanContext.TraceID() != root.TraceID() {
		t.Errorf("send span is not a child of the root span")
	}
	for i, p := range process {
		if p.SpanContext.TraceID() != root.TraceID() {
			t.Errorf("process span %d is in trace %v, want %v", i, p.SpanContext.TraceID(), root.TraceID())
		}
		if p.Parent.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("process span %d parent %v, want the send span %v", i, p.Parent.SpanID(), send.SpanContext.SpanID())
		}
		if p.Status.Code != codes.Unset {
			t.Errorf("process span %d status %v, want unset", i, p.Status)
		}
		wantAttrs(t, p, map[string]string{"messaging.system": system, "messaging.destination.name": queue,
			"messaging.operation.type": "process", "messaging.message.id": attrs(send)["messaging.message.id"]})
	}
	wantAttrs(t, first, map[string]string{"babelqueue.attempt": "0", "babelqueue.outcome": OutcomeRetried, "babelqueue.reason": "failed"})
	wantAttrs(t, second, map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": OutcomeSuccess})
	if !linkedTo(second, first.SpanContext) {
		t.Errorf("retry span links %v, want one to the failed attempt %v", second.Links, first.SpanContext.SpanID())
	}
	if n := h.count(t, MetricRetried, map[string]string{"messaging.system": system, "babelqueue.reason": "failed"}); n != 1 {
		t.Errorf("retried = %d, want 1", n)
	}
	if n := h.count(t, MetricHandled, map[string]string{"messaging.system": system, "babelqueue.outcome": OutcomeSuccess}); n != 1 {
		t.Errorf("handled{success} = %d, want 1", n)
	}
	if n := h.count(t, MetricPublished, map[string]string{"messaging.system": system}); n != 1 {
		t.Errorf("published = %d, want 1", n)
	}
	return first, second
}
