package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

type rig struct {
	t       *testing.T
	log     *fakeLog
	offsets *fakeOffsets
	writer  *fakeWriter
	clock   *bqtest.FakeClock
	tr      *Transport
	readers []*fakeReader
}

func newRig(t *testing.T, opts ...Option) *rig {
	t.Helper()
	rg := &rig{t: t, log: newFakeLog(), offsets: newFakeOffsets(), clock: bqtest.NewFakeClock(t0)}
	rg.writer = &fakeWriter{log: rg.log}
	rg.log.create("orders", 3)
	base := []Option{WithWriter(rg.writer), WithClock(rg.clock), WithReaderFactory(func(q string) Reader {
		r := newFakeReader(rg.log, rg.offsets, q)
		rg.readers = append(rg.readers, r)
		return r
	})}
	tr, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rg.tr = tr
	t.Cleanup(func() { _ = tr.Close() })
	return rg
}

// createdMs is the created_at of the test envelopes: recent, because a
// record's timestamp is its created_at and a broker's time-based retention
// deletes records stamped long ago.
var createdMs = time.Now().Add(-time.Minute).UnixMilli()

func envelope(t *testing.T, attempts int) string {
	t.Helper()
	env, err := babelqueue.Make("urn:babel:orders:created", map[string]any{"order_id": 1042},
		babelqueue.WithQueue("orders"), babelqueue.WithTraceID("trace-1"), babelqueue.WithID("id-1"),
		babelqueue.WithCreatedAt(time.UnixMilli(createdMs)))
	if err != nil {
		t.Fatal(err)
	}
	env.Attempts = attempts
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contractHeaders(attempts string) []kafkago.Header {
	return []kafkago.Header{
		h("bq-job", "urn:babel:orders:created"), h("bq-trace-id", "trace-1"), h("bq-message-id", "id-1"),
		h("bq-schema-version", "1"), h("bq-source-lang", "go"), h("bq-attempts", attempts),
	}
}

func (rg *rig) pop(queue string) *babelqueue.ReceivedMessage {
	rg.t.Helper()
	m, err := rg.tr.Pop(context.Background(), queue, time.Second)
	if err != nil || m == nil {
		rg.t.Fatalf("Pop(%s) = %v, %v", queue, m, err)
	}
	return m
}

func TestPublishProjectsHeadersAndTimestamp(t *testing.T) {
	rg := newRig(t)
	body := envelope(t, 0)
	if err := rg.tr.Publish(context.Background(), "orders", body); err != nil {
		t.Fatal(err)
	}
	got := rg.log.records("orders")
	if len(got) != 1 {
		t.Fatalf("%d records", len(got))
	}
	m := got[0]
	if string(m.Value) != body || m.Key != nil {
		t.Fatalf("value %q key %q", m.Value, m.Key)
	}
	if diff := cmp.Diff(contractHeaders("0"), m.Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	if !m.Time.Equal(time.UnixMilli(createdMs)) {
		t.Fatalf("timestamp %v, want created_at", m.Time)
	}
}

func TestPublishWithHeadersRules(t *testing.T) {
	rg := newRig(t)
	err := rg.tr.PublishWithHeaders(context.Background(), "orders", envelope(t, 0), map[string]string{
		"traceparent": "00-t-s-01", "bq-job": "urn:evil", "zeta": "z", "alpha": "a", " ": "blank key",
		"empty": " ", "bq-delay": "1", "bq-original-topic": "x", "bq-replay-bypass": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := append(contractHeaders("0"), h("alpha", "a"), h("bq-replay-bypass", "1"), h("traceparent", "00-t-s-01"), h("zeta", "z"))
	if diff := cmp.Diff(want, rg.log.records("orders")[0].Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
}

func TestPublishBatchAndErrors(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	if err := rg.tr.PublishBatch(ctx, "orders", envelope(t, 0), envelope(t, 1), "raw"); err != nil {
		t.Fatal(err)
	}
	if n := len(rg.log.records("orders")); n != 3 {
		t.Fatalf("%d records", n)
	}
	for _, q := range []string{"", "  "} {
		if err := rg.tr.Publish(ctx, q, "x"); !errors.Is(err, ErrEmptyTopic) || !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Fatalf("Publish to %q: %v", q, err)
		}
	}
	rg.writer.setFail(func(msgs []kafkago.Message) error { return kafkago.MessageTooLargeError{Message: msgs[0]} })
	if err := rg.tr.Publish(ctx, "orders", "x"); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	rg.writer.setFail(func([]kafkago.Message) error { return kafkago.WriteErrors{nil, kafkago.MessageSizeTooLarge} })
	if err := rg.tr.PublishBatch(ctx, "orders", "a", "b"); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("batch too large: %v", err)
	}
}

// A real kafka-go writer rejects an oversized record before any network
// call, so this needs no broker.
func TestRecordLargerThanBatchBytesIsRejected(t *testing.T) {
	tr, err := New(WithBrokers("127.0.0.1:1"), WithBatchBytes(64))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = tr.Publish(ctx, "orders", strings.Repeat("x", 200))
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		want error
	}{
		{"no brokers", nil, ErrNoBrokers},
		{"blank broker", []Option{WithBrokers("")}, babelqueue.ErrInvalidOption},
		{"blank group", []Option{WithBrokers("b:9092"), WithGroupID(" ")}, babelqueue.ErrInvalidOption},
		{"tiers not ascending", []Option{WithBrokers("b:9092"), WithRetryTiers(5*time.Second, time.Second)}, babelqueue.ErrInvalidOption},
		{"tiers repeated", []Option{WithBrokers("b:9092"), WithRetryTiers(time.Second, time.Second)}, babelqueue.ErrInvalidOption},
		{"tier zero", []Option{WithBrokers("b:9092"), WithRetryTiers(0)}, babelqueue.ErrInvalidOption},
		{"tier negative", []Option{WithBrokers("b:9092"), WithRetryTiers(-time.Second)}, babelqueue.ErrInvalidOption},
		{"tier sub-millisecond", []Option{WithBrokers("b:9092"), WithRetryTiers(time.Microsecond)}, babelqueue.ErrInvalidOption},
		{"acks none", []Option{WithBrokers("b:9092"), WithRequiredAcks(kafkago.RequireNone)}, babelqueue.ErrInvalidOption},
		{"linger", []Option{WithBrokers("b:9092"), WithLinger(0)}, babelqueue.ErrInvalidOption},
		{"scram algo", []Option{WithBrokers("b:9092"), WithSASLSCRAM(0, "u", "p")}, babelqueue.ErrInvalidOption},
		{"plain user", []Option{WithBrokers("b:9092"), WithSASLPlain("", "p")}, babelqueue.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := New(c.opts...)
			if !errors.Is(err, c.want) || tr != nil {
				t.Fatalf("New = %v, %v; want %v", tr, err, c.want)
			}
		})
	}
	tr, err := New(WithBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Pop(context.Background(), "orders", time.Millisecond); !errors.Is(err, ErrNoGroupID) {
		t.Fatalf("Pop without group: %v", err)
	}
	if err := tr.EnsureTopics(context.Background(), "orders", 0, 1); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("EnsureTopics with 0 partitions: %v", err)
	}
	if _, err := New(WithBrokers("b:9092"), WithSASLSCRAM(SCRAMSHA512, "u", "p"), WithTLS(nil)); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("nil TLS: %v", err)
	}
}

func TestPopHeaderAttemptsAreAuthoritative(t *testing.T) {
	cases := []struct {
		name      string
		body      int
		header    *string
		wantBody  int
		unchanged bool
	}{
		{"absent header keeps body", 2, nil, 2, true},
		{"higher header rewrites", 0, ptr("3"), 3, false},
		{"lower header rewrites", 5, ptr("1"), 1, false},
		{"equal header keeps bytes", 4, ptr("4"), 4, true},
		{"invalid header ignored", 2, ptr(" 7"), 2, true},
		{"signed header ignored", 2, ptr("+7"), 2, true},
		{"out of range ignored", 2, ptr("2147483648"), 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t)
			body := envelope(t, c.body)
			var hs []kafkago.Header
			if c.header != nil {
				hs = []kafkago.Header{h("bq-attempts", *c.header)}
			}
			rg.log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: hs})
			m := rg.pop("orders")
			if c.unchanged && m.Body != body {
				t.Fatalf("body rewritten:\n%s\n%s", body, m.Body)
			}
			if want := envelope(t, c.wantBody); m.Body != want {
				t.Fatalf("body\n got %s\nwant %s", m.Body, want)
			}
			if m.Queue != "orders" {
				t.Fatalf("queue %q", m.Queue)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestPopLeavesPoisonAndVersionGatedBodiesUntouched(t *testing.T) {
	var hooked []string
	rg := newRig(t, WithOnSchemaVersionRejected(func(v, q string) {
		hooked = append(hooked, v+"@"+q)
		panic("hook panics are swallowed")
	}))
	poison := "not json"
	gated := envelope(t, 0)
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(poison), Headers: []kafkago.Header{h("bq-attempts", "2")}})
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(gated), Headers: []kafkago.Header{h("bq-schema-version", "2"), h("bq-attempts", "5")}})
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(gated), Headers: []kafkago.Header{h("bq-schema-version", " "), h("bq-attempts", "5")}})
	if m := rg.pop("orders"); m.Body != poison {
		t.Fatalf("poison body changed: %q", m.Body)
	}
	m := rg.pop("orders")
	if m.Body != gated || m.Headers["bq-schema-version"] != "2" {
		t.Fatalf("gated record changed: %q %v", m.Body, m.Headers)
	}
	if diff := cmp.Diff([]string{"2@orders"}, hooked); diff != "" {
		t.Fatalf("hook calls (-want +got):\n%s", diff)
	}
	if m := rg.pop("orders"); m.Body != envelope(t, 5) {
		t.Fatalf("blank version header must not gate: %q", m.Body)
	}
}

func TestPopTimeoutAndContext(t *testing.T) {
	rg := newRig(t, WithMaxWaitTime(20*time.Millisecond))
	start := time.Now()
	m, err := rg.tr.Pop(context.Background(), "orders", time.Hour)
	if m != nil || err != nil {
		t.Fatalf("empty Pop = %v, %v", m, err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("Pop ignored WithMaxWaitTime")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rg.tr.Pop(ctx, "orders", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Pop: %v", err)
	}
	if _, err := rg.tr.Pop(context.Background(), " ", time.Second); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("blank queue: %v", err)
	}
}

func TestAckCommitsAndRewindRedelivers(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	for _, v := range []string{"a", "b", "c"} {
		rg.log.append("orders", 0, kafkago.Message{Value: []byte(v)})
	}
	a := rg.pop("orders")
	if err := rg.tr.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := rg.offsets.get("orders", 0); got != 1 {
		t.Fatalf("committed %d after acking a", got)
	}
	b := rg.pop("orders")
	_ = rg.pop("orders") // c fetched, never acknowledged
	if err := rg.tr.Rewind(ctx, b); err != nil {
		t.Fatal(err)
	}
	if !rg.readers[0].closed {
		t.Fatal("Rewind left the reader open")
	}
	if err := rg.tr.Ack(ctx, b); err == nil {
		t.Fatal("Ack through a rewound reader succeeded")
	}
	if got := rg.offsets.get("orders", 0); got != 1 {
		t.Fatalf("committed %d after rewinding b", got)
	}
	again := rg.pop("orders")
	if again.Body != "b" || len(rg.readers) != 2 {
		t.Fatalf("after Rewind got %q with %d readers", again.Body, len(rg.readers))
	}
	if err := rg.tr.Rewind(ctx, b); err != nil { // a second Rewind of a dropped reader is a no-op
		t.Fatal(err)
	}
	if rg.readers[1].closed {
		t.Fatal("a stale Rewind closed the new reader")
	}
}

func TestCloseRules(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	rg.log.append("orders", 0, kafkago.Message{Value: []byte("a")})
	m := rg.pop("orders")
	if err := rg.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !rg.readers[0].closed {
		t.Fatal("Close left a reader open")
	}
	if err := rg.tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Pop":     func() error { _, err := rg.tr.Pop(ctx, "orders", time.Millisecond); return err }(),
		"Ack":     rg.tr.Ack(ctx, m),
		"Publish": rg.tr.Publish(ctx, "orders", "x"),
	} {
		if !errors.Is(err, ErrClosed) || !errors.Is(err, babelqueue.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if len(rg.readers) != 1 {
		t.Fatal("Pop after Close opened a reader")
	}
	// The injected writer belongs to the caller and still works.
	if err := rg.writer.WriteMessages(ctx, kafkago.Message{Topic: "orders"}); err != nil {
		t.Fatal(err)
	}
}

// forward is Send of IntentForward.
func forward(tr *Transport, ctx context.Context, queue, body string, from *babelqueue.ReceivedMessage, headers map[string]string) error {
	_, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: queue, Body: body, From: from, Headers: headers})
	return err
}

func TestSendForwardWritesExactlyWhatIsPassed(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	orig := []kafkago.Header{h("bq-schema-version", "2"), h("bq-job", "urn:x"), h("x", "1")}
	rg.log.append("orders", 0, kafkago.Message{Key: []byte{0, 1}, Value: []byte("gated \xff"), Headers: orig})
	m := rg.pop("orders")
	// Unchanged record: original header order, value and key.
	if err := forward(rg.tr, ctx, "orders.dlq", m.Body, m, m.Headers); err != nil {
		t.Fatal(err)
	}
	// Other headers: exactly those passed, in key order, nothing projected.
	if err := forward(rg.tr, ctx, "orders.dlq", envelope(t, 0), m, map[string]string{"b": "2", "a": "1", " ": "x"}); err != nil {
		t.Fatal(err)
	}
	got := rg.log.records("orders.dlq")
	if diff := cmp.Diff(orig, got[0].Headers); diff != "" {
		t.Fatalf("forwarded headers (-want +got):\n%s", diff)
	}
	if string(got[0].Value) != "gated \xff" || !cmp.Equal(got[0].Key, []byte{0, 1}) {
		t.Fatalf("forwarded %q key %v", got[0].Value, got[0].Key)
	}
	if diff := cmp.Diff([]kafkago.Header{h("a", "1"), h("b", "2")}, got[1].Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	if !cmp.Equal(got[1].Key, []byte{0, 1}) {
		t.Fatal("key lost")
	}
}

func TestRetryForAttemptRecord(t *testing.T) {
	rg := newRig(t, WithRetryTiers(5*time.Second, 30*time.Second, 5*time.Minute))
	ctx := context.Background()
	key := []byte("k\x00")
	in := append(contractHeaders("1"), h("traceparent", "00-a-b-01"), h("tracestate", "s=1"), h("x-private", "kept"),
		h("bq-replay-bypass", "1"), h("babelqueue-retry-link", "00-old-link-01"), h("baggage", "tenant=7"), h("bq-delay", "1"))
	rg.log.append("orders", 0, kafkago.Message{Key: key, Value: []byte(envelope(t, 1)), Headers: in})
	m := rg.pop("orders")
	for _, c := range []struct {
		before int
		topic  string
		delay  string
	}{{1, "orders.retry.2", "30000"}, {0, "orders.retry.1", "5000"}, {9, "orders.retry.3", "300000"}} {
		if err := rg.tr.PublishRetryForAttempt(ctx, m, c.before); err != nil {
			t.Fatal(err)
		}
		got := rg.log.records(c.topic)
		if len(got) != 1 {
			t.Fatalf("%s holds %d records", c.topic, len(got))
		}
		r := got[0]
		// The contract projection, the tier headers, then every out-of-band
		// header of the delivery in key order (a contract header such as
		// the incoming bq-delay is not carried over).
		want := append(contractHeaders(strconv.Itoa(c.before+1)), h("bq-delay", c.delay), h("bq-original-topic", "orders"),
			h("babelqueue-retry-link", "00-old-link-01"), h("baggage", "tenant=7"), h("bq-replay-bypass", "1"),
			h("traceparent", "00-a-b-01"), h("tracestate", "s=1"), h("x-private", "kept"))
		if diff := cmp.Diff(want, r.Headers); diff != "" {
			t.Fatalf("attempts before %d: headers (-want +got):\n%s", c.before, diff)
		}
		if string(r.Value) != envelope(t, c.before+1) || !cmp.Equal(r.Key, key) || !r.Time.Equal(t0) {
			t.Fatalf("record %q key %q time %v", r.Value, r.Key, r.Time)
		}
	}
	// A decorator hands on a copy of the delivery whose headers carry a new
	// retry link (the otel module does): the copy's headers win over the
	// record's; a blank one is not written.
	cp := *m
	cp.Headers = maps.Clone(m.Headers)
	cp.Headers["babelqueue-retry-link"] = "00-new-link-01"
	cp.Headers["baggage"] = " "
	if err := rg.tr.PublishRetryForAttempt(ctx, &cp, 0); err != nil {
		t.Fatal(err)
	}
	got := rg.log.records("orders.retry.1")
	want := append(contractHeaders("1"), h("bq-delay", "5000"), h("bq-original-topic", "orders"),
		h("babelqueue-retry-link", "00-new-link-01"), h("bq-replay-bypass", "1"), h("traceparent", "00-a-b-01"), h("tracestate", "s=1"),
		h("x-private", "kept"))
	if diff := cmp.Diff(want, got[len(got)-1].Headers); diff != "" {
		t.Fatalf("decorated delivery: headers (-want +got):\n%s", diff)
	}
	none := newRig(t)
	err := none.tr.PublishRetryForAttempt(ctx, m, 0)
	if !errors.Is(err, ErrDelayUnsupported) || !errors.Is(err, babelqueue.ErrDelayUnsupported) {
		t.Fatalf("without tiers: %v", err)
	}
}

func TestDelayedPublishAndDeprecatedRetry(t *testing.T) {
	rg := newRig(t, WithRetryTiers(5*time.Second, 30*time.Second))
	ctx := context.Background()
	if err := rg.tr.PublishDelayed(ctx, "orders", envelope(t, 0), 6*time.Second); err != nil {
		t.Fatal(err)
	}
	got := rg.log.records("orders.retry.2")
	want := append(contractHeaders("0"), h("bq-delay", "30000"), h("bq-original-topic", "orders"))
	if len(got) != 1 || !cmp.Equal(want, got[0].Headers) {
		t.Fatalf("delayed record %+v", got)
	}
	if err := rg.tr.PublishDelayed(ctx, "orders", "x", 31*time.Second); !errors.Is(err, ErrDelayUnsupported) {
		t.Fatalf("delay beyond the last tier: %v", err)
	}
	if err := rg.tr.PublishDelayed(ctx, "orders", "now", 0); err != nil {
		t.Fatal(err)
	}
	if n := len(rg.log.records("orders")); n != 1 {
		t.Fatalf("zero delay wrote %d records to the work topic", n)
	}
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(envelope(t, 2))})
	m := rg.pop("orders")
	if m.Body == "now" {
		m = rg.pop("orders")
	}
	if err := rg.tr.PublishRetry(ctx, m, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	r := rg.log.records("orders.retry.1")[0]
	if v, _ := lastHeader(r.Headers, "bq-delay"); v != "2000" {
		t.Fatalf("deprecated PublishRetry bq-delay %q, want the delay", v)
	}
	if v, _ := lastHeader(r.Headers, "bq-attempts"); v != "3" || string(r.Value) != envelope(t, 3) {
		t.Fatalf("deprecated PublishRetry attempts %q body %s", v, r.Value)
	}
	if err := rg.tr.PublishRetry(ctx, m, time.Hour); !errors.Is(err, ErrDelayUnsupported) {
		t.Fatalf("PublishRetry beyond the tiers: %v", err)
	}
}

func TestPublishFromModes(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	in := []kafkago.Header{h("bq-job", "urn:route"), h("traceparent", "00-a-b-01"), h("x", "1")}
	rg.log.append("orders", 0, kafkago.Message{Key: []byte("k"), Value: []byte("poison"), Headers: in})
	m := rg.pop("orders")
	// Restore: same topic, same body.
	if err := rg.tr.PublishFrom(ctx, "orders", m.Body, m); err != nil {
		t.Fatal(err)
	}
	// Republish onto the own topic: projection (none for poison), bq-job
	// kept, trace forwarded, key kept.
	if err := rg.tr.PublishFrom(ctx, "orders", "poison2", m); err != nil {
		t.Fatal(err)
	}
	// Another topic: no trace, key kept.
	if err := rg.tr.PublishFrom(ctx, "orders.dlq", envelope(t, 3), m); err != nil {
		t.Fatal(err)
	}
	// With headers.
	if err := rg.tr.PublishFromWithHeaders(ctx, "orders.dlq", "p", m, map[string]string{"bq-replay-bypass": "1"}); err != nil {
		t.Fatal(err)
	}
	recs := rg.log.records("orders")
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	restored, republished := recs[1], recs[2]
	if !cmp.Equal(in, restored.Headers) || string(restored.Value) != "poison" || string(restored.Key) != "k" || !restored.Time.Equal(t0) {
		t.Fatalf("restored %+v", restored)
	}
	if diff := cmp.Diff([]kafkago.Header{h("bq-job", "urn:route"), h("traceparent", "00-a-b-01")}, republished.Headers); diff != "" {
		t.Fatalf("republish headers (-want +got):\n%s", diff)
	}
	dlq := rg.log.records("orders.dlq")
	if diff := cmp.Diff(contractHeaders("3"), dlq[0].Headers); diff != "" || string(dlq[0].Key) != "k" {
		t.Fatalf("dead letter key %q headers (-want +got):\n%s", dlq[0].Key, diff)
	}
	if diff := cmp.Diff([]kafkago.Header{h("bq-job", "urn:route"), h("bq-replay-bypass", "1")}, dlq[1].Headers); diff != "" || string(dlq[1].Key) != "k" {
		t.Fatalf("header republish key %q headers (-want +got):\n%s", dlq[1].Key, diff)
	}
	// A message this transport did not reserve yields a keyless record.
	if err := rg.tr.PublishFrom(ctx, "other", envelope(t, 0), &babelqueue.ReceivedMessage{Queue: "x", Body: "y"}); err != nil {
		t.Fatal(err)
	}
	if r := rg.log.records("other")[0]; r.Key != nil {
		t.Fatalf("foreign from gave key %q", r.Key)
	}
}

func TestHeadersDoNotGrowAcrossRetryHops(t *testing.T) {
	rg := newRig(t, WithRetryTiers(time.Second))
	ctx := context.Background()
	reinject := &Reinjector{clock: rg.clock, workOf: map[string]string{"orders.retry.1": "orders"}}
	first := append(contractHeaders("0"), h("traceparent", "00-a-b-01"), h("tracestate", "s"), h("x-app", "v"), h("baggage", "k=v"))
	rg.log.append("orders", 0, kafkago.Message{Key: []byte("k"), Value: []byte(envelope(t, 0)), Headers: first})
	var afterOne []string
	for hop := 0; hop <= 10; hop++ {
		m := rg.pop("orders")
		d, _ := recordOf(m)
		keys := headerKeys(d.msg.Headers)
		if hop == 1 {
			afterOne = keys
		}
		if hop > 1 {
			if diff := cmp.Diff(afterOne, keys); diff != "" {
				t.Fatalf("hop %d (-hop 1 +now):\n%s", hop, diff)
			}
		}
		if got := m.Headers["bq-attempts"]; got != strconv.Itoa(hop) || m.Body != envelope(t, hop) {
			t.Fatalf("hop %d: bq-attempts %q body %s", hop, got, m.Body)
		}
		if hop > 0 && m.Headers["babelqueue-retry-link"] != fmt.Sprintf("link-%d", hop-1) {
			t.Fatalf("hop %d: retry link %q", hop, m.Headers["babelqueue-retry-link"])
		}
		// As the otel decorator does: each failed attempt names itself in
		// the retry link of the copy it hands on.
		linked := *m
		linked.Headers = maps.Clone(m.Headers)
		linked.Headers["babelqueue-retry-link"] = fmt.Sprintf("link-%d", hop)
		if err := rg.tr.PublishRetryForAttempt(ctx, &linked, hop); err != nil {
			t.Fatal(err)
		}
		if err := rg.tr.Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
		tier := rg.log.records("orders.retry.1")
		back := reinject.reinjected(tier[len(tier)-1])
		rg.log.append("orders", 0, back)
	}
	want := []string{"bq-job", "bq-trace-id", "bq-message-id", "bq-schema-version", "bq-source-lang", "bq-attempts",
		"babelqueue-retry-link", "baggage", "traceparent", "tracestate", "x-app"}
	if diff := cmp.Diff(want, afterOne); diff != "" {
		t.Fatalf("headers after one hop (-want +got):\n%s", diff)
	}
}

func headerKeys(hs []kafkago.Header) []string {
	var ks []string
	for _, h := range hs {
		ks = append(ks, h.Key)
	}
	return ks
}
