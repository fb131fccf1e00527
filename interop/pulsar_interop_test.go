//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	bqpulsar "github.com/babelqueue/babelqueue-go/pulsar"
)

func pulsarClient(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: pulsarURL(t), OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("pulsar client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// pulsarReader subscribes to topic with an Exclusive subscription of its
// own that starts at the earliest message.
func pulsarReader(t testing.TB, c pulsar.Client, topic, sub string) pulsar.Consumer {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: sub, Type: pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatalf("subscribe to %s: %v", topic, err)
	}
	t.Cleanup(cons.Close)
	return cons
}

// receive returns the next message of cons (acknowledged), or nil after wait.
func receive(t testing.TB, cons pulsar.Consumer, wait time.Duration) pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	m, err := cons.Receive(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		t.Fatalf("receive: %v", err)
	}
	if err := cons.Ack(m); err != nil {
		t.Fatalf("ack: %v", err)
	}
	return m
}

func mustReceive(t testing.TB, cons pulsar.Consumer, wait time.Duration) pulsar.Message {
	t.Helper()
	m := receive(t, cons, wait)
	if m == nil {
		t.Fatalf("no message on %s within %v", cons.Subscription(), wait)
	}
	return m
}

func newPulsar(t testing.TB, opts ...bqpulsar.Option) *bqpulsar.Transport {
	t.Helper()
	tr, err := bqpulsar.New(append([]bqpulsar.Option{bqpulsar.WithServiceURL(pulsarURL(t)), bqpulsar.WithTimeouts(10*time.Second, 10*time.Second),
		bqpulsar.WithLogger(quiet), bqpulsar.WithRepublishRetries()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// contractProperties is the Pulsar property projection of body (CONTRACT.md 5).
func contractProperties(t testing.TB, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range contractHeaders(t, body) {
		for i := 0; i < len(h); i++ {
			if h[i] == '=' {
				out[h[:i]] = h[i+1:]
				break
			}
		}
	}
	return out
}

// pyPulsarRecord is a message as the Python client (the C++ client) read it.
type pyPulsarRecord struct {
	Payload          b64               `json:"payload"`
	Properties       map[string]string `json:"properties"`
	Key              string            `json:"key"`
	EventTimestamp   int64             `json:"event_timestamp"`
	PublishTimestamp int64             `json:"publish_timestamp"`
	RedeliveryCount  int               `json:"redelivery_count"`
}

// Python publishes through PulsarTransport; the payload is the body byte
// for byte with the six contract properties, and our App hands the handler
// that envelope and those properties.
func TestPulsarPythonToGo(t *testing.T) {
	scenario(t, "pulsar-python-to-go", "")
	topic := brokertest.Topic(t, "py2go")
	c := pulsarClient(t)
	reader := pulsarReader(t, c, topic, "raw")
	pub := runPeer[pyPublished](t, "pulsar-publish", map[string]any{"url": pulsarURL(t), "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": interopData}, map[string]any{"urn": urnCreated, "data": map[string]any{"n": 2}}}}, 60*time.Second)
	if len(pub) != 2 {
		t.Fatalf("peer published %d", len(pub))
	}
	var props []map[string]string
	for i := range pub {
		m := mustReceive(t, reader, 20*time.Second)
		if !bytes.Equal(m.Payload(), pub[i].Body) {
			t.Errorf("payload %s, want the body Python wrote %s", m.Payload(), pub[i].Body)
		}
		if diff := cmp.Diff(contractProperties(t, pub[i].Body), m.Properties()); diff != "" {
			t.Errorf("properties (-want +got):\n%s", diff)
		}
		if m.Key() != "" {
			t.Errorf("key %q, want none", m.Key())
		}
		if et := m.EventTime(); !et.IsZero() && et.UnixMilli() != 0 {
			t.Logf("the Python SDK now sets an event time (%v): update COMPATIBILITY.md", m.EventTime())
		}
		props = append(props, m.Properties())
	}

	rec := newRecorder()
	app := newApp(t, newPulsar(t, bqpulsar.WithSubscription("go")), babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, rec.handler(nil))
	runApp(t, app, topic)
	for i := range pub {
		d := rec.await(t, 30*time.Second, func(d goDelivery) bool { return d.env.Meta.ID == pub[i].ID })
		if !bytes.Equal(d.env.Raw(), pub[i].Body) || d.env.Meta.Lang != "python" || d.env.Attempts != 0 {
			t.Errorf("handler got %s", d.env.Raw())
		}
		if diff := cmp.Diff(props[i], d.headers); diff != "" {
			t.Errorf("handler headers (-properties +handler):\n%s", diff)
		}
	}
}

// Our App publishes (a key and out-of-band headers; and one without); the
// Python consumer reads the same payload, properties, key and event time
// (created_at), and its handler gets the envelope.
func TestPulsarGoToPython(t *testing.T) {
	scenario(t, "pulsar-go-to-python", "")
	topic := brokertest.Topic(t, "go2py")
	c := pulsarClient(t)
	reader := pulsarReader(t, c, topic, "raw")
	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": topic, "subscription": "py", "earliest": true,
		"urns": []string{urnCreated}, "count": 2, "timeout": 60})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)

	app := newApp(t, newPulsar(t), babelqueue.WithDefaultQueue(topic))
	ctx := bg(t, 30*time.Second)
	id1, err := app.PublishWithHeaders(ctx, urnCreated, interopData,
		map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, babelqueue.WithKey([]byte("order-1042")))
	if err != nil {
		t.Fatal(err)
	}
	id2, err := app.Publish(ctx, urnCreated, map[string]any{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	var sent []pulsar.Message
	for range 2 {
		sent = append(sent, mustReceive(t, reader, 20*time.Second))
	}
	got := decodeLines[pyDelivery](t, py.finish(t, 60*time.Second))
	if len(got) != 2 {
		t.Fatalf("python consumed %d messages", len(got))
	}
	for i, d := range got {
		var r pyPulsarRecord
		if err := json.Unmarshal(d.Record, &r); err != nil {
			t.Fatal(err)
		}
		want := sent[i]
		env, err := babelqueue.Decode(want.Payload())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Payload, want.Payload()) {
			t.Errorf("python read payload %s, want %s", r.Payload, want.Payload())
		}
		if diff := cmp.Diff(want.Properties(), r.Properties); diff != "" {
			t.Errorf("python read properties (-go +python):\n%s", diff)
		}
		if r.Key != want.Key() {
			t.Errorf("python read key %q, want %q", r.Key, want.Key())
		}
		if r.EventTimestamp != env.Meta.CreatedAt || want.EventTime().UnixMilli() != env.Meta.CreatedAt {
			t.Errorf("event time: python read %d, go %v, created_at %d", r.EventTimestamp, want.EventTime(), env.Meta.CreatedAt)
		}
		meta, _ := d.Envelope["meta"].(map[string]any)
		if d.Envelope["job"] != urnCreated || meta["id"] != []string{id1, id2}[i] || meta["lang"] != "go" || d.Envelope["attempts"] != float64(0) {
			t.Errorf("python handler got %v", d.Envelope)
		}
	}
}

// One Shared subscription, a consumer of each SDK, handlers that always
// fail: messages published by both SDKs, some delayed (DeliverAfter), are
// retried across languages and dead-lettered once each with attempts 3.
func TestPulsarSharedSubscriptionAcrossLanguages(t *testing.T) {
	scenario(t, "pulsar-shared-retry-delay-dlq", "")
	topic := brokertest.Topic(t, "shared")
	const sub, delay = "shared", 3 * time.Second
	c := pulsarClient(t)
	dlqReader := pulsarReader(t, c, bqpulsar.DeadLetterQueue(topic), "raw")
	py := startPeer(t, "pulsar-consume", map[string]any{"url": pulsarURL(t), "topic": topic, "subscription": sub, "earliest": true,
		"urns": []string{urnCreated}, "fail": true, "max_attempts": 3, "dead_letter": true, "timeout": 120})
	var ready map[string]any
	py.next(t, 30*time.Second, &ready)

	tr := newPulsar(t, bqpulsar.WithSubscription(sub), bqpulsar.WithSubscriptionType(pulsar.Shared))
	rec := newRecorder()
	app := newApp(t, tr, babelqueue.WithDefaultQueue(topic), babelqueue.WithMaxAttempts(3))
	app.Handle(urnCreated, rec.handler(func(*babelqueue.Envelope) bool { return true }))
	runApp(t, app, topic)

	ctx := bg(t, 30*time.Second)
	published := map[string]time.Time{}
	delayed := map[string]bool{}
	for i := range 6 {
		var opts []babelqueue.PublishOption
		if i%2 == 1 {
			opts = append(opts, babelqueue.WithDelay(delay))
		}
		at := time.Now()
		id, err := app.Publish(ctx, urnCreated, map[string]any{"n": i}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		published[id], delayed[id] = at, i%2 == 1
	}
	for _, p := range runPeer[pyPublished](t, "pulsar-publish", map[string]any{"url": pulsarURL(t), "topic": topic,
		"messages": []any{map[string]any{"urn": urnCreated, "data": map[string]any{"py": 1}}, map[string]any{"urn": urnCreated, "data": map[string]any{"py": 2}}}}, 60*time.Second) {
		published[p.ID] = time.UnixMilli(p.At)
	}

	pending := map[string]bool{}
	for id := range published {
		pending[id] = true
	}
	byLang := map[string]int{}
	for range published {
		m := mustReceive(t, dlqReader, 90*time.Second)
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			t.Fatalf("dead letter %s: %v", m.Payload(), err)
		}
		if !pending[env.Meta.ID] {
			t.Errorf("unexpected or repeated dead letter %s", m.Payload())
			continue
		}
		delete(pending, env.Meta.ID)
		if env.DeadLetter == nil || env.DeadLetter.Reason != "failed" || env.DeadLetter.Attempts != 3 || env.Attempts != 3 {
			t.Errorf("dead letter %s", m.Payload())
		} else {
			byLang[env.DeadLetter.Lang]++
		}
	}
	if extra := receive(t, dlqReader, 2*time.Second); extra != nil {
		t.Errorf("a second dead letter: %s", extra.Payload())
	}
	pyDeliveries := decodeLines[pyDelivery](t, py.wait(t, 30*time.Second))

	type delivery struct {
		lang     string
		attempts int
		at       time.Time
	}
	perID := map[string][]delivery{}
	for _, d := range rec.all() {
		perID[d.env.Meta.ID] = append(perID[d.env.Meta.ID], delivery{"go", d.env.Attempts, d.at})
	}
	for _, d := range pyDeliveries {
		meta, _ := d.Envelope["meta"].(map[string]any)
		id, _ := meta["id"].(string)
		n, _ := d.Envelope["attempts"].(float64)
		perID[id] = append(perID[id], delivery{"python", int(n), time.UnixMilli(d.At)})
	}
	langs := map[string]int{}
	for id, ds := range perID {
		// By attempts: the two processes' clocks agree, but a handler's
		// time and its retry's are too close to order across them.
		sort.Slice(ds, func(i, j int) bool { return ds[i].attempts < ds[j].attempts })
		var attempts []int
		for _, d := range ds {
			attempts = append(attempts, d.attempts)
			langs[d.lang]++
		}
		if !cmp.Equal(attempts, []int{0, 1, 2}) {
			t.Errorf("message %s was handled with attempts %v, want [0 1 2]", id, attempts)
		}
		if delayed[id] {
			if first, pub := ds[0].at, published[id]; first.Sub(pub) < delay-100*time.Millisecond {
				t.Errorf("delayed message %s handled %v after publishing, before its %v delay", id, first.Sub(pub), delay)
			}
		}
	}
	if langs["go"] == 0 || langs["python"] == 0 {
		t.Errorf("deliveries by language %v: both consumers of the Shared subscription should have handled some", langs)
	}
	t.Logf("deliveries by language %v, dead letters by language %v", langs, byLang)
}

// pulsar-client-go v0.19.0 drops a message whose payload is empty and which
// has no properties (not batched; what PulsarTransport.publish of an empty
// body writes through the C++ client), before any consumer code runs: its
// MessageReader reports end-of-message for it and the consumer discards it
// as corrupted. With a property the same empty payload is delivered. This
// scenario asserts today's behaviour; when a release delivers the bare empty
// payload it fails and says so.
func TestPulsarEmptyPayloadUpstreamLimit(t *testing.T) {
	scenario(t, "pulsar-empty-payload-upstream-limit", "")
	topic := brokertest.Topic(t, "empty")
	c := pulsarClient(t)
	reader := pulsarReader(t, c, topic, "raw")
	valid, err := babelqueue.Make(urnCreated, map[string]any{"n": 1}, babelqueue.WithQueue(topic))
	if err != nil {
		t.Fatal(err)
	}
	body, err := valid.Encode()
	if err != nil {
		t.Fatal(err)
	}
	runPeer[map[string]any](t, "pulsar-send-raw", map[string]any{"url": pulsarURL(t), "topic": topic, "messages": []any{
		map[string]any{"payload": b64{}},
		map[string]any{"payload": b64{}, "properties": map[string]string{"x-case": "empty-with-property"}},
		map[string]any{"payload": b64(body), "properties": map[string]string{"x-case": "valid"}},
	}}, 60*time.Second)
	seen := runPeer[pyPulsarRecord](t, "pulsar-read", map[string]any{"url": pulsarURL(t), "topic": topic, "count": 3, "timeout": 30}, 60*time.Second)
	if len(seen) != 3 || len(seen[0].Payload) != 0 || len(seen[0].Properties) != 0 {
		t.Fatalf("the Python client does not read the bare empty message first: %+v", seen)
	}
	m := mustReceive(t, reader, 20*time.Second)
	switch {
	case len(m.Payload()) == 0 && len(m.Properties()) == 0:
		t.Errorf("UPSTREAM FIXED: pulsar-client-go now delivers an empty payload without properties written by the C++ client; " +
			"test our poison path for it and remove the limit from interop/COMPATIBILITY.md")
	case m.Properties()["x-case"] == "empty-with-property" && len(m.Payload()) == 0:
		t.Logf("known upstream limit: pulsar-client-go skipped the bare empty payload; the one with a property came through")
		if next := mustReceive(t, reader, 20*time.Second); next.Properties()["x-case"] != "valid" {
			t.Errorf("then %q %v", next.Payload(), next.Properties())
		}
	default:
		t.Errorf("unexpected first message %q %v", m.Payload(), m.Properties())
	}
}

// Poison payloads written by the C++ client are dead-lettered by our App on
// Pulsar in the shape the Python SDK builds for the same input.
func TestPulsarPoisonShapesMatchPython(t *testing.T) {
	scenario(t, "pulsar-poison-shapes-match-python", "")
	topic := brokertest.Topic(t, "poison")
	c := pulsarClient(t)
	dlqReader := pulsarReader(t, c, bqpulsar.DeadLetterQueue(topic), "raw")
	cases := []poisonCase{
		{"empty-value", nil, []byte{}},
		{"invalid-utf8", nil, []byte{'{', 0xff, 0xfe, '}', 0x80}},
		{"json-array", nil, []byte(`[1,{"job":"urn:x"}]`)},
		{"not-json", nil, []byte(`{not json`)},
		{"dead-letter-member", nil, []byte(`{"x":1,"dead_letter":{"reason":"failed","custom":"k"}}`)},
	}
	var msgs []any
	for _, pc := range cases {
		msgs = append(msgs, map[string]any{"payload": b64(pc.value), "properties": map[string]string{"x-case": pc.name}})
	}
	runPeer[map[string]any](t, "pulsar-send-raw", map[string]any{"url": pulsarURL(t), "topic": topic, "messages": msgs}, 60*time.Second)
	app := newApp(t, newPulsar(t, bqpulsar.WithSubscriptionType(pulsar.Shared)), babelqueue.WithDefaultQueue(topic))
	app.Handle(urnCreated, func(context.Context, *babelqueue.Envelope) error { return nil })
	runApp(t, app, topic)

	got := map[string][]byte{}
	for range cases {
		m := mustReceive(t, dlqReader, 30*time.Second)
		got[m.Properties()["x-case"]] = m.Payload()
	}
	var in []map[string]any
	for _, pc := range cases {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(got[pc.name], &fields); err != nil || fields["dead_letter"] == nil {
			t.Fatalf("%s: dead letter %q is not an object with a dead_letter block (%v)", pc.name, got[pc.name], err)
		}
		in = append(in, map[string]any{"input": b64(pc.value), "block": string(fields["dead_letter"])})
	}
	py := runPeer[struct {
		Records []b64 `json:"records"`
	}](t, "poison-record", map[string]any{"cases": in}, 30*time.Second)
	for i, pc := range cases {
		if !bytes.Equal(got[pc.name], py[0].Records[i]) {
			t.Errorf("%s: our dead letter\n%q\nthe Python SDK's for the same input and block\n%q", pc.name, got[pc.name], py[0].Records[i])
		}
	}
	t.Logf("%d dead letters equal the Python SDK's; the first: %s", len(cases), got[cases[0].name])
}
