//go:build integration

package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

var quiet = babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

// runApp consumes topic with app until the test ends.
func runApp(t *testing.T, app *babelqueue.App, topic string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Consume(ctx, topic) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Consume: %v", err)
		}
	})
}

func runReinjector(t *testing.T, topic string, opts ...Option) {
	t.Helper()
	tr := itTransport(t, append([]Option{WithGroupID(uniq("reinject"))}, opts...)...)
	t.Cleanup(startReinjector(t, context.Background(), tr, topic))
}

func TestIntegrationAppRetriesThroughTiersThenDeadLetters(t *testing.T) {
	topic, group := uniq("it-app-tiers"), uniq("g")
	tiers := WithRetryTiers(time.Second, 2*time.Second)
	tr := itTransport(t, WithGroupID(group), tiers)
	ensure(t, tr, topic, 3)
	runReinjector(t, topic, tiers)

	type seen struct {
		attempts int
		at       time.Time
		replay   bool
		headers  map[string]string
	}
	var mu sync.Mutex
	var deliveries []seen
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(3),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithOnError(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:babel:orders:created", func(ctx context.Context, env *babelqueue.Envelope) error {
		mu.Lock()
		deliveries = append(deliveries, seen{env.Attempts, time.Now(), babelqueue.IsReplay(ctx), babelqueue.HeadersFromContext(ctx)})
		mu.Unlock()
		return errors.New("payment service down")
	})
	key := []byte{0xde, 0xad, 0x00, 0xbe, 0xef}
	body := envelope(t, 0)
	hs, _ := projection(body, time.Now())
	// The App pops with the headers deferred (Receive): the
	// handler still sees them all, and the retries carry the trace context.
	produceRaw(t, kafkago.Message{Topic: topic, Key: key, Value: []byte(body),
		Headers: append(toKafkaHeaders(hs), h("traceparent", "00-app-01"), h("x-tenant", "acme"))})
	runApp(t, app, topic)

	dlq := readTopic(t, topic+".dlq", 1, 60*time.Second, 500*time.Millisecond)
	if len(dlq) != 1 {
		t.Fatalf("dead-letter topic holds %d records", len(dlq))
	}
	d := dlq[0]
	if !cmp.Equal(d.Key, key) {
		t.Fatalf("dead letter key %x, want %x", d.Key, key)
	}
	if v, _ := lastHeader(d.Headers, "bq-attempts"); v != "3" {
		t.Fatalf("dead letter bq-attempts %q", v)
	}
	dl, ok := wire.DeadLetterOf(d.Value)
	if !ok || dl.Reason != wire.ReasonFailed || dl.Attempts != 3 || dl.OriginalQueue != topic {
		t.Fatalf("dead_letter %+v in %s", dl, d.Value)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 3 {
		t.Fatalf("handler ran %d times", len(deliveries))
	}
	for i, want := range []time.Duration{0, time.Second, 2 * time.Second} {
		if deliveries[i].attempts != i {
			t.Fatalf("delivery %d had attempts %d", i, deliveries[i].attempts)
		}
		hs := deliveries[i].headers
		if hs["traceparent"] != "00-app-01" || hs["bq-attempts"] != strconv.Itoa(i) || hs["bq-job"] != "urn:babel:orders:created" {
			t.Fatalf("delivery %d: handler context headers %v", i, hs)
		}
		if i == 0 && hs["x-tenant"] != "acme" {
			t.Fatalf("first delivery: handler context headers %v lack x-tenant", hs)
		}
		if i > 0 && deliveries[i].at.Sub(deliveries[i-1].at) < want-100*time.Millisecond {
			t.Fatalf("delivery %d came %v after the previous, before its %v tier", i, deliveries[i].at.Sub(deliveries[i-1].at), want)
		}
	}
	for n := 1; n <= 2; n++ {
		recs := readTopic(t, RetryTopic(topic, n), 1, 10*time.Second, 200*time.Millisecond)
		if len(recs) != 1 || !cmp.Equal(recs[0].Key, key) {
			t.Fatalf("tier %d: %d records", n, len(recs))
		}
		if v, _ := lastHeader(recs[0].Headers, "traceparent"); v != "00-app-01" {
			t.Fatalf("tier %d record lost the trace context: %v", n, recs[0].Headers)
		}
	}
}

func TestIntegrationAppPoisonAndVersionGateGoToDLQ(t *testing.T) {
	topic := uniq("it-app-poison")
	tr := itTransport(t, WithGroupID(uniq("g")))
	ensure(t, tr, topic, 1)
	var mu sync.Mutex
	var versions []string
	called := 0
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithDefaultQueue(topic), babelqueue.WithPollTimeout(200*time.Millisecond),
		babelqueue.WithUnknownURNStrategy(babelqueue.StrategyRelease), babelqueue.WithOnError(func(error) {}), babelqueue.WithOnWarning(func(error) {}),
		babelqueue.WithOnSchemaVersionRejected(func(v, q string) { mu.Lock(); versions = append(versions, v); mu.Unlock() }), babelqueue.WithLegacyURNs())
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:x", func(context.Context, *babelqueue.Envelope) error { mu.Lock(); called++; mu.Unlock(); return nil })
	gatedHeaders := []kafkago.Header{h("bq-job", "urn:x"), h("bq-schema-version", "2"), h("bq-attempts", "7"), h("x-custom", "c")}
	produceRaw(t,
		kafkago.Message{Topic: topic, Key: []byte("poison-key"), Value: []byte("{not json"), Headers: []kafkago.Header{h("bq-job", "urn:x")}},
		kafkago.Message{Topic: topic, Key: []byte("gated-key"), Value: []byte(`{"job":"urn:x","v":2}`), Headers: gatedHeaders},
	)
	runApp(t, app, topic)
	got := readTopic(t, topic+".dlq", 2, 30*time.Second, 500*time.Millisecond)
	if len(got) != 2 {
		t.Fatalf("dlq holds %d records", len(got))
	}
	byKey := map[string]kafkago.Message{}
	for _, m := range got {
		byKey[string(m.Key)] = m
	}
	p, g := byKey["poison-key"], byKey["gated-key"]
	var wrapped struct {
		Raw        string          `json:"raw"`
		DeadLetter json.RawMessage `json:"dead_letter"`
	}
	if err := json.Unmarshal(p.Value, &wrapped); err != nil || wrapped.Raw != "{not json" || !strings.Contains(string(wrapped.DeadLetter), `"reason":"poison"`) {
		t.Fatalf("poison dead letter %s (%v)", p.Value, err)
	}
	if v, _ := lastHeader(p.Headers, "bq-job"); v != "urn:x" {
		t.Fatalf("poison dead letter lost bq-job: %v", p.Headers)
	}
	if string(g.Value) != `{"job":"urn:x","v":2}` {
		t.Fatalf("gated dead letter body changed: %s", g.Value)
	}
	if diff := cmp.Diff(gatedHeaders, g.Headers); diff != "" {
		t.Fatalf("gated dead letter headers (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if called != 0 {
		t.Fatalf("handler called %d times", called)
	}
	if len(versions) == 0 || versions[0] != "2" {
		t.Fatalf("version hook got %v", versions)
	}
}

func TestIntegrationRedriveKeepsKeyAndLeavesTheRest(t *testing.T) {
	topic := uniq("it-redrive")
	dlq := topic + ".dlq"
	admin := itTransport(t)
	ensure(t, admin, topic, 3)
	var msgs []kafkago.Message
	for i, urn := range []string{"urn:a", "urn:b", "urn:a"} {
		env, err := babelqueue.Make(urn, map[string]int{"i": i}, babelqueue.WithQueue(topic))
		if err != nil {
			t.Fatal(err)
		}
		env.Attempts = 3
		b, _ := env.Encode()
		dead, err := wire.AnnotateDeadLetter(b, wire.DeadLetter{Reason: wire.ReasonFailed, OriginalQueue: topic, Attempts: 3, Lang: "go", FailedAt: 1})
		if err != nil {
			t.Fatal(err)
		}
		hs, _ := projection(string(dead), time.Now())
		msgs = append(msgs, kafkago.Message{Topic: dlq, Key: []byte{byte(i), 0xff}, Value: dead, Headers: toKafkaHeaders(hs)})
	}
	produceRaw(t, msgs...)
	group := uniq("redrive")
	ctx := bgCtx(t, 90*time.Second)
	opts := []redrive.Option{redrive.WithSelector(redrive.SelectURN("urn:a")), redrive.WithReplayBypass(),
		redrive.WithPollTimeout(2 * time.Second)}

	dry := itTransport(t, WithGroupID(group))
	res, err := redrive.Run(ctx, dry, dlq, append(opts, redrive.WithDryRun())...)
	if err != nil {
		t.Fatal(err)
	}
	_ = dry.Close()
	if res.Moved != 2 || res.Examined != 3 {
		t.Fatalf("dry run %+v", res)
	}
	if n := len(readTopic(t, topic, 1, 2*time.Second, 0)); n != 0 {
		t.Fatalf("dry run wrote %d records", n)
	}

	tr := itTransport(t, WithGroupID(group))
	res, err = redrive.Run(ctx, tr, dlq, opts...)
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	if res.Moved != 2 || res.Kept != 1 {
		t.Fatalf("redrive %+v", res)
	}
	moved := readTopic(t, topic, 2, 20*time.Second, 500*time.Millisecond)
	if len(moved) != 2 {
		t.Fatalf("work topic holds %d records", len(moved))
	}
	for _, m := range moved {
		if m.Key[1] != 0xff || (m.Key[0] != 0 && m.Key[0] != 2) {
			t.Fatalf("moved key %x", m.Key)
		}
		if _, ok := wire.DeadLetterOf(m.Value); ok {
			t.Fatalf("moved record kept its dead_letter: %s", m.Value)
		}
		if v, _ := lastHeader(m.Headers, "bq-replay-bypass"); v == "" {
			t.Fatalf("moved record has no bq-replay-bypass: %v", m.Headers)
		}
	}
	// The unselected dead letter is still there for a later run.
	again := itTransport(t, WithGroupID(group))
	res, err = redrive.Run(ctx, again, dlq, redrive.WithPollTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != 1 {
		t.Fatalf("second run %+v", res)
	}
	all := readTopic(t, topic, 3, 20*time.Second, 500*time.Millisecond)
	if len(all) != 3 {
		t.Fatalf("work topic holds %d records after both runs", len(all))
	}
}

// A dead-letter write the broker refuses leaves the original uncommitted;
// it is delivered again and dead-lettered once the fault clears.
func TestIntegrationAppFailedDeadLetterWriteLeavesOriginal(t *testing.T) {
	topic, group := uniq("it-app-dlqfault"), uniq("g")
	tr := itTransport(t, WithGroupID(group))
	ensure(t, tr, topic, 1)
	setMaxMessageBytes(t, topic+".dlq", 100)
	var mu sync.Mutex
	calls := 0
	var settleErrs int
	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(1),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithFailureBackoff(100*time.Millisecond),
		babelqueue.WithOnError(func(err error) {
			if errors.Is(err, babelqueue.ErrSettle) {
				mu.Lock()
				settleErrs++
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	app.Handle("urn:babel:orders:created", func(context.Context, *babelqueue.Envelope) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return errors.New("always fails")
	})
	if err := tr.Publish(bgCtx(t, 10*time.Second), topic, envelope(t, 0)); err != nil {
		t.Fatal(err)
	}
	runApp(t, app, topic)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		c, s := calls, settleErrs
		mu.Unlock()
		if c >= 2 && s >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler ran %d times, %d settle errors", c, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := committedTotal(t, group, topic, 1); got != 0 {
		t.Fatalf("original committed (%d) although its dead letter was never written", got)
	}
	setMaxMessageBytes(t, topic+".dlq", 1048588)
	dlq := readTopic(t, topic+".dlq", 1, 30*time.Second, time.Second)
	if len(dlq) != 1 {
		t.Fatalf("dlq holds %d records", len(dlq))
	}
	deadline = time.Now().Add(10 * time.Second)
	for committedTotal(t, group, topic, 1) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("original never committed after its dead letter was written")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
