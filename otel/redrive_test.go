package otel

import (
	"context"
	"errors"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

func TestEveryDecoratorIsARedriver(t *testing.T) {
	tr := &transport{inner: minimal{}}
	for mask := range len(combinations) {
		if _, ok := combinations[mask](tr).(babelqueue.Redriver); !ok {
			t.Fatalf("mask %010b: the decorator is not a babelqueue.Redriver", mask)
		}
	}
}

func TestRedriveThroughTheDecoratorCountsEachMoveOnce(t *testing.T) {
	h := newHarness(t)
	mem := babelqueue.NewInMemoryTransport()
	app := newApp(h, mem, babelqueue.WithMaxAttempts(1))
	app.Handle(testURN, func(context.Context, *babelqueue.Envelope) error { return errors.New("down") })
	for range 2 {
		if _, err := app.Publish(context.Background(), testURN, nil); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, app)
	if mem.Len("orders.dlq") != 2 {
		t.Fatalf("set-up: DLQ holds %d, want 2", mem.Len("orders.dlq"))
	}
	res, err := babelqueue.Redrive(context.Background(), h.tel.Transport(mem), "orders.dlq", babelqueue.WithRedrivePollTimeout(10e6))
	if err != nil || res.Moved != 2 || mem.Len("orders") != 2 || mem.Len("orders.dlq") != 0 {
		t.Fatalf("Redrive: %v, result %+v, orders %d, dlq %d", err, res, mem.Len("orders"), mem.Len("orders.dlq"))
	}
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "orders"}); n != 2 {
		t.Errorf("redriven{orders} = %d, want 2", n)
	}
	span := h.only(t, "redrive orders.dlq")
	wantAttrs(t, span, map[string]string{"babelqueue.redrive.moved": "2", "babelqueue.redrive.examined": "2"})
}

// ownRedrive is a transport with a redrive of its own.
type ownRedrive struct {
	*babelqueue.InMemoryTransport
	plan babelqueue.RedrivePlan
	err  error
}

func (o *ownRedrive) Redrive(_ context.Context, _ string, plan babelqueue.RedrivePlan) (*babelqueue.RedriveResult, error) {
	o.plan = plan
	res := &babelqueue.RedriveResult{}
	plan.Report(res, babelqueue.RedriveItem{Target: "orders", Outcome: babelqueue.RedriveMoved})
	plan.Report(res, babelqueue.RedriveItem{Outcome: babelqueue.RedriveUnselected})
	return res, o.err
}

func TestRedriveReachesTheWrappedRedriver(t *testing.T) {
	h := newHarness(t)
	inner := &ownRedrive{InMemoryTransport: babelqueue.NewInMemoryTransport(), err: errors.New("partial")}
	res, err := babelqueue.Redrive(context.Background(), h.tel.Transport(inner), "orders.dlq", babelqueue.WithRedriveCursor("c"), babelqueue.WithRedriveMaxRedrives(2))
	if err == nil || err.Error() != "partial" || res.Moved != 1 || res.Kept != 1 {
		t.Fatalf("Redrive: %v, %+v", err, res)
	}
	if inner.plan.Cursor != "c" || inner.plan.MaxRedrives != 2 {
		t.Fatalf("the wrapped redrive got plan %+v", inner.plan)
	}
	if n := h.count(t, MetricRedriven, map[string]string{"messaging.destination.name": "orders"}); n != 1 {
		t.Errorf("redriven{orders} = %d, want 1", n)
	}
	span := h.only(t, "redrive orders.dlq")
	if span.Status.Description != "redrive failed" {
		t.Errorf("span status %+v, want an error", span.Status)
	}
}
