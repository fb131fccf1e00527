package babelqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
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
	tr := NewInMemoryTransport()
	app := NewApp(tr, WithDefaultQueue("orders"), WithPayloadValidator(orderValidator{}))
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

func TestConsumeInvalidPayloadDeadLettersAtOnce(t *testing.T) {
	tr := NewInMemoryTransport()
	ctx := context.Background()
	plain := NewApp(tr, WithDefaultQueue("orders"))
	if _, err := plain.Publish(ctx, "urn:test:order", map[string]any{"amount": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Publish(ctx, "urn:test:order", map[string]any{"order_id": 2}); err != nil {
		t.Fatal(err)
	}
	app := NewApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(5), WithPayloadValidator(orderValidator{}))
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
	env, err := Decode([]byte(dead[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	dl := env.DeadLetter
	if dl == nil || dl.Reason != ReasonInvalidPayload || dl.Error == nil || !strings.Contains(*dl.Error, "missing property order_id") || dl.Attempts != 1 {
		t.Fatalf("dead_letter = %+v, want reason %s, the validation error, 1 attempt", dl, ReasonInvalidPayload)
	}
}

func TestConsumeInvalidPayloadDroppedWhenDeadLetteringOff(t *testing.T) {
	tr := NewInMemoryTransport()
	ctx := context.Background()
	if _, err := NewApp(tr, WithDefaultQueue("orders")).Publish(ctx, "urn:test:order", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	var warned error
	app := NewApp(tr, WithDefaultQueue("orders"), WithDeadLetter(false), WithPayloadValidator(orderValidator{}),
		WithOnWarning(func(err error) { warned = err }))
	app.Handle("urn:test:order", func(context.Context, *Envelope) error { t.Error("handler ran"); return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if tr.Len("orders") != 0 || len(tr.Messages("orders.dlq")) != 0 || !errors.Is(warned, ErrInvalidPayload) {
		t.Fatalf("left %d, dead %d, warning %v; want the message dropped with an ErrInvalidPayload warning", tr.Len("orders"), len(tr.Messages("orders.dlq")), warned)
	}
}
