package otel

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/metric/noop"
)

// kafkaLog is an in-process stand-in for a Kafka cluster of one-partition
// topics, written through kafka.WithWriter and read through
// kafka.WithReaderFactory.
type kafkaLog struct {
	mu     sync.Mutex
	topics map[string][]kafkago.Message
	next   map[string]int // read position of each topic (one group)
}

func newKafkaLog() *kafkaLog {
	return &kafkaLog{topics: map[string][]kafkago.Message{}, next: map[string]int{}}
}

func (l *kafkaLog) WriteMessages(_ context.Context, msgs ...kafkago.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		m.Offset = int64(len(l.topics[m.Topic]))
		l.topics[m.Topic] = append(l.topics[m.Topic], m)
	}
	return nil
}

func (l *kafkaLog) records(topic string) []kafkago.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]kafkago.Message(nil), l.topics[topic]...)
}

// reinject does what a kafka.Reinjector does once the tier has elapsed:
// it writes every record of the retry topic back to its work topic
// without bq-delay and bq-original-topic.
func (l *kafkaLog) reinject(t *testing.T, retryTopic, workTopic string) {
	t.Helper()
	for _, m := range l.records(retryTopic) {
		var hs []kafkago.Header
		for _, h := range m.Headers {
			if h.Key != babelqueue.HeaderDelay && h.Key != babelqueue.HeaderOriginalTopic {
				hs = append(hs, h)
			}
		}
		if err := l.WriteMessages(context.Background(), kafkago.Message{Topic: workTopic, Key: m.Key, Value: m.Value, Headers: hs, Time: m.Time}); err != nil {
			t.Fatal(err)
		}
	}
}

func (l *kafkaLog) reader(topic string) kafka.Reader { return &kafkaLogReader{l: l, topic: topic} }

type kafkaLogReader struct {
	l     *kafkaLog
	topic string
}

func (r *kafkaLogReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	for {
		r.l.mu.Lock()
		if i := r.l.next[r.topic]; i < len(r.l.topics[r.topic]) {
			r.l.next[r.topic] = i + 1
			m := r.l.topics[r.topic][i]
			r.l.mu.Unlock()
			return m, nil
		}
		r.l.mu.Unlock()
		select {
		case <-ctx.Done():
			return kafkago.Message{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (r *kafkaLogReader) CommitMessages(context.Context, ...kafkago.Message) error { return nil }

func TestRetryLinkCrossesProcessesThroughKafkaTier(t *testing.T) {
	// Two Telemetry values stand for two processes sharing one exporter and
	// one Kafka cluster: the first fails the message, which goes to the
	// retry tier; the Reinjector carries it back and the second process
	// handles it, knowing the failed attempt only from the record headers.
	h := newHarness(t)
	second, err := New(WithTracerProvider(h.tp), WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	log := newKafkaLog()
	newTransport := func() *kafka.Transport {
		tr, err := kafka.New(kafka.WithWriter(log), kafka.WithReaderFactory(log.reader), kafka.WithGroupID("g"),
			kafka.WithRetryTiers(time.Second), kafka.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
	appA := newApp(h, newTransport(), babelqueue.WithMaxAttempts(3))
	appA.Handle(testURN, h.tel.Middleware(func(context.Context, *babelqueue.Envelope) error { return errors.New("fail") }))
	if _, err := appA.PublishWithHeaders(context.Background(), testURN, nil, map[string]string{"baggage": "tenant=7"}); err != nil {
		t.Fatal(err)
	}
	drain(t, appA)

	send, failed := h.only(t, "send orders"), h.only(t, "process orders")
	retry := log.records("orders.retry.1")
	if len(retry) != 1 {
		t.Fatalf("%d records on the retry tier, want 1", len(retry))
	}
	got := map[string]string{}
	for _, hd := range retry[0].Headers {
		got[hd.Key] = string(hd.Value)
	}
	for k, want := range map[string]string{HeaderRetryLink: formatLink(failed.SpanContext), "traceparent": formatLink(send.SpanContext), "baggage": "tenant=7"} {
		if got[k] != want {
			t.Errorf("retry-tier record %s = %q, want %q", k, got[k], want)
		}
	}

	log.reinject(t, "orders.retry.1", "orders")
	var seen map[string]string
	appB := babelqueue.NewApp(second.Transport(newTransport()), babelqueue.WithDefaultQueue("orders"),
		babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	appB.Handle(testURN, second.Middleware(func(ctx context.Context, _ *babelqueue.Envelope) error {
		seen = babelqueue.HeadersFromContext(ctx)
		return nil
	}))
	drain(t, appB)
	spans := h.ended("process orders")
	if len(spans) != 2 {
		t.Fatalf("%d process spans, want 2", len(spans))
	}
	if !linkedTo(spans[1], failed.SpanContext) {
		t.Errorf("retry in another process does not link to the failed attempt: links %v", spans[1].Links)
	}
	if spans[1].Parent.SpanID() != send.SpanContext.SpanID() || spans[1].SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("retry span parent %v, want the producer span %v", spans[1].Parent.SpanID(), send.SpanContext.SpanID())
	}
	wantAttrs(t, spans[1], map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": OutcomeSuccess})
	if seen["baggage"] != "tenant=7" {
		t.Errorf("the retried delivery's baggage = %q, want tenant=7", seen["baggage"])
	}
}
