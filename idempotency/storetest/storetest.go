// Package storetest is the conformance test of an idempotency.Store: every
// store of this repository runs it against its real backend, and a store of
// your own can too.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/idempotency"
)

// Run runs the store tests. newStore returns an empty store (or one whose
// ids do not collide with earlier calls: every test uses fresh ids).
// Expiry is tested with real time (leases of a few hundred milliseconds).
func Run(t *testing.T, newStore func(t *testing.T) idempotency.Store) {
	t.Helper()
	var seq atomic.Int64
	fresh := func(t *testing.T) string {
		return fmt.Sprintf("%s-%d-%d", t.Name(), time.Now().UnixNano(), seq.Add(1))
	}
	ctx := context.Background()

	t.Run("ClaimCompleteDone", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		expectState(t, s, id, "b", time.Minute, idempotency.Busy)
		if err := s.Complete(ctx, id, "a", time.Hour); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		expectState(t, s, id, "c", time.Minute, idempotency.Done)
	})
	t.Run("ReleaseAllowsRerun", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		if err := s.Release(ctx, id, "a"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		expectState(t, s, id, "b", time.Minute, idempotency.Claimed)
	})
	t.Run("ReleaseOfAnotherTokenKeepsClaim", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		if err := s.Release(ctx, id, "other"); err != nil {
			t.Fatalf("Release: %v", err)
		}
		expectState(t, s, id, "b", time.Minute, idempotency.Busy)
	})
	t.Run("CompleteWithWrongTokenIsLeaseLost", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		if err := s.Complete(ctx, id, "other", time.Hour); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete with another token: %v, want ErrLeaseLost", err)
		}
	})
	t.Run("ForgetAllowsRerun", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		if err := s.Complete(ctx, id, "a", time.Hour); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := s.Forget(ctx, id); err != nil {
			t.Fatalf("Forget: %v", err)
		}
		expectState(t, s, id, "b", time.Minute, idempotency.Claimed)
	})
	t.Run("LeaseExpires", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", 300*time.Millisecond, idempotency.Claimed)
		time.Sleep(600 * time.Millisecond)
		expectState(t, s, id, "b", time.Minute, idempotency.Claimed)
		if err := s.Complete(ctx, id, "a", time.Hour); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Fatalf("Complete after the lease passed to another: %v, want ErrLeaseLost", err)
		}
	})
	t.Run("DoneExpires", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		expectState(t, s, id, "a", time.Minute, idempotency.Claimed)
		if err := s.Complete(ctx, id, "a", 300*time.Millisecond); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		expectState(t, s, id, "b", time.Minute, idempotency.Done)
		time.Sleep(600 * time.Millisecond)
		expectState(t, s, id, "c", time.Minute, idempotency.Claimed)
	})
	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		const n = 16
		var claimed atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := s.Claim(ctx, id, fmt.Sprintf("t%d", i), time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if st == idempotency.Claimed {
					claimed.Add(1)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Claim: %v", err)
		}
		if got := claimed.Load(); got != 1 {
			t.Fatalf("%d concurrent claims won, want 1", got)
		}
	})
	t.Run("WrapConcurrentDeliveriesRunOnce", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		var effects atomic.Int32
		h := mustWrap(t, s, func(ctx context.Context, env *babelqueue.Envelope) error {
			effects.Add(1)
			time.Sleep(100 * time.Millisecond)
			return nil
		}, idempotency.WithBusyWait(10*time.Second, 10*time.Millisecond))
		DeliverConcurrently(t, ctx, h, &babelqueue.Envelope{Job: "urn:test", Meta: babelqueue.Meta{ID: id}}, 8)
		if got := effects.Load(); got != 1 {
			t.Fatalf("effect ran %d times over 8 concurrent deliveries, want 1", got)
		}
	})
	t.Run("WrapFailureReleasesThenRetryRuns", func(t *testing.T) {
		s, id := newStore(t), fresh(t)
		var effects atomic.Int32
		fail := errors.New("boom")
		calls := 0
		h := mustWrap(t, s, func(ctx context.Context, env *babelqueue.Envelope) error {
			calls++
			if calls == 1 {
				return fail
			}
			effects.Add(1)
			return nil
		})
		env := &babelqueue.Envelope{Job: "urn:test", Meta: babelqueue.Meta{ID: id}}
		if err := h(ctx, env); !errors.Is(err, fail) {
			t.Fatalf("first delivery: %v, want the handler's error", err)
		}
		for range 3 {
			if err := h(ctx, env); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
		}
		if calls != 2 || effects.Load() != 1 {
			t.Fatalf("handler calls %d, effects %d; want 2 and 1", calls, effects.Load())
		}
	})
}

// DeliverConcurrently calls h with env from n goroutines at once and fails
// the test when any call returns an error.
func DeliverConcurrently(t testing.TB, ctx context.Context, h babelqueue.Handler, env *babelqueue.Envelope, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- h(ctx, env) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("delivery: %v", err)
		}
	}
}

func mustWrap(t *testing.T, s idempotency.Store, h babelqueue.Handler, opts ...idempotency.Option) babelqueue.Handler {
	t.Helper()
	w, err := idempotency.Wrap(s, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func expectState(t *testing.T, s idempotency.Store, id, token string, lease time.Duration, want idempotency.State) {
	t.Helper()
	got, err := s.Claim(context.Background(), id, token, lease)
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", id, token, err)
	}
	if got != want {
		t.Fatalf("Claim(%s, %s) = %v, want %v", id, token, got, want)
	}
}

// Overhead returns the mean time Wrap adds per message over store. It runs
// n deliveries of distinct ids through a wrapped no-op handler, one after
// the other, each a claim and a completion.
func Overhead(ctx context.Context, store idempotency.Store, n int) (time.Duration, error) {
	h, err := idempotency.Wrap(store, func(context.Context, *babelqueue.Envelope) error { return nil })
	if err != nil {
		return 0, err
	}
	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano())
	env := &babelqueue.Envelope{Job: "urn:bench"}
	start := time.Now()
	for i := range n {
		env.Meta.ID = prefix + strconv.Itoa(i)
		if err := h(ctx, env); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(n), nil
}

// PrintOverhead runs Overhead and prints the benchmark line
// "bench: idempotency-overhead-<name> value=<µs per message>".
func PrintOverhead(t *testing.T, name string, store idempotency.Store, n int) {
	t.Helper()
	d, err := Overhead(context.Background(), store, n)
	if err != nil {
		t.Fatalf("overhead of %s: %v", name, err)
	}
	fmt.Printf("bench: idempotency-overhead-%s value=%.1f\n", name, float64(d.Nanoseconds())/1000)
}
