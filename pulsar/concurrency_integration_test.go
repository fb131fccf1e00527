//go:build integration

package pulsar

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// keyedSeq is the data of the per-key order tests.
type keyedSeq struct {
	K int `json:"k"`
	N int `json:"n"`
}

// keyOrder counts, per key, the handlings that are not the next number of
// their key.
type keyOrder struct {
	mu         sync.Mutex
	next       map[int]int
	violations int
	handled    atomic.Int64
}

func (o *keyOrder) see(m keyedSeq) {
	o.mu.Lock()
	if m.N != o.next[m.K] {
		o.violations++
	}
	o.next[m.K] = m.N + 1
	o.mu.Unlock()
	o.handled.Add(1)
}

// testConcurrentPerKeyOrder publishes 50 keys × 200 numbers with keys,
// each key's numbers in order, and handles them 32 at a time with
// OrderKey by handlers that take 0–5 ms on a subscription of type st:
// every key is handled in its publish order.
func testConcurrentPerKeyOrder(t *testing.T, st pulsar.SubscriptionType) {
	const keys, n, inFlight = 50, 200, 32
	q := uniqueQueue(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(st), WithRepublishRetries())
	if _, err := tr.consumerFor(q); err != nil { // subscribe before publishing
		t.Fatal(err)
	}
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(fmt.Sprintf("key-%d", k))
			for i := range n {
				if _, err := pub.Publish(ctx, "urn:it:seq", keyedSeq{K: k, N: i}, babelqueue.ToQueue(q), babelqueue.WithKey(key)); err != nil {
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

	order := &keyOrder{next: map[int]int{}}
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
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
	runApp(t, app, q)
	deadline := time.Now().Add(2 * time.Minute)
	for order.handled.Load() < keys*n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	order.mu.Lock()
	defer order.mu.Unlock()
	t.Logf("pulsar %s per-key order: %d handled in %v, %d violations", subscriptionTypeName(st), order.handled.Load(), took.Round(time.Millisecond), order.violations)
	if got := order.handled.Load(); got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if order.violations != 0 {
		t.Errorf("%d handlings out of their key's publish order", order.violations)
	}
}

func TestIntegrationAppConcurrentKeepsPerKeyOrderKeyShared(t *testing.T) {
	testConcurrentPerKeyOrder(t, pulsar.KeyShared)
}

func TestIntegrationAppConcurrentKeepsPerKeyOrderExclusive(t *testing.T) {
	testConcurrentPerKeyOrder(t, pulsar.Exclusive)
}

func TestIntegrationAppConcurrentKeepsPerKeyOrderFailover(t *testing.T) {
	testConcurrentPerKeyOrder(t, pulsar.Failover)
}
