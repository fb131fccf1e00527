//go:build integration

package otel

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric/noop"
)

func kafkaTransport(t *testing.T, opts ...kafka.Option) *kafka.Transport {
	t.Helper()
	tr, err := kafka.New(append([]kafka.Option{kafka.WithBrokers(brokertest.KafkaBrokers(t)...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	closeWithin(t, tr.Close, 15*time.Second)
	return tr
}

// TestIntegrationKafkaRetryTierKeepsOneTrace: a message published under a
// root span fails once, goes to the retry tier, is carried back by the
// Reinjector and succeeds. Its spans form one trace: root → send →
// process (attempt 0) and send → process (attempt 1), the second linking
// to the first.
func TestIntegrationKafkaRetryTierKeepsOneTrace(t *testing.T) {
	topic := brokertest.Topic(t, "otel")
	tiers := kafka.WithRetryTiers(500 * time.Millisecond)
	quiet := kafka.WithLogger(slog.New(slog.DiscardHandler))
	tr := kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "g")), tiers, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tr.EnsureTopics(ctx, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	runReinjector(t, topic, tiers, quiet, kafka.WithReinjectObserver(h.tel.ReinjectObserver()))

	app := babelqueue.NewApp(h.tel.Transport(tr), babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(3),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	log := newHandlerLog()
	app.Handle(testURN, h.tel.Middleware(log.failOnce))

	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, map[string]any{"order_id": 1042}); err != nil {
		t.Fatal(err)
	}
	root.End()
	consumeUntilCleanup(t, app, topic)

	select {
	case <-log.done:
	case <-ctx.Done():
		t.Fatalf("the retry never succeeded; attempts seen %v", log.attempts)
	}
	checkOneTrace(t, h, root.SpanContext(), topic, "kafka")

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.headers) != 2 || log.headers[0]["traceparent"] == "" || log.headers[1]["traceparent"] != log.headers[0]["traceparent"] {
		t.Errorf("traceparent not forwarded untouched through the tier and the Reinjector: %v", log.headers)
	}

	// The Reinjector's observer recorded the lag of the one record it
	// carried (after the write was acknowledged, so possibly just after
	// the handler saw it).
	lagOf := map[string]string{"messaging.system": "kafka", "messaging.destination.name": topic}
	deadline := time.Now().Add(10 * time.Second)
	n, sum := h.observations(t, MetricReinjectLag, lagOf)
	for n == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n, sum = h.observations(t, MetricReinjectLag, lagOf)
	}
	if n != 1 || sum < 0 || sum > 10 {
		t.Errorf("%s: %d observations summing %vs, want 1 between 0 and 10s", MetricReinjectLag, n, sum)
	}
}

// runReinjector runs a Reinjector for topic, on a transport of its own,
// until the end of the test.
func runReinjector(t *testing.T, topic string, opts ...kafka.Option) {
	t.Helper()
	reinjector, err := kafkaTransport(t, append([]kafka.Option{kafka.WithGroupID(brokertest.Topic(t, "reinject"))}, opts...)...).NewReinjector(topic)
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
}

// TestIntegrationKafkaRetryLinkCrossesProcesses: a first process (its own
// Telemetry and transport) fails a message, which goes through the retry
// tier and the Reinjector; a second process (another Telemetry, same
// group) handles the retry. Its span links to the failed attempt, known
// only from the babelqueue-retry-link header carried through the tier, and
// the W3C baggage travelled along.
func TestIntegrationKafkaRetryLinkCrossesProcesses(t *testing.T) {
	topic := brokertest.Topic(t, "otel-link")
	tiers := kafka.WithRetryTiers(3 * time.Second)
	quiet := kafka.WithLogger(slog.New(slog.DiscardHandler))
	group := brokertest.Topic(t, "g")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	trA, err := kafka.New(kafka.WithBrokers(brokertest.KafkaBrokers(t)...), kafka.WithGroupID(group), tiers, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = trA.Close() }) // closed below; a second Close does nothing
	if err := trA.EnsureTopics(ctx, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	runReinjector(t, topic, tiers, quiet)

	h := newHarness(t)
	second, err := New(WithTracerProvider(h.tp), WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	opts := []babelqueue.Option{babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(5),
		babelqueue.WithPollTimeout(200 * time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler))}

	// First process: fail the message, then stop.
	appA := babelqueue.NewApp(h.tel.Transport(trA), opts...)
	var failures atomic.Int32
	appA.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		failures.Add(1)
		return errors.New("projection store unavailable")
	}))
	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := appA.PublishWithHeaders(rootCtx, testURN, map[string]any{"order_id": 7}, map[string]string{"baggage": "tenant=7"}); err != nil {
		t.Fatal(err)
	}
	root.End()
	for failures.Load() == 0 && ctx.Err() == nil {
		if _, err := appA.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := trA.Close(); err != nil { // commits the failed record's offset
		t.Fatal(err)
	}
	failed := h.ended("process " + topic)
	if len(failed) == 0 {
		t.Fatal("the first process ended no process span")
	}
	last := failed[len(failed)-1]

	// Second process: handle the re-injected retry.
	trB := kafkaTransport(t, kafka.WithGroupID(group), tiers, quiet)
	appB := babelqueue.NewApp(second.Transport(trB), opts...)
	handled := make(chan map[string]string, 1)
	appB.Handle(testURN, second.Middleware(func(ctx context.Context, _ *babelqueue.Envelope) error {
		select {
		case handled <- babelqueue.HeadersFromContext(ctx):
		default:
		}
		return nil
	}))
	consumeUntilCleanup(t, appB, topic)
	var headers map[string]string
	select {
	case headers = <-handled:
	case <-ctx.Done():
		t.Fatal("the second process never handled the retry")
	}
	spans := waitSpans(t, h, "process "+topic, len(failed)+1, 30*time.Second)
	retried := spans[len(failed)]
	if !linkedTo(retried, last.SpanContext) {
		t.Errorf("the retry in the second process does not link to the failed attempt: links %v", retried.Links)
	}
	if retried.SpanContext.TraceID() != root.SpanContext().TraceID() {
		t.Errorf("the retry left the message's trace")
	}
	wantAttrs(t, retried, map[string]string{"babelqueue.outcome": OutcomeSuccess})
	if headers["baggage"] != "tenant=7" || headers[HeaderRetryLink] != formatLink(last.SpanContext) {
		t.Errorf("retried delivery headers %v: want the baggage and the retry link", headers)
	}
}

// TestIntegrationKafkaDeadLetterKeepsTraceAndIsTheError: a message that
// always fails is retried through the tier, then dead-lettered. Only the
// last attempt has an error status; the dead letter carries the original
// traceparent, so reading the dead-letter topic continues the same trace.
func TestIntegrationKafkaDeadLetterKeepsTraceAndIsTheError(t *testing.T) {
	topic := brokertest.Topic(t, "otel-dlq")
	tiers := kafka.WithRetryTiers(300 * time.Millisecond)
	quiet := kafka.WithLogger(slog.New(slog.DiscardHandler))
	group := brokertest.Topic(t, "g")
	tr := kafkaTransport(t, kafka.WithGroupID(group), tiers, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tr.EnsureTopics(ctx, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	runReinjector(t, topic, tiers, quiet)

	h := newHarness(t)
	decorated := h.tel.Transport(tr)
	app := babelqueue.NewApp(decorated, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	app.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error {
		return errors.New("invalid transition")
	}))
	rootCtx, root := h.tp.Tracer("test").Start(ctx, "checkout")
	if _, err := app.Publish(rootCtx, testURN, nil); err != nil {
		t.Fatal(err)
	}
	root.End()
	consumeUntilCleanup(t, app, topic)

	process := waitSpans(t, h, "process "+topic, 2, 30*time.Second)
	send := h.only(t, "send "+topic)
	if process[0].Status.Code != codes.Unset || process[1].Status.Code != codes.Error {
		t.Errorf("statuses %v, %v: want unset then error", process[0].Status, process[1].Status)
	}
	wantAttrs(t, process[1], map[string]string{"babelqueue.outcome": OutcomeDeadLettered, "babelqueue.reason": "failed", "babelqueue.attempt": "1"})
	if !linkedTo(process[1], process[0].SpanContext) {
		t.Errorf("last attempt does not link to the first")
	}
	if n := h.count(t, MetricDeadLettered, map[string]string{"messaging.system": "kafka", "babelqueue.reason": "failed"}); n != 1 {
		t.Errorf("dead_lettered = %d, want 1", n)
	}

	// Read the dead letter through the decorated transport (another group).
	reader := h.tel.Transport(kafkaTransport(t, kafka.WithGroupID(brokertest.Topic(t, "dlq-reader")), quiet))
	var msg *babelqueue.ReceivedMessage
	var err error
	for msg == nil && ctx.Err() == nil {
		if msg, err = reader.Pop(ctx, topic+".dlq", time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if msg == nil {
		t.Fatal("no dead letter")
	}
	if err := reader.Ack(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if got := msg.Headers["traceparent"]; got != formatLink(send.SpanContext) {
		t.Errorf("dead letter traceparent %q, want the original %q", got, formatLink(send.SpanContext))
	}
	dlqSpan := h.only(t, "process "+topic+".dlq")
	if dlqSpan.Parent.SpanID() != send.SpanContext.SpanID() || dlqSpan.SpanContext.TraceID() != root.SpanContext().TraceID() {
		t.Errorf("reading the dead letter does not continue the message's trace")
	}
}
