//go:build integration

package kafkashare

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// Leak check: 5 cycles of a transport that publishes, receives, accepts
// and closes leave no goroutine behind (the producer, the share consumer
// and the lock keeper all stop with Close).
func TestShareCloseLeavesNoGoroutine(t *testing.T) {
	q := newTopic(t, 1)
	body := envelopeBody(t)
	ctx := context.Background()
	cycle := func() {
		tr := newTransport(t)
		if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: q, Body: body}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			m, err := tr.Receive(ctx, q, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if m != nil {
				if err := tr.Ack(ctx, m); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // warm up what the runtime and the test keep
	base := stableGoroutines()
	for range 4 {
		cycle()
	}
	var n int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= base {
			break
		}
	}
	if n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after 4 more cycles, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("leak: goroutines before=%d after=%d", base, n)
}

func stableGoroutines() int {
	n := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}
