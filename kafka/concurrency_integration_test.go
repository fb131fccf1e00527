//go:build integration

package kafka

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

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
	if err := bqtest.PublishKeyedSeq(ctx, keys, n, func(ctx context.Context, key []byte, m bqtest.KeyedSeq) error {
		_, err := pub.Publish(ctx, "urn:it:seq", m, babelqueue.ToQueue(topic), babelqueue.WithKey(key))
		return err
	}); err != nil {
		t.Fatal(err)
	}

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
