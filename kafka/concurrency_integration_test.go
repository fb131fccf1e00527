//go:build integration

package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// publishKeyedSeq publishes keys × n numbered messages to topic, each
// key's in order (bqtest.PublishKeyedSeq), through an App of its own.
func publishKeyedSeq(ctx context.Context, t *testing.T, topic string, keys, n int) {
	t.Helper()
	pub, err := babelqueue.NewApp(itTransport(t), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := bqtest.PublishKeyedSeq(ctx, keys, n, func(ctx context.Context, key []byte, m bqtest.KeyedSeq) error {
		_, err := pub.Publish(ctx, "urn:it:seq", m, babelqueue.ToQueue(topic), babelqueue.WithKey(key))
		return err
	}); err != nil {
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
	publishKeyedSeq(ctx, t, topic, keys, n)

	order := bqtest.NewKeyOrder()
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithPollTimeout(time.Second), babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:seq", order.Handler(5*time.Millisecond))
	start := time.Now()
	runApp(t, app, topic)
	got := order.WaitHandled(keys*n, 2*time.Minute)
	t.Logf("kafka per-key order: %d handled in %v, %d violations", got, time.Since(start).Round(time.Millisecond), order.Violations())
	if got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if v := order.Violations(); v != 0 {
		t.Errorf("%d handlings out of their key's publish order", v)
	}
}

// partitionGauge counts, per partition, the handlers running at once and
// the deliveries that found one of their partition already running.
type partitionGauge struct {
	mu      sync.Mutex
	running map[int32]int
	overlap int
}

func (g *partitionGauge) OnDelivery(ctx context.Context, d *babelqueue.Delivery) context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[d.Message.Partition] > 0 {
		g.overlap++
	}
	g.running[d.Message.Partition]++
	return ctx
}

func (g *partitionGauge) OnSettle(_ context.Context, d *babelqueue.Delivery, _ *babelqueue.Settlement) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[d.Message.Partition]--
}

// TestIntegrationAppPartitionOrderKeepsEachPartitionsOrder: 50 keys × 100
// numbers on 6 partitions, handled with OrderPartition by 16 handlers
// that take 0–5 ms (each partition's lane taking its next record itself,
// ReceiveReadyFrom): a partition's records run one at a time, so every
// key in its publish order, and the group commits every record.
func TestIntegrationAppPartitionOrderKeepsEachPartitionsOrder(t *testing.T) {
	const keys, n, inFlight, partitions = 50, 100, 16, 6
	topic, group := uniq("it-app-part"), uniq("g")
	tr := itTransport(t, WithGroupID(group))
	ensure(t, tr, topic, partitions)
	ctx := bgCtx(t, 3*time.Minute)
	publishKeyedSeq(ctx, t, topic, keys, n)

	order := bqtest.NewKeyOrder()
	gauge := &partitionGauge{running: map[int32]int{}}
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithPollTimeout(time.Second),
		babelqueue.WithConcurrency(inFlight, babelqueue.OrderPartition), babelqueue.WithHooks(gauge))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:it:seq", order.Handler(5*time.Millisecond))
	runApp(t, app, topic)
	if got := order.WaitHandled(keys*n, 2*time.Minute); got < keys*n {
		t.Fatalf("handled %d of %d within the time limit", got, keys*n)
	}
	if v := order.Violations(); v != 0 {
		t.Errorf("%d handlings out of their key's publish order", v)
	}
	gauge.mu.Lock()
	overlap := gauge.overlap
	gauge.mu.Unlock()
	if overlap != 0 {
		t.Errorf("%d deliveries started while another of their partition ran", overlap)
	}
	bqtest.WaitUntil(t, 30*time.Second, "every record committed", func() bool {
		return committedTotal(t, group, topic, partitions) == keys*n
	})
}
