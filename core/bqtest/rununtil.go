package bqtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// RunUntilCleanup runs run(ctx) in a goroutine until the test ends, then
// cancels ctx and waits up to within for it to return.
//
// The test fails when run returns an error other than context.Canceled
// (named by what, for example "Consume") or does not return within.
func RunUntilCleanup(t testing.TB, what string, within time.Duration, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", what, err)
			}
		case <-time.After(within):
			t.Errorf("%s did not stop within %v", what, within)
		}
	})
}
