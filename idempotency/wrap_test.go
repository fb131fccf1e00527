package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

func TestWrapMissingIDFailsOpen(t *testing.T) {
	s := idempotency.NewMemoryStore(nil)
	runs := 0
	h := idempotency.Wrap(s, func(context.Context, *babelqueue.Envelope) error { runs++; return nil })
	for _, id := range []string{"", " ", ""} {
		if err := h(context.Background(), &babelqueue.Envelope{Meta: babelqueue.Meta{ID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 3 || s.Len() != 0 {
		t.Fatalf("runs %d, records %d; want 3 and 0", runs, s.Len())
	}
}

func TestWrapBusyWaitEndsInErrInFlight(t *testing.T) {
	s := idempotency.NewMemoryStore(nil)
	ctx := context.Background()
	if _, err := s.Claim(ctx, "id", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	ran := false
	h := idempotency.Wrap(s, func(context.Context, *babelqueue.Envelope) error { ran = true; return nil },
		idempotency.WithBusyWait(30*time.Millisecond, 10*time.Millisecond))
	err := h(ctx, &babelqueue.Envelope{Meta: babelqueue.Meta{ID: "id"}})
	if !errors.Is(err, idempotency.ErrInFlight) || ran {
		t.Fatalf("err %v, ran %v; want ErrInFlight and not run", err, ran)
	}
}

func TestWrapRunsAfterOtherDeliveryFails(t *testing.T) {
	s := idempotency.NewMemoryStore(nil)
	ctx := context.Background()
	if _, err := s.Claim(ctx, "id", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = s.Release(ctx, "id", "other")
	}()
	ran := false
	h := idempotency.Wrap(s, func(context.Context, *babelqueue.Envelope) error { ran = true; return nil },
		idempotency.WithBusyWait(5*time.Second, 5*time.Millisecond))
	if err := h(ctx, &babelqueue.Envelope{Meta: babelqueue.Meta{ID: "id"}}); err != nil || !ran {
		t.Fatalf("err %v, ran %v; want nil and run", err, ran)
	}
}
