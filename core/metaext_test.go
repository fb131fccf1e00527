package babelqueue

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// A producer's meta.ext reaches the handler on the first delivery, its
// retry and its redriven copy, and the dead letter keeps it, byte for
// byte.
func TestMetaExtThroughRetryDeadLetterAndRedrive(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	app := testApp(tr, WithDefaultQueue("orders"), WithMaxAttempts(2))
	if _, err := app.Publish(ctx, "urn:test:order", map[string]any{"n": 1},
		WithEnvelopeOptions(wire.WithMetaExt("acme", map[string]any{"tenant": "t-9"}))); err != nil {
		t.Fatal(err)
	}
	const ext = `{"acme":{"tenant":"t-9"}}`
	var seen []string
	fail := true
	app.Handle("urn:test:order", func(_ context.Context, env *Envelope) error {
		seen = append(seen, string(env.MetaExt()))
		if fail {
			return errors.New("boom")
		}
		return nil
	})
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	dead := tr.Messages("orders.dlq")
	if len(dead) != 1 || !strings.Contains(dead[0].Body, `"ext":`+ext) {
		t.Fatalf("dead letters %v", dead)
	}
	fail = false
	if _, err := app.Redrive(ctx, "orders.dlq"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, " ") != ext+" "+ext+" "+ext {
		t.Fatalf("handler saw meta.ext %q", seen)
	}
}

func TestPublishRefusesReservedMetaKey(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	_, err := testApp(tr, WithDefaultQueue("orders")).Publish(context.Background(), "urn:test:order", nil, WithEnvelopeOptions(wire.WithMeta("ts", 1)))
	var ke *wire.EnvelopeKeyError
	if !errors.As(err, &ke) || ke.Pointer != "/meta/ts" || !errors.Is(err, ErrForbiddenKey) || tr.Len("orders") != 0 {
		t.Fatalf("publish with meta.ts: %v", err)
	}
}

func TestConsumeWarnsAboutDroppedKeys(t *testing.T) {
	tr := bqtest.NewInMemoryTransport()
	ctx := context.Background()
	body := `{"job":"urn:test:order","trace_id":"t","data":{},"meta":{"id":"m","schema_version":1,"ts":1},"attempts":0,"timestamp":2}`
	if err := tr.Publish(ctx, "orders", body); err != nil {
		t.Fatal(err)
	}
	var warned []error
	app := testApp(tr, WithDefaultQueue("orders"), WithOnWarning(func(err error) { warned = append(warned, err) }))
	handled := 0
	app.Handle("urn:test:order", func(context.Context, *Envelope) error { handled++; return nil })
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	var dk *wire.DroppedKeysError
	if handled != 1 || len(warned) != 1 || !errors.As(warned[0], &dk) || !errors.Is(warned[0], ErrDroppedKeys) ||
		strings.Join(dk.Pointers, ",") != "/timestamp,/meta/ts" {
		t.Fatalf("handled %d, warnings %v", handled, warned)
	}
}
