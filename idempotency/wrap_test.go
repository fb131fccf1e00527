package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

func TestWrapMissingIDFailsOpen(t *testing.T) {
	s := idempotency.NewMemoryStore(nil)
	runs := 0
	h := wrap(t, s, func(context.Context, *babelqueue.Envelope) error { runs++; return nil })
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
	h := wrap(t, s, func(context.Context, *babelqueue.Envelope) error { ran = true; return nil },
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
	h := wrap(t, s, func(context.Context, *babelqueue.Envelope) error { ran = true; return nil },
		idempotency.WithBusyWait(5*time.Second, 5*time.Millisecond))
	if err := h(ctx, &babelqueue.Envelope{Meta: babelqueue.Meta{ID: "id"}}); err != nil || !ran {
		t.Fatalf("err %v, ran %v; want nil and run", err, ran)
	}
}

func wrap(t *testing.T, s idempotency.Store, h babelqueue.Handler, opts ...idempotency.Option) babelqueue.Handler {
	t.Helper()
	w, err := idempotency.Wrap(s, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWrapReportsEveryInvalidOption(t *testing.T) {
	h, err := idempotency.Wrap(nil, nil, idempotency.WithLease(0), idempotency.WithBusyWait(time.Second, 0), idempotency.WithClock(nil), nil)
	if h != nil || !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("Wrap = %v, %v; want nil and ErrInvalidOption", h, err)
	}
	for _, want := range []string{"nil store", "nil handler", "lease 0s", "busy wait", "nil clock", "nil option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}
