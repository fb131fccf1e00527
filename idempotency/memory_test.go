package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/idempotency"
	"github.com/babelqueue/babelqueue-go/idempotency/storetest"
)

func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore(nil) })
}

func TestMemoryStoreCleanup(t *testing.T) {
	now := time.Unix(1000, 0)
	s := idempotency.NewMemoryStore(func() time.Time { return now })
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if _, err := s.Claim(ctx, id, "t", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "a", "t", time.Hour); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute) // b's lease passed, a is still remembered
	if n, _ := s.Cleanup(ctx); n != 1 || s.Len() != 1 {
		t.Fatalf("cleanup dropped %d, %d left; want 1 and 1", n, s.Len())
	}
}
