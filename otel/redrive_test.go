package otel

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/redrive"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// deadLetters leaves n dead letters in orders.dlq.
func deadLetters(t *testing.T, h *harness, mem *bqtest.InMemoryTransport, n int) *babelqueue.App {
	t.Helper()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(1))
	app.Handle(testURN, func(context.Context, *babelqueue.Envelope) error { return errors.New("down") })
	for range n {
		if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, app)
	if mem.Len("orders.dlq") != n {
		t.Fatalf("set-up: the DLQ holds %d, want %d", mem.Len("orders.dlq"), n)
	}
	return app
}

func TestAppRedriveCountsEachMoveUnderItsTarget(t *testing.T) {
	h := newHarness(t)
	mem := bqtest.NewInMemoryTransport()
	app := deadLetters(t, h, mem, 3)
	poll := redrive.WithPollTimeout(10 * time.Millisecond)

	// A dry run moves nothing and counts nothing.
	ctx, end := h.tel.StartRedrive(context.Background(), "orders.dlq")
	res, err := app.Redrive(ctx, "orders.dlq", poll, redrive.WithDryRun())
	end(res, err)
	if err != nil || res.Moved != 3 || mem.Len("orders.dlq") != 3 {
		t.Fatalf("dry run: %v, %+v", err, res)
	}
	if n := h.Count(t, MetricRedriven, nil); n != 0 {
		t.Errorf("a dry run counted %d redriven", n)
	}

	ctx, end = h.tel.StartRedrive(context.Background(), "orders.dlq")
	res, err = app.Redrive(ctx, "orders.dlq", poll, redrive.WithMax(2))
	end(res, err)
	if err != nil || res.Moved != 2 || mem.Len("orders") != 2 {
		t.Fatalf("Redrive: %v, %+v, orders %d", err, res, mem.Len("orders"))
	}
	res, err = app.Redrive(context.Background(), "orders.dlq", poll, redrive.WithTarget("audit"))
	if err != nil || res.Moved != 1 {
		t.Fatalf("Redrive to audit: %v, %+v", err, res)
	}
	for target, want := range map[string]int64{"orders": 2, "audit": 1} {
		if n := h.Count(t, MetricRedriven, map[string]string{"messaging.destination.name": target}); n != want {
			t.Errorf("redriven{%s} = %d, want %d", target, n, want)
		}
	}
	runs := h.Ended("redrive orders.dlq")
	if len(runs) != 2 {
		t.Fatalf("%d redrive spans, want 2", len(runs))
	}
	oteltest.WantAttrs(t, runs[0], map[string]string{"babelqueue.redrive.dry_run": "true", "babelqueue.redrive.moved": "3"})
	oteltest.WantAttrs(t, runs[1], map[string]string{"babelqueue.redrive.dry_run": "false", "babelqueue.redrive.moved": "2", "babelqueue.redrive.examined": "2"})

	// A discard run counts nothing as redriven; its span says how many.
	mem.Publish(context.Background(), "orders.dlq", "{poison")
	ctx, end = h.tel.StartRedrive(context.Background(), "orders.dlq")
	res, err = app.Redrive(ctx, "orders.dlq", poll, redrive.WithDiscard(), redrive.WithUndecodable())
	end(res, err)
	if err != nil || res.Discarded != 1 || mem.Len("orders.dlq") != 0 {
		t.Fatalf("discard: %v, %+v", err, res)
	}
	if n := h.Count(t, MetricRedriven, nil); n != 3 {
		t.Errorf("redriven = %d after a discard, want 3", n)
	}
	runs = h.Ended("redrive orders.dlq")
	oteltest.WantAttrs(t, runs[len(runs)-1], map[string]string{"babelqueue.redrive.discarded": "1", "babelqueue.redrive.moved": "0"})
}

// ownRedrive is a transport running redrives itself, as the Kafka and
// Pulsar bindings do.
type ownRedrive struct {
	*bqtest.InMemoryTransport
}

func (o ownRedrive) Redrive(_ context.Context, _ string, plan redrive.Plan) (*redrive.Result, error) {
	res := &redrive.Result{}
	plan.Report(res, redrive.Item{Target: "orders", Outcome: redrive.Moved})
	plan.Report(res, redrive.Item{Outcome: redrive.AlreadyMoved, Target: "orders"})
	plan.Report(res, redrive.Item{Outcome: redrive.Failed, Position: "0/7", Err: errors.New("write refused")})
	return res, errors.New("partial")
}

func TestRedriveHooksReachABindingsOwnRedrive(t *testing.T) {
	h := newHarness(t)
	ctx, end := h.tel.StartRedrive(context.Background(), "orders.dlq")
	res, err := redrive.Run(ctx, ownRedrive{bqtest.NewInMemoryTransport()}, "orders.dlq", redrive.WithHooks(h.tel.Hooks()))
	end(res, err)
	if err == nil || res.Moved != 1 {
		t.Fatalf("Redrive: %v, %+v", err, res)
	}
	if n := h.Count(t, MetricRedriven, map[string]string{"messaging.destination.name": "orders"}); n != 1 {
		t.Errorf("redriven{orders} = %d, want 1 (the already moved one is not counted again)", n)
	}
	span := h.Only(t, "redrive orders.dlq")
	if span.Status.Code != codes.Error || !hasEvent(span, "babelqueue.redrive_failed") {
		t.Errorf("redrive span status %v events %v, want an error and the failed item", span.Status, span.Events)
	}
}
