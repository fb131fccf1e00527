package kafka

// Fast end-to-end tests through the real Transport, the core App and the
// Reinjector against the embedded Kafka-protocol broker of brokertest/devkafka
// (kfake, in process, on 127.0.0.1). kfake is a fake: LogAppendTime and
// rebalances are left to the real-broker tests (build tag integration).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/brokertest/devkafka"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// embBroker starts an embedded broker closed at cleanup.
func embBroker(t *testing.T) []string {
	t.Helper()
	b, err := devkafka.Start()
	if err != nil {
		t.Fatalf("devkafka.Start: %v", err)
	}
	t.Cleanup(b.Close)
	return b.Addrs()
}

// embTransport builds a transport on the embedded broker, closed at cleanup
// (a second Close after an explicit one is harmless).
func embTransport(t *testing.T, addrs []string, opts ...Option) *Transport {
	t.Helper()
	tr, err := New(append([]Option{WithBrokers(addrs...), WithMaxWaitTime(500 * time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// embCtx returns a context cancelled after d or at cleanup.
func embCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// embPop pops queue until a message arrives or d elapses (nil then).
func embPop(t *testing.T, tr *Transport, queue string, d time.Duration) *babelqueue.ReceivedMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		m, err := tr.Pop(ctx, queue, 500*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			t.Fatalf("Pop(%s): %v", queue, err)
		}
		if m != nil {
			return m
		}
	}
	return nil
}

// embProduce writes msgs with a plain kafka-go writer, as a foreign
// producer would.
func embProduce(t *testing.T, addrs []string, msgs ...kafkago.Message) {
	t.Helper()
	w := &kafkago.Writer{Addr: kafkago.TCP(addrs...), BatchTimeout: time.Millisecond,
		RequiredAcks: kafkago.RequireAll, AllowAutoTopicCreation: true}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range msgs {
		if msgs[i].Time.IsZero() {
			msgs[i].Time = time.Now()
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
}

// embRead reads partition 0 of topic (devkafka topics have one partition)
// from the start, without a group, until want records arrived or within
// elapsed, then for settle more to catch unexpected extras.
func embRead(t *testing.T, addrs []string, topic string, want int, within, settle time.Duration) []kafkago.Message {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: addrs, Topic: topic, Partition: 0, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var got []kafkago.Message
	for len(got) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return got
		}
		got = append(got, m)
	}
	sctx, scancel := context.WithTimeout(context.Background(), settle)
	defer scancel()
	for {
		m, err := r.ReadMessage(sctx)
		if err != nil {
			return got
		}
		got = append(got, m)
	}
}

func TestEmbeddedPublishPopProjection(t *testing.T) {
	addrs := embBroker(t)
	const topic = "emb-proj"
	tr := embTransport(t, addrs, WithGroupID("g-proj"))
	ctx := embCtx(t, 10*time.Second)
	body := envelope(t, 0)
	if err := tr.PublishWithHeaders(ctx, topic, body, map[string]string{"traceparent": "00-aa-bb-01"}); err != nil {
		t.Fatalf("PublishWithHeaders: %v", err)
	}
	m := embPop(t, tr, topic, 8*time.Second)
	if m == nil {
		t.Fatal("nothing delivered")
	}
	if m.Body != body || m.Queue != topic {
		t.Fatalf("delivered %q from %q, want %q from %q", m.Body, m.Queue, body, topic)
	}
	want := map[string]string{"bq-job": "urn:babel:orders:created", "bq-trace-id": "trace-1", "bq-message-id": "id-1",
		"bq-schema-version": "1", "bq-source-lang": "go", "bq-attempts": "0", "traceparent": "00-aa-bb-01"}
	if diff := cmp.Diff(want, m.Headers); diff != "" {
		t.Fatalf("delivered headers (-want +got):\n%s", diff)
	}
	d, ok := recordOf(m)
	if !ok {
		t.Fatal("delivery carries no record")
	}
	if diff := cmp.Diff(append(contractHeaders("0"), h("traceparent", "00-aa-bb-01")), d.msg.Headers); diff != "" {
		t.Fatalf("record headers (-want +got):\n%s", diff)
	}
	if d.msg.Key != nil {
		t.Fatalf("unkeyed publish has key %q", d.msg.Key)
	}
	if err := tr.Ack(ctx, m); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

func TestEmbeddedProcessThenCommit(t *testing.T) {
	addrs := embBroker(t)
	const topic, group = "emb-commit", "g-commit"
	pub := embTransport(t, addrs)
	ctx := embCtx(t, 30*time.Second)
	body := envelope(t, 0)
	if err := pub.Publish(ctx, topic, body); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	first := embTransport(t, addrs, WithGroupID(group))
	m := embPop(t, first, topic, 8*time.Second)
	if m == nil {
		t.Fatal("nothing delivered")
	}
	if err := first.Close(); err != nil { // closed before Ack
		t.Fatalf("Close: %v", err)
	}

	second := embTransport(t, addrs, WithGroupID(group))
	again := embPop(t, second, topic, 8*time.Second)
	if again == nil || again.Body != body {
		t.Fatalf("not delivered again after a close without Ack: %v", again)
	}
	if err := second.Ack(ctx, again); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := second.Close(); err != nil { // flushes the batched commit
		t.Fatalf("Close: %v", err)
	}

	third := embTransport(t, addrs, WithGroupID(group))
	if m := embPop(t, third, topic, 2*time.Second); m != nil {
		t.Fatalf("acknowledged record delivered again: %q", m.Body)
	}
	// The group's committed offset is past the record.
	client := &kafkago.Client{Addr: kafkago.TCP(addrs...), Timeout: 5 * time.Second}
	resp, err := client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0}}})
	if err != nil || resp.Error != nil {
		t.Fatalf("OffsetFetch: %v %v", err, resp)
	}
	if ps := resp.Topics[topic]; len(ps) != 1 || ps[0].CommittedOffset != 1 {
		t.Fatalf("committed offsets %+v, want partition 0 at 1", ps)
	}
}

func TestEmbeddedAppRetryWithoutTiersThenDeadLetter(t *testing.T) {
	addrs := embBroker(t)
	const topic = "emb-app"
	tr := embTransport(t, addrs, WithGroupID("g-app"))

	var mu sync.Mutex
	var attempts []int
	app, err := babelqueue.NewApp(tr, babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(2),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithOnError(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:babel:orders:created", func(_ context.Context, env *babelqueue.Envelope) error {
		mu.Lock()
		attempts = append(attempts, env.Attempts)
		mu.Unlock()
		return errors.New("payment service down")
	})

	key := []byte{0x00, 0xfe, 'k', 0x80, 0x00}
	body := envelope(t, 0)
	hs, _ := projection(body, time.Now())
	embProduce(t, addrs, kafkago.Message{Topic: topic, Key: key, Value: []byte(body), Headers: toKafkaHeaders(hs)})
	bqtest.RunUntilCleanup(t, "Consume", 10*time.Second, func(ctx context.Context) error { return app.Consume(ctx, topic) })

	dlq := embRead(t, addrs, topic+".dlq", 1, 10*time.Second, 300*time.Millisecond)
	if len(dlq) != 1 {
		t.Fatalf("dead-letter topic holds %d records, want 1", len(dlq))
	}
	dead := dlq[0]
	if !cmp.Equal(dead.Key, key) {
		t.Fatalf("dead letter key %x, want %x", dead.Key, key)
	}
	if v, _ := lastHeader(dead.Headers, "bq-attempts"); v != "2" {
		t.Fatalf("dead letter bq-attempts %q, want 2", v)
	}
	dl, ok := wire.DeadLetterOf(dead.Value)
	if !ok || dl.Reason != wire.ReasonFailed || dl.Attempts != 2 || dl.OriginalQueue != topic || dl.Lang != "go" {
		t.Fatalf("dead_letter %+v (found %v) in %s", dl, ok, dead.Value)
	}

	// Without tiers the retry is a republish to the work topic: attempts 1
	// in the body and the header, the key kept byte for byte.
	work := embRead(t, addrs, topic, 2, 5*time.Second, 200*time.Millisecond)
	if len(work) != 2 {
		t.Fatalf("work topic holds %d records, want the original and one retry", len(work))
	}
	retry := work[1]
	if !cmp.Equal(retry.Key, key) {
		t.Fatalf("retry key %x, want %x", retry.Key, key)
	}
	if string(retry.Value) != envelope(t, 1) {
		t.Fatalf("retry body %s, want %s", retry.Value, envelope(t, 1))
	}
	if v, _ := lastHeader(retry.Headers, "bq-attempts"); v != "1" {
		t.Fatalf("retry bq-attempts %q, want 1", v)
	}
	for _, k := range []string{"bq-delay", "bq-original-topic"} {
		if _, ok := lastHeader(retry.Headers, k); ok {
			t.Fatalf("retry without tiers carries %s", k)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]int{0, 1}, attempts); diff != "" {
		t.Fatalf("handler attempts (-want +got):\n%s", diff)
	}
}

func TestEmbeddedRetryTierAndReinjector(t *testing.T) {
	addrs := embBroker(t)
	const topic = "emb-tier"
	tiers := WithRetryTiers(200*time.Millisecond, 400*time.Millisecond)
	tr := embTransport(t, addrs, WithGroupID("g-tier"), tiers)
	ctx := embCtx(t, 30*time.Second)

	key := []byte{0xde, 0xad, 0x00, 0xbe, 0xef}
	body := envelope(t, 0)
	hs, _ := projection(body, time.Now())
	embProduce(t, addrs, kafkago.Message{Topic: topic, Key: key, Value: []byte(body),
		Headers: append(toKafkaHeaders(hs), h("traceparent", "00-tp-01"), h("x-other", "kept on retry"))})

	m := embPop(t, tr, topic, 8*time.Second)
	if m == nil {
		t.Fatal("nothing delivered")
	}
	start := time.Now()
	if err := tr.PublishRetryForAttempt(ctx, m, 0); err != nil {
		t.Fatalf("PublishRetryForAttempt: %v", err)
	}
	if err := tr.Ack(ctx, m); err != nil {
		t.Fatalf("Ack: %v", err)
	}

	tier := embRead(t, addrs, RetryTopic(topic, 1), 1, 5*time.Second, 0)
	if len(tier) != 1 {
		t.Fatalf("%s holds %d records, want 1", RetryTopic(topic, 1), len(tier))
	}
	rec := tier[0]
	if !cmp.Equal(rec.Key, key) || string(rec.Value) != envelope(t, 1) {
		t.Fatalf("tier record key %x body %s", rec.Key, rec.Value)
	}
	want := append(contractHeaders("1"), h("bq-delay", "200"), h("bq-original-topic", topic), h("traceparent", "00-tp-01"),
		h("x-other", "kept on retry"))
	if diff := cmp.Diff(want, rec.Headers); diff != "" {
		t.Fatalf("tier record headers (-want +got):\n%s", diff)
	}

	// The Reinjector carries it back to the work topic once the tier has
	// elapsed, without the two routing headers.
	rt := embTransport(t, addrs, WithGroupID("g-reinject"), tiers)
	r, err := rt.NewReinjector(topic)
	if err != nil {
		t.Fatalf("NewReinjector: %v", err)
	}
	bqtest.RunUntilCleanup(t, "Reinjector.Run", 10*time.Second, r.Run)

	back := embPop(t, tr, topic, 10*time.Second)
	if back == nil {
		t.Fatal("retry never re-injected")
	}
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("re-injected %v after the retry write, before its 200ms tier", waited)
	}
	if back.Body != envelope(t, 1) || back.Headers["bq-attempts"] != "1" {
		t.Fatalf("re-injected body %s headers %v", back.Body, back.Headers)
	}
	d, _ := recordOf(back)
	if !cmp.Equal(d.msg.Key, key) {
		t.Fatalf("re-injected key %x, want %x", d.msg.Key, key)
	}
	if diff := cmp.Diff(append(contractHeaders("1"), h("traceparent", "00-tp-01"), h("x-other", "kept on retry")), d.msg.Headers); diff != "" {
		t.Fatalf("re-injected headers (-want +got):\n%s", diff)
	}
	if err := tr.Ack(ctx, back); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}
