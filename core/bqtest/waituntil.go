package bqtest

import (
	"testing"
	"time"
)

// WaitUntil returns once cond holds, and fails the test naming what when
// cond still does not hold after within.
//
// It polls cond first every millisecond, backing off to every 20 ms, so a
// fast condition is seen at once and a slow one costs little.
func WaitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}
