//go:build integration

package pulsar

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

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
	if err := bqtest.PublishKeyedSeq(ctx, keys, n, func(ctx context.Context, key []byte, m bqtest.KeyedSeq) error {
		_, err := pub.Publish(ctx, "urn:it:seq", m, babelqueue.ToQueue(q), babelqueue.WithKey(key))
		return err
	}); err != nil {
		t.Fatal(err)
	}

	order := bqtest.NewKeyOrder()
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:seq", order.Handler(5*time.Millisecond))
	start := time.Now()
	runApp(t, app, q)
	got := order.WaitHandled(keys*n, 2*time.Minute)
	t.Logf("pulsar %s per-key order: %d handled in %v, %d violations", subscriptionTypeName(st), got, time.Since(start).Round(time.Millisecond), order.Violations())
	if got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if v := order.Violations(); v != 0 {
		t.Errorf("%d handlings out of their key's publish order", v)
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
