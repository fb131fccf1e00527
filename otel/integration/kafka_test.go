//go:build integration

package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	bqotel "github.com/babelqueue/babelqueue-go/otel"
)

func kafkaTransport(t *testing.T, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	brokers := brokertest.KafkaBrokers(t)
	tr, err := kafka.New(append([]kafka.Option{kafka.WithBrokers(brokers...), kafka.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, tr.Close, 15*time.Second)
	return tr
}

// TestKafkaTraceFromPublishThroughRetryTierToDeadLetter: a message
// published under a root span fails, goes through the retry tier and the
// re-injector, fails again and is dead-lettered; a second consumer reads
// the dead letter. Every delivery is a child of the producer span in the
// root's trace, each linked to the attempt before it (the link travels in
// the tier record's headers), only the dead-lettered attempt is an error,
// every outcome is counted once, and the re-injector's carry is measured
// in babelqueue.reinject.lag.
func TestKafkaTraceFromPublishThroughRetryTierToDeadLetter(t *testing.T) {
	queue := brokertest.Topic(t, "otel")
	tiers := kafka.WithRetryTiers(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr := kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "g")), tiers)
	if err := tr.EnsureTopics(ctx, queue, 1, 1); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "kafka")

	reinjector, err := kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "reinject")), tiers, kafka.WithReinjectHooks(h.tel.Hooks()),
		kafka.WithReinjectBacklogInterval(100*time.Millisecond)).NewReinjector(queue)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan error, 1)
	go func() { rdone <- reinjector.Run(rctx) }()
	t.Cleanup(func() {
		rcancel()
		if err := <-rdone; err != nil {
			t.Errorf("Reinjector.Run: %v", err)
		}
	})

	app, err := babelqueue.NewApp(tr, babelqueue.WithHooks(h.tel.Hooks()), babelqueue.WithDefaultQueue(queue), babelqueue.WithMaxAttempts(2),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	app.Handle(testURN, rec.fail)

	rootCtx, root := h.TP.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, map[string]any{"order_id": 1042}, babelqueue.WithKey([]byte("order-1042"))); err != nil {
		t.Fatal(err)
	}
	root.End()
	consume(t, app, queue)

	process := checkRetryToDeadLetter(t, h, rec, root.SpanContext(), queue, "kafka", kafka.RetryTopic(queue, 1), true)

	lag := map[string]string{"messaging.system": "kafka", "messaging.destination.name": queue}
	deadline := time.Now().Add(10 * time.Second)
	n, sum := h.Observations(t, bqotel.MetricReinjectLag, lag)
	for n == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n, sum = h.Observations(t, bqotel.MetricReinjectLag, lag)
	}
	if n != 1 || sum < 0 || sum > 10 {
		t.Errorf("%s: %d observations summing %vs, want 1 between 0 and 10s", bqotel.MetricReinjectLag, n, sum)
	}

	// The re-injector's backlog sample reaches the gauges: the tier was
	// carried, so its backlog is observed as zero.
	tier := map[string]string{"messaging.system": "kafka", "messaging.destination.name": kafka.RetryTopic(queue, 1), "babelqueue.tier": "1"}
	v, ok := h.gauge(t, bqotel.MetricReinjectBacklog, tier)
	for deadline := time.Now().Add(10 * time.Second); (!ok || v != 0) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		v, ok = h.gauge(t, bqotel.MetricReinjectBacklog, tier)
	}
	if !ok || v != 0 {
		t.Errorf("%s%v = %v (observed: %v), want 0", bqotel.MetricReinjectBacklog, tier, v, ok)
	}
	if _, ok := h.gauge(t, bqotel.MetricReinjectOldestAge, tier); !ok {
		t.Errorf("%s%v not observed", bqotel.MetricReinjectOldestAge, tier)
	}

	reader, err := babelqueue.NewApp(kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "dlq-reader"))), babelqueue.WithHooks(h.tel.Hooks()),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	reader.Handle(testURN, func(context.Context, *babelqueue.Envelope) error { return nil })
	consume(t, reader, queue+".dlq")
	checkDeadLetterContinuesTrace(t, h, queue, process[1])
}
