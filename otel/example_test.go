package otel_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	bqotel "github.com/babelqueue/babelqueue-go/otel"
)

// A message fails once and is retried. Every attempt is a child of the
// producer span, the retry links to the failed attempt, and neither has an
// error status: the message was not dead-lettered.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	tel, err := bqotel.New(bqotel.WithTracerProvider(tp), bqotel.WithSystem("kafka"))
	if err != nil {
		panic(err)
	}
	app, err := babelqueue.NewApp(bqtest.NewInMemoryTransport(), babelqueue.WithHooks(tel.Hooks()),
		babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(10*time.Millisecond),
		babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	calls := 0
	app.Handle("urn:babel:orders:created", func(ctx context.Context, env *babelqueue.Envelope) error {
		if calls++; calls == 1 {
			return errors.New("store unavailable")
		}
		return nil
	})
	if _, err := app.Publish(context.Background(), "urn:babel:orders:created", map[string]any{"order_id": 1042}); err != nil {
		panic(err)
	}
	if _, err := app.Drain(context.Background()); err != nil {
		panic(err)
	}

	got := spans.GetSpans()
	send := got[0]
	for _, s := range got[1:] {
		outcome, attempt := "", ""
		for _, kv := range s.Attributes {
			switch kv.Key {
			case bqotel.AttrOutcome:
				outcome = kv.Value.AsString()
			case bqotel.AttrAttempt:
				attempt = kv.Value.String()
			}
		}
		fmt.Printf("%s attempt=%s outcome=%s child-of-send=%v links=%d status=%s\n",
			s.Name, attempt, outcome, s.Parent.SpanID() == send.SpanContext.SpanID(), len(s.Links), s.Status.Code)
	}
	// Output:
	// process orders attempt=0 outcome=retried child-of-send=true links=0 status=Unset
	// process orders attempt=1 outcome=handled child-of-send=true links=1 status=Unset
}
