package babelqueue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

func TestPublishRefusesURNsBreakingTheRule(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	ctx := context.Background()
	for _, urn := range []string{"urn:babel", "urn:babel:", "urn:babel: bad", "not-a-urn"} {
		if _, err := a.Publish(ctx, urn, nil, ToQueue("orders")); !errors.Is(err, ErrInvalidURN) || errors.Is(err, ErrInvalidOption) {
			t.Errorf("Publish(%q) = %v, want ErrInvalidURN and not ErrInvalidOption", urn, err)
		}
		msgs := []BatchMessage{{URN: "urn:babel:ok"}, {URN: urn}}
		if _, err := a.PublishBatch(ctx, msgs, ToQueue("orders")); !errors.Is(err, ErrInvalidURN) || errors.Is(err, ErrInvalidOption) {
			t.Errorf("PublishBatch with %q = %v, want ErrInvalidURN and not ErrInvalidOption", urn, err)
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
// when there is one (registered under WithLegacyURNs), else through the
// unknown-URN strategy.
func TestConsumersDoNotCheckTheURNRule(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithLegacyURNs())
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

// TestPublishArgumentErrorsSayItOnce: issue 36 measured
// "babelqueue: publish to orders: babelqueue: invalid option: babelqueue:
// invalid URN ..." for a bad URN argument, and three prefixes for data
// that is not an object.
func TestPublishArgumentErrorsSayItOnce(t *testing.T) {
	a, err := NewApp(bqtest.NewInMemoryTransport(), WithDefaultQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = a.Publish(ctx, "urn:babel", nil)
	const urnErr = `babelqueue: publish to orders: invalid URN "urn:babel": nothing follows the namespace (want urn:<namespace>:<name>)`
	if err == nil || err.Error() != urnErr || !errors.Is(err, ErrInvalidURN) || errors.Is(err, ErrInvalidOption) {
		t.Errorf("Publish(urn:babel) = %v\nwant %s, matching ErrInvalidURN only", err, urnErr)
	}
	_, err = a.Publish(ctx, "urn:babel:orders:created", "str")
	const dataErr = `babelqueue: publish to orders: making urn:babel:orders:created: data is not a JSON object: string encodes to "str"`
	if err == nil || err.Error() != dataErr || !errors.Is(err, ErrInvalidData) {
		t.Errorf("Publish(data \"str\") = %v\nwant %s, matching ErrInvalidData", err, dataErr)
	}
	if _, err := Make("urn:babel:orders:created", 7); err == nil || strings.Count(err.Error(), "babelqueue:") != 1 {
		t.Errorf("Make(7) = %v, want one babelqueue: prefix", err)
	}
}

// TestHandleRejectsWhatPublishRejects: Handle("not-a-urn", h) returns an
// error matching ErrInvalidURN and registers nothing; Consume and Drain
// then refuse to start with that error, so that ignoring it hides nothing.
func TestHandleRejectsWhatPublishRejects(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a, err := NewApp(mem, WithDefaultQueue("orders"), WithPollTimeout(time.Millisecond), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h := func(context.Context, *Envelope) error { ran = true; return nil }
	if err := a.Handle("urn:babel:orders:created", h); err != nil {
		t.Fatalf("Handle of a valid URN: %v", err)
	}
	const want = `babelqueue: Handle: invalid URN "not-a-urn": does not start with "urn:" (want urn:<namespace>:<name>)`
	err = a.Handle("not-a-urn", h)
	if err == nil || err.Error() != want || !errors.Is(err, ErrInvalidURN) || errors.Is(err, ErrInvalidOption) {
		t.Fatalf("Handle(not-a-urn) = %v\nwant %s", err, want)
	}
	if a.handler("not-a-urn") != nil {
		t.Error("a rejected URN was registered")
	}
	if err := a.Handle("urn:babel", nil); !errors.Is(err, ErrInvalidURN) {
		t.Errorf("removing an invalid URN: %v, want ErrInvalidURN", err)
	}
	if _, err := a.Publish(context.Background(), "urn:babel:orders:created", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Drain(context.Background()); err == nil || err.Error() != want || n != 0 {
		t.Errorf("Drain = %d, %v; want 0 and the Handle error", n, err)
	}
	if err := a.Consume(context.Background(), "orders"); err == nil || err.Error() != want {
		t.Errorf("Consume = %v, want the Handle error", err)
	}
	if ran || mem.Len("orders") != 1 {
		t.Errorf("a message was read (handler ran %v, orders holds %d)", ran, mem.Len("orders"))
	}

	legacy, err := NewApp(mem, WithLegacyURNs())
	if err != nil {
		t.Fatal(err)
	}
	if err := legacy.Handle("urn:legacy", h); err != nil {
		t.Errorf("WithLegacyURNs: Handle(urn:legacy) = %v", err)
	}
	if err := legacy.Handle(" \t", h); !errors.Is(err, ErrInvalidURN) {
		t.Errorf("WithLegacyURNs: Handle of a blank URN = %v, want ErrInvalidURN", err)
	}
}
