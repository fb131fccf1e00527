package babelqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestConsumeStopsWithNilWhateverEndsItsContext: the stop rule of the
// package doc. Consume returns nil when its context is cancelled, past its
// deadline or cancelled with a cause, one message at a time or on lanes,
// idle or with a handler running; Drain, bounded work, is interrupted
// with the context's error.
func TestConsumeStopsWithNilWhateverEndsItsContext(t *testing.T) {
	ends := map[string]func() (context.Context, context.CancelFunc){
		"cancel": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		},
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		},
		"cause": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("shutting down")) })
			return ctx, func() { cancel(nil) }
		},
	}
	for name, end := range ends {
		for _, conc := range []int{1, 4} {
			for _, busy := range []bool{false, true} {
				mem := bqtest.NewInMemoryTransport()
				a := testApp(mem, WithConcurrency(conc, OrderKey), WithSettleTimeout(time.Second))
				a.Handle("urn:t:slow", func(ctx context.Context, _ *Envelope) error {
					<-ctx.Done()
					return ctx.Err()
				})
				if busy {
					if _, err := a.Publish(context.Background(), "urn:t:slow", nil, ToQueue("orders")); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := end()
				err := a.Consume(ctx, "orders")
				cancel()
				if err != nil {
					t.Errorf("%s, concurrency %d, busy %v: Consume = %v, want nil", name, conc, busy, err)
				}
			}
		}
	}
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Drain(ctx, "orders"); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain on a cancelled context = %v, want context.Canceled", err)
	}
}
