//go:build integration

package pulsar

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/redrive"
)

// runApp consumes queue with app until the end of the test.
func runApp(t *testing.T, app *babelqueue.App, queue string) {
	t.Helper()
	bqtest.RunUntilCleanup(t, "Consume", 15*time.Second, func(ctx context.Context) error { return app.Consume(ctx, queue) })
}

// recorder collects what handlers and hooks saw.
type recorder struct {
	mu       sync.Mutex
	attempts []int
	headers  []map[string]string
	events   []string
}

func (r *recorder) handler(fail bool) babelqueue.Handler {
	return func(ctx context.Context, env *babelqueue.Envelope) error {
		r.mu.Lock()
		r.attempts = append(r.attempts, env.Attempts)
		r.headers = append(r.headers, babelqueue.HeadersFromContext(ctx))
		r.events = append(r.events, "handled "+env.URN())
		r.mu.Unlock()
		if fail {
			return errors.New("handler failed")
		}
		return nil
	}
}

func (r *recorder) snapshot() ([]int, []map[string]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.attempts...), append([]map[string]string(nil), r.headers...), append([]string(nil), r.events...)
}

func makeBody(t *testing.T, urn, queue string) string {
	t.Helper()
	env, err := babelqueue.Make(urn, map[string]any{"order_id": 1042}, babelqueue.WithQueue(queue))
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deadLetter reads the dead_letter block and attempts of a DLQ record.
func deadLetter(t *testing.T, payload []byte) (reason string, dlAttempts, attempts int) {
	t.Helper()
	var v struct {
		Attempts   int `json:"attempts"`
		DeadLetter struct {
			Reason   string `json:"reason"`
			Attempts int    `json:"attempts"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		t.Fatalf("DLQ record is not JSON: %v: %s", err, payload)
	}
	return v.DeadLetter.Reason, v.DeadLetter.Attempts, v.Attempts
}

func testRetriesThenDeadLetter(t *testing.T, optsFor func(c pulsar.Client, q string) []Option) {
	c := rawClient(t)
	q := uniqueQueue(t)
	dlqReader := newRawReader(t, c, DeadLetterQueue(q))
	tr := newIntegrationTransport(t, append([]Option{WithNackRedeliveryDelay(200 * time.Millisecond)}, optsFor(c, q)...)...)
	app, err := babelqueue.NewApp(tr, babelqueue.WithMaxAttempts(3), babelqueue.WithPollTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	app.Handle("urn:babel:orders:created", rec.handler(true))
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(makeBody(t, "urn:babel:orders:created", q)),
		Key: "order-1042", Properties: map[string]string{"bq-job": "urn:babel:orders:created", "traceparent": "tp-1"}})
	runApp(t, app, q)

	m := dlqReader.next(t, 30*time.Second)
	reason, dlAttempts, attempts := deadLetter(t, m.Payload())
	if reason != "failed" || dlAttempts != 3 || attempts != 3 {
		t.Errorf("dead letter reason %q dead_letter.attempts %d attempts %d; want failed, 3, 3", reason, dlAttempts, attempts)
	}
	if m.Key() != "order-1042" || m.Properties()["bq-job"] != "urn:babel:orders:created" || m.Properties()["traceparent"] != "tp-1" {
		t.Errorf("dead letter key %q properties %v", m.Key(), m.Properties())
	}
	seen, headers, _ := rec.snapshot()
	if diff := cmp.Diff([]int{0, 1, 2}, seen); diff != "" {
		t.Errorf("attempts seen by the handler (-want +got):\n%s", diff)
	}
	for i, h := range headers {
		if h["traceparent"] != "tp-1" {
			t.Errorf("delivery %d lost traceparent: %v", i, h)
		}
	}
	if extra := dlqReader.poll(t, time.Second); extra != nil {
		t.Errorf("a second dead letter arrived: %s", extra.Payload())
	}
}

func TestIntegrationSharedRetriesByNackThenDeadLetter(t *testing.T) {
	testRetriesThenDeadLetter(t, func(pulsar.Client, string) []Option {
		return []Option{WithSubscriptionType(pulsar.Shared)}
	})
}

func TestIntegrationExclusiveRetriesByRepublishThenDeadLetter(t *testing.T) {
	testRetriesThenDeadLetter(t, func(pulsar.Client, string) []Option {
		return []Option{WithSubscriptionType(pulsar.Exclusive), WithRepublishRetries()}
	})
}

func TestIntegrationFailoverRetriesThroughGivenProducer(t *testing.T) {
	testRetriesThenDeadLetter(t, func(c pulsar.Client, q string) []Option {
		return []Option{WithSubscriptionType(pulsar.Failover), WithRetryProducer(q, rawProducer(t, c, q))}
	})
}

func TestIntegrationUndeclaredTypeRetriesThroughRetryClient(t *testing.T) {
	testRetriesThenDeadLetter(t, func(c pulsar.Client, _ string) []Option {
		return []Option{WithRetryClient(c)}
	})
}

func TestIntegrationRoutingByPropertyAndMismatchHook(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	mismatch := make(chan [2]string, 4)
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLegacyURNs(),
		babelqueue.WithOnRoutingMismatch(func(prop, body string, env *babelqueue.Envelope) {
			mismatch <- [2]string{prop, body}
			panic("a failing hook never changes delivery")
		}))
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 4)
	app.Handle("urn:body", func(ctx context.Context, env *babelqueue.Envelope) error {
		handled <- "body:" + env.URN()
		return nil
	})
	app.Handle("urn:property", func(ctx context.Context, env *babelqueue.Envelope) error {
		handled <- "property:" + env.URN()
		return nil
	})
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(makeBody(t, "urn:body", q)),
		Properties: map[string]string{"bq-job": "urn:property"}})
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(makeBody(t, "urn:body", q)),
		Properties: map[string]string{"bq-job": " "}})
	runApp(t, app, q)

	var got []string
	for len(got) < 2 {
		select {
		case h := <-handled:
			got = append(got, h)
		case <-time.After(20 * time.Second):
			t.Fatalf("handled only %v", got)
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{"body:urn:body", "property:urn:body"}, got); diff != "" {
		t.Errorf("routing (-want +got):\n%s", diff)
	}
	select {
	case m := <-mismatch:
		if m != [2]string{"urn:property", "urn:body"} {
			t.Errorf("mismatch hook got %v", m)
		}
	default:
		t.Error("mismatch hook not called")
	}
	if len(mismatch) != 0 {
		t.Error("mismatch hook called for a blank bq-job")
	}
	// Both messages were acknowledged: nothing comes back.
	time.Sleep(500 * time.Millisecond)
	if len(handled) != 0 {
		t.Errorf("a routed message was delivered again")
	}
}

func TestIntegrationVersionGate(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	dlqReader := newRawReader(t, c, DeadLetterQueue(q))
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithNackRedeliveryDelay(100*time.Millisecond))
	rejected := make(chan [2]string, 8)
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithMaxAttempts(1),
		babelqueue.WithOnSchemaVersionRejected(func(v, queue string) { rejected <- [2]string{v, queue} }))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	app.Handle("urn:babel:orders:created", rec.handler(false))
	body := []byte(`{"job":"urn:babel:orders:created", "trace_id":"t","data":{},"meta":{"schema_version":2},"attempts":1}`)
	props := map[string]string{"bq-schema-version": "2", "bq-job": "urn:babel:orders:created", "bq-attempts": "1", "x": "y"}
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: body, Key: "k-2", Properties: props})
	runApp(t, app, q)

	m := dlqReader.next(t, 20*time.Second)
	if string(m.Payload()) != string(body) || m.Key() != "k-2" {
		t.Errorf("gated DLQ record payload %s key %q; want the received bytes and key", m.Payload(), m.Key())
	}
	if diff := cmp.Diff(props, m.Properties()); diff != "" {
		t.Errorf("gated DLQ properties (-want +got):\n%s", diff)
	}
	select {
	case r := <-rejected:
		if r != [2]string{"2", q} {
			t.Errorf("hook got %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Error("schema-version hook not called")
	}
	if seen, _, _ := rec.snapshot(); len(seen) != 0 {
		t.Errorf("the handler ran for a gated message: %v", seen)
	}
}

func TestIntegrationVersionGateFailedDeadLetterWrite(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithNackRedeliveryDelay(100*time.Millisecond))
	var mu sync.Mutex
	var rejections int
	// A topic of a tenant that does not exist: every DLQ write fails.
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithSettleTimeout(3*time.Second),
		babelqueue.WithDeadLetterQueue("persistent://no-such-tenant-bq/ns/"+q+".dlq"),
		babelqueue.WithOnSchemaVersionRejected(func(string, string) { mu.Lock(); rejections++; mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(`{"job":"urn:a"}`), Properties: map[string]string{"bq-schema-version": "7"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Consume(ctx, q) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := rejections
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	n := rejections
	mu.Unlock()
	if n < 2 {
		t.Fatalf("the gated message was rejected %d times; want it negatively acknowledged and delivered again", n)
	}
	// It was never acknowledged: the subscription still holds it, with its
	// body as sent.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr2 := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	msg, err := tr2.Pop(context.Background(), q, 10*time.Second)
	if err != nil || msg == nil {
		t.Fatalf("the message was lost after failed DLQ writes: %v", err)
	}
	if msg.Body != `{"job":"urn:a"}` || msg.Headers["bq-attempts"] != "" {
		t.Errorf("redelivered body %s headers %v", msg.Body, msg.Headers)
	}
}

func TestIntegrationPoisonShapes(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	dlqReader := newRawReader(t, c, DeadLetterQueue(q))
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLegacyURNs())
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	app.Handle("urn:a", rec.handler(false))
	bodies := [][]byte{
		[]byte(`{"trace_id":"t","data":{},"attempts":0}`), // an object without a job
		[]byte("not json"),
		{0xff, 0xfe, 'x'},
	}
	for i, b := range bodies {
		rawSend(t, c, q, &pulsar.ProducerMessage{Payload: b, Key: "pk-" + strconv.Itoa(i), Properties: map[string]string{"bq-job": "urn:a"}})
	}
	runApp(t, app, q)

	got := map[string][]byte{}
	for range bodies {
		m := dlqReader.next(t, 20*time.Second)
		got[m.Key()] = m.Payload()
		if m.Properties()["bq-job"] != "urn:a" {
			t.Errorf("poison DLQ record %s lost bq-job: %v", m.Key(), m.Properties())
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(got["pk-0"], &obj); err != nil || string(obj["trace_id"]) != `"t"` || obj["dead_letter"] == nil {
		t.Errorf("object poison record %s", got["pk-0"])
	}
	var wrapped struct {
		Raw         string `json:"raw"`
		RawEncoding string `json:"raw_encoding"`
		DeadLetter  struct {
			Reason string `json:"reason"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal(got["pk-1"], &wrapped); err != nil || wrapped.Raw != "not json" || wrapped.RawEncoding != "" || wrapped.DeadLetter.Reason != "poison" {
		t.Errorf("text poison record %s", got["pk-1"])
	}
	wrapped.RawEncoding = ""
	if err := json.Unmarshal(got["pk-2"], &wrapped); err != nil || wrapped.RawEncoding != "base64" ||
		wrapped.Raw != base64.StdEncoding.EncodeToString(bodies[2]) {
		t.Errorf("binary poison record %s", got["pk-2"])
	}
	if seen, _, _ := rec.snapshot(); len(seen) != 0 {
		t.Errorf("a handler ran for poison: %v", seen)
	}
}

func TestIntegrationRedriveKeepsKey(t *testing.T) {
	c := rawClient(t)
	q := uniqueQueue(t)
	dlq := DeadLetterQueue(q)
	reader := newRawReader(t, c, q+"-redriven")
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	failed := makeBody(t, "urn:babel:orders:created", q)
	var dl map[string]json.RawMessage
	_ = json.Unmarshal([]byte(failed), &dl)
	dl["dead_letter"] = json.RawMessage(`{"reason":"failed","error":"x","exception":null,"failed_at":1,"original_queue":"` + q + `","attempts":3,"lang":"go"}`)
	dl["attempts"] = json.RawMessage("3")
	dlBody, _ := json.Marshal(dl)
	rawSend(t, c, dlq, &pulsar.ProducerMessage{Payload: dlBody, Key: "redrive-key", Properties: map[string]string{"bq-job": "urn:babel:orders:created"}})

	res, err := redrive.Run(context.Background(), tr, dlq, redrive.WithTarget(q+"-redriven"),
		redrive.WithPollTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("Redrive = %v (%+v)", err, res)
	}
	m := reader.next(t, 10*time.Second)
	if m.Key() != "redrive-key" {
		t.Errorf("redriven key %q", m.Key())
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(m.Payload(), &out); err != nil || out["dead_letter"] != nil || string(out["attempts"]) != "0" {
		t.Errorf("redriven body %s", m.Payload())
	}
	if extra := reader.poll(t, time.Second); extra != nil {
		t.Errorf("redrive duplicated the dead letter")
	}
	// The DLQ was emptied for the redrive cursor: a second run finds nothing.
	again, err := redrive.Run(context.Background(), tr, dlq, redrive.WithPollTimeout(time.Second))
	if err != nil || again.Examined != 0 {
		t.Errorf("the DLQ still holds a redriven message: %+v, %v", again, err)
	}
}

func TestIntegrationConsumerHandlesByURN(t *testing.T) {
	q := uniqueQueue(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.KeyShared), WithMaxWaitTime(200*time.Millisecond))
	got := make(chan *babelqueue.Envelope, 1)
	c := NewConsumer(tr, q, map[string]babelqueue.Handler{
		"urn:babel:orders:created": func(ctx context.Context, env *babelqueue.Envelope) error {
			if babelqueue.HeadersFromContext(ctx)["traceparent"] != "tp-c" {
				return errors.New("traceparent missing")
			}
			got <- env
			return nil
		},
	})
	id, err := c.App().PublishWithHeaders(context.Background(), "urn:babel:orders:created", map[string]any{"order_id": 7},
		map[string]string{"traceparent": "tp-c"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case env := <-got:
		if env.Meta.ID != id || env.Meta.Queue != q || env.Attempts != 0 {
			t.Errorf("handled %+v, want id %s on %s", env.Meta, id, q)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the Consumer never handled the message")
	}
}
