package babelqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

func TestPublishRefusesURNsBreakingTheRule(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	ctx := context.Background()
	for _, urn := range []string{"urn:babel", "urn:babel:", "urn:babel: bad", "not-a-urn"} {
		if _, err := a.Publish(ctx, urn, nil, ToQueue("orders")); !errors.Is(err, ErrInvalidURN) || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("Publish(%q) = %v, want ErrInvalidURN and ErrInvalidOption", urn, err)
		}
		msgs := []BatchMessage{{URN: "urn:babel:ok"}, {URN: urn}}
		if _, err := a.PublishBatch(ctx, msgs, ToQueue("orders")); !errors.Is(err, ErrInvalidURN) || !errors.Is(err, ErrInvalidOption) {
			t.Errorf("PublishBatch with %q = %v, want ErrInvalidURN and ErrInvalidOption", urn, err)
		}
	}
	if mem.Len("orders") != 0 {
		t.Fatalf("a refused publish wrote %d messages", mem.Len("orders"))
	}
	if _, err := a.PublishBatch(ctx, []BatchMessage{{URN: "urn:babel:a"}, {URN: "URN:Babel:B:c"}}, ToQueue("orders")); err != nil || mem.Len("orders") != 2 {
		t.Errorf("valid batch: %v, %d written", err, mem.Len("orders"))
	}
}

// TestConsumersDoNotCheckTheURNRule: a delivery whose URN breaks the rule
// (written by another producer) is routed like any other: to its handler
// when there is one, else through the unknown-URN strategy.
func TestConsumersDoNotCheckTheURNRule(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	var got []string
	a.Handle("urn:legacy", func(_ context.Context, env *Envelope) error { got = append(got, env.URN()); return nil })
	mem.Publish(context.Background(), "orders", envBody(t, "urn:legacy", 0))
	mem.Publish(context.Background(), "orders", envBody(t, "urn:other", 0))
	drain(t, a, "orders")
	if len(got) != 1 || got[0] != "urn:legacy" {
		t.Errorf("handled %v, want the one-part URN handled", got)
	}
	if mem.Len("orders.dlq") != 1 {
		t.Errorf("the unknown one-part URN: DLQ holds %d, want 1 (unknown-URN strategy)", mem.Len("orders.dlq"))
	}
}
