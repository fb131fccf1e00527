//go:build integration

package pulsar

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// publishKeyedSeq publishes keys × n numbered messages to q, each key's in
// order (bqtest.PublishKeyedSeq), through an App of its own on a Shared
// subscription.
func publishKeyedSeq(ctx context.Context, t *testing.T, q string, keys, n int) {
	t.Helper()
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)))
	if err != nil {
		t.Fatal(err)
	}
	if err := bqtest.PublishKeyedSeq(ctx, keys, n, func(ctx context.Context, key []byte, m bqtest.KeyedSeq) error {
		_, err := pub.Publish(ctx, "urn:it:seq", m, babelqueue.ToQueue(q), babelqueue.WithKey(key))
		return err
	}); err != nil {
		t.Fatal(err)
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	publishKeyedSeq(ctx, t, q, keys, n)

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

// On a topic of 6 partitions with a Failover subscription, OrderPartition
// handles each partition's messages one at a time in publish order (the
// prefetcher hands out across the partitions in turn, ahead of the
// receive order): keys × numbers published with keys (a key's messages
// go to one partition) are handled in each key's order, and no two
// handlers of one partition overlap.
func TestIntegrationAppConcurrentKeepsPartitionOrderFailover(t *testing.T) {
	const partitions, keys, n, inFlight = 6, 30, 100, 6
	q := uniqueQueue(t)
	brokertest.PulsarPartitionedTopic(t, q, partitions)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Failover), WithRepublishRetries())
	if _, err := tr.consumerFor(q); err != nil { // subscribe before publishing
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	publishKeyedSeq(ctx, t, q, keys, n)

	order := bqtest.NewKeyOrder()
	keyed := order.Handler(2 * time.Millisecond)
	var busy [partitions]atomic.Int32
	var overlaps atomic.Int64
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderPartition))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:seq", func(ctx context.Context, env *babelqueue.Envelope) error {
		m, _ := ctx.Value(driver.MessageContextKey{}).(*driver.ReceivedMessage)
		if m == nil || m.Partition < 0 || m.Partition >= partitions {
			t.Errorf("delivery without a partition of the topic: %+v", m)
			return keyed(ctx, env)
		}
		if busy[m.Partition].Add(1) > 1 {
			overlaps.Add(1)
		}
		defer busy[m.Partition].Add(-1)
		return keyed(ctx, env)
	})
	start := time.Now()
	runApp(t, app, q)
	got := order.WaitHandled(keys*n, 2*time.Minute)
	t.Logf("pulsar Failover partition order: %d handled in %v, %d violations, %d overlaps", got, time.Since(start).Round(time.Millisecond), order.Violations(), overlaps.Load())
	if got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if v := order.Violations(); v != 0 {
		t.Errorf("%d handlings out of their key's publish order", v)
	}
	if o := overlaps.Load(); o != 0 {
		t.Errorf("%d handlings overlapped another of their partition", o)
	}
}
