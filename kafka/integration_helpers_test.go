//go:build integration

package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest"
	"github.com/babelqueue/babelqueue-go/brokertest/kafkaread"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// brokerList returns the PLAINTEXT listener of the real broker (from
// BQ_KAFKA_BROKERS): a missing variable skips the test, or fails it under CI.
func brokerList(t testing.TB) []string { return brokertest.KafkaBrokers(t) }

func uniq(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// itTransport builds a transport on the real broker, closed at cleanup.
func itTransport(t testing.TB, opts ...Option) *Transport {
	t.Helper()
	tr, err := New(append([]Option{WithBrokers(brokerList(t)...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// ensure creates topic (partitions), its retry tiers and its DLQ.
// itApp creates topic with the given partitions on tr's broker and returns
// an App on tr whose default queue is topic.
func itApp(t testing.TB, tr *Transport, topic string, partitions int) *babelqueue.App {
	t.Helper()
	ensure(t, tr, topic, partitions)
	app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// startReinjector starts tr's re-injector of topic under ctx. The returned
// stop cancels it, waits for Run to return and fails the test when Run
// returned an error.
func startReinjector(t testing.TB, ctx context.Context, tr *Transport, topic string) (stop func()) {
	t.Helper()
	r, err := tr.NewReinjector(topic)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Reinjector.Run: %v", err)
		}
	}
}

func ensure(t testing.TB, tr *Transport, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.EnsureTopics(ctx, topic, partitions, 1); err != nil {
		t.Fatal(err)
	}
}

// readTopic reads every partition of topic from the start, without a
// group, until want records arrived (then it waits settle more for
// unexpected extras) or within elapsed. Records come sorted by partition
// then offset.
func readTopic(t testing.TB, topic string, want int, within, settle time.Duration) []kafkago.Message {
	t.Helper()
	got := kafkaread.All(t, brokerList(t), topic, want, within, settle)
	return got
}

// produceRaw writes records with a plain kafka-go writer (a foreign
// producer), each with its key, value and headers as given.
func produceRaw(t testing.TB, msgs ...kafkago.Message) {
	t.Helper()
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafkago.Writer{Addr: kafkago.TCP(brokerList(t)...), Balancer: &Murmur2Balancer{}, BatchTimeout: time.Millisecond,
		RequiredAcks: kafkago.RequireAll, Transport: tr, AllowAutoTopicCreation: true}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range msgs {
		if msgs[i].Time.IsZero() {
			// kafka-go writes a zero time as timestamp 0, which time-based
			// retention deletes at once.
			msgs[i].Time = time.Now()
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// popWithin pops queue until a message arrives or d elapses.
func popWithin(t testing.TB, tr *Transport, queue string, d time.Duration) *babelqueue.ReceivedMessage {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		m, err := tr.Pop(context.Background(), queue, time.Second)
		if err != nil {
			t.Fatalf("Pop: %v", err)
		}
		if m != nil {
			return m
		}
	}
	return nil
}

// adminClient returns a client with its own connections (and so its own
// metadata cache, which a shared transport may hold stale).
func adminClient(t testing.TB) *kafkago.Client {
	tr := &kafkago.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &kafkago.Client{Addr: kafkago.TCP(brokerList(t)...), Transport: tr}
}
