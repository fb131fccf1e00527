package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// orderValidator rejects an order whose data has no "order_id" key.
type orderValidator struct{}

func (orderValidator) ValidatePayload(urn string, data []byte) error {
	if urn != "urn:test:order" || strings.Contains(string(data), `"order_id"`) {
		return nil
	}
	return errors.New("/: missing property order_id")
}

func TestPublishInvalidPayloadWritesNothing(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	app := testApp(tr, WithDefaultQueue("orders"), WithPayloadValidator(orderValidator{}))
	_, err := app.Publish(context.Background(), "urn:test:order", map[string]any{"amount": 1})
	if !errors.Is(err, ErrInvalidPayload) || !strings.Contains(err.Error(), "order_id") {
		t.Fatalf("publish of an invalid payload: %v, want ErrInvalidPayload naming the error", err)
	}
	if n := tr.Len("orders"); n != 0 {
		t.Fatalf("%d messages written, want 0", n)
	}
	if _, err := app.Publish(context.Background(), "urn:test:order", map[string]any{"order_id": 1}); err != nil {
		t.Fatalf("publish of a valid payload: %v", err)
	}
	if _, err := app.Publish(context.Background(), "urn:test:other", map[string]any{}); err != nil {
		t.Fatalf("publish of a URN without schema: %v", err)
	}
	if n := tr.Len("orders"); n != 2 {
		t.Fatalf("%d messages written, want 2", n)
	}
}

func TestWithPayloadValidatorNilIsRejected(t *testing.T) {
	_, err := NewApp(bqtest.NewInMemoryTransport(), WithPayloadValidator(nil))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "payload validator") {
		t.Fatalf("NewApp(WithPayloadValidator(nil)) = %v, want ErrInvalidOption naming the payload validator", err)
	}
}

func TestConsumeInvalidPayloadDeadLettersAtOnce(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	plain := testApp(tr, WithDefaultQueue("orders"))
	if _, err := plain.Publish(ctx, "urn:test:order", map[string]any{"amount": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Publish(ctx, "urn:test:order", map[string]any{"order_id": 2}); err != nil {
		t.Fatal(err)
	}
	app := testApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(5), WithPayloadValidator(orderValidator{}))
	calls := 0
	app.Handle("urn:test:order", func(context.Context, *Envelope) error { calls++; return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("handler ran %d times, want 1 (the valid message only)", calls)
	}
	dead := tr.Messages("orders.dlq")
	if len(dead) != 1 || tr.Len("orders") != 0 {
		t.Fatalf("%d dead letters, %d left in orders; want 1 and 0", len(dead), tr.Len("orders"))
	}
	dl := dlqEntry(t, dead[0].Body)
	if dl.Reason != wire.ReasonInvalidPayload || dl.Error == nil || !strings.Contains(*dl.Error, "missing property order_id") || dl.Attempts != 1 {
		t.Fatalf("dead_letter = %+v, want reason %s, the validation error, 1 attempt", dl, wire.ReasonInvalidPayload)
	}
}

// Under WithConcurrency the handlers run on the lane goroutines; the
// payload check sits in the same delivery path, so an invalid payload is
// dead-lettered there too and never reaches a handler.
func TestConsumeInvalidPayloadDeadLettersOnConcurrentLanes(t *testing.T) {
	const n = 40
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(4))
	ctx := context.Background()
	plain := testApp(mem, WithDefaultQueue("q"))
	for i := range n {
		data := map[string]any{"i": i}
		if i%2 == 0 {
			data["order_id"] = i
		}
		if _, err := plain.Publish(ctx, "urn:test:order", data, ToQueue("q"), WithKey(fmt.Appendf(nil, "k%d", i%5))); err != nil {
			t.Fatal(err)
		}
	}
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(4, OrderKey), WithPayloadValidator(orderValidator{}))
	var handled, invalidSeen atomic.Int64
	a.Handle("urn:test:order", func(_ context.Context, env *Envelope) error {
		if !strings.Contains(string(env.Data()), `"order_id"`) {
			invalidSeen.Add(1)
		}
		handled.Add(1)
		return nil
	})
	stop := lanesRun(t, a, "q")
	bqtest.WaitUntil(t, 10*time.Second, "every message settled", func() bool { return handled.Load() == n/2 && mem.Len("q.dlq") == n/2 })
	if err := stop(); err != nil {
		t.Fatalf("Consume = %v", err)
	}
	if invalidSeen.Load() != 0 {
		t.Fatalf("%d invalid payloads reached the handler", invalidSeen.Load())
	}
	for _, m := range mem.Messages("q.dlq") {
		if dl := dlqEntry(t, m.Body); dl.Reason != wire.ReasonInvalidPayload || dl.Attempts != 1 {
			t.Fatalf("dead_letter = %+v, want reason %s after 1 attempt", dl, wire.ReasonInvalidPayload)
		}
	}
}

func TestConsumeInvalidPayloadDroppedWhenDeadLetteringOff(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	if _, err := testApp(tr, WithDefaultQueue("orders")).Publish(ctx, "urn:test:order", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	var warned error
	app := testApp(tr, WithDefaultQueue("orders"), WithDeadLetter(false), WithPayloadValidator(orderValidator{}),
		WithOnWarning(func(err error) { warned = err }))
	app.Handle("urn:test:order", func(context.Context, *Envelope) error { t.Error("handler ran"); return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if tr.Len("orders") != 0 || len(tr.Messages("orders.dlq")) != 0 || !errors.Is(warned, ErrInvalidPayload) {
		t.Fatalf("left %d, dead %d, warning %v; want the message dropped with an ErrInvalidPayload warning", tr.Len("orders"), len(tr.Messages("orders.dlq")), warned)
	}
}
