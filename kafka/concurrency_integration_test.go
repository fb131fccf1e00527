//go:build integration

package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// keyedSeq is the data of the per-key order tests.
type keyedSeq struct {
	K int `json:"k"`
	N int `json:"n"`
}

// keyOrder records, per key, the sequence numbers in handling order and
// counts the handlings that are not the next number of their key.
type keyOrder struct {
	mu         sync.Mutex
	next       map[int]int
	violations int
	handled    atomic.Int64
}

func newKeyOrder() *keyOrder { return &keyOrder{next: map[int]int{}} }

func (o *keyOrder) see(m keyedSeq) {
	o.mu.Lock()
	if m.N != o.next[m.K] {
		o.violations++
	}
	o.next[m.K] = m.N + 1
	o.mu.Unlock()
	o.handled.Add(1)
}

// publishKeyedSeq publishes keys × n keyed messages through app, each
// key's numbers in order from a goroutine of its own.
func publishKeyedSeq(t *testing.T, ctx context.Context, app *babelqueue.App, topic string, keys, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Value
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(fmt.Sprintf("key-%d", k))
			for i := range n {
				if _, err := app.Publish(ctx, "urn:it:seq", keyedSeq{K: k, N: i}, babelqueue.ToQueue(topic), babelqueue.WithKey(key)); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationAppConcurrentKeepsPerKeyOrder: 50 keys × 200 numbers on
// 6 partitions, handled 32 at a time with OrderKey by handlers that take
// 0–5 ms: every key is handled in its publish order.
func TestIntegrationAppConcurrentKeepsPerKeyOrder(t *testing.T) {
	const keys, n, inFlight = 50, 200, 32
	topic := uniq("it-app-conc")
	tr := itTransport(t, WithGroupID(uniq("g")))
	ensure(t, tr, topic, 6)
	ctx := bgCtx(t, 3*time.Minute)
	pub, err := babelqueue.NewApp(itTransport(t), quiet)
	if err != nil {
		t.Fatal(err)
	}
	publishKeyedSeq(t, ctx, pub, topic, keys, n)

	order := newKeyOrder()
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:seq", func(_ context.Context, env *babelqueue.Envelope) error {
		var m keyedSeq
		if err := env.BindData(&m); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.IntN(5001)) * time.Microsecond)
		order.see(m)
		return nil
	})
	start := time.Now()
	runApp(t, app, topic)
	deadline := time.Now().Add(2 * time.Minute)
	for order.handled.Load() < keys*n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	order.mu.Lock()
	defer order.mu.Unlock()
	t.Logf("kafka per-key order: %d handled in %v, %d violations", order.handled.Load(), took.Round(time.Millisecond), order.violations)
	if got := order.handled.Load(); got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if order.violations != 0 {
		t.Errorf("%d handlings out of their key's publish order", order.violations)
	}
}
