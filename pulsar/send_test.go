package pulsar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestFeatures(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	want := driver.Features{Keys: true, Headers: true, Delay: true, SettlesRetry: true, HandBack: driver.HandBackNack, AckNonBlocking: true}
	if got := s.tr.Features(); got != want {
		t.Errorf("Features = %+v, want %+v", got, want)
	}
}

func TestSendDelayedPublishSetsDeliverAfterAndProperties(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	extra := map[string]string{
		"traceparent": "00-a-b-01",
		"bq-job":      "urn:spoofed",
		" ":           "blank key",
		"blank":       " ",
	}
	r, err := s.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: envelope, Headers: extra, Delay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delay != 2*time.Second || r.Queue != "" || r.Partition != -1 {
		t.Errorf("receipt = %+v, want the delay applied, no other queue, partition unknown", r)
	}
	r, err = s.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: envelope,
		Headers: map[string]string{"x-a": "1"}, Delay: -time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delay != 0 {
		t.Errorf("negative delay: receipt delay %v", r.Delay)
	}
	sent := s.fc.producer("orders").messages()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want 2", len(sent))
	}
	m := sent[0]
	if m.DeliverAfter != 2*time.Second {
		t.Errorf("DeliverAfter = %v, want 2s", m.DeliverAfter)
	}
	if got := m.Properties["traceparent"]; got != "00-a-b-01" {
		t.Errorf("traceparent = %q", got)
	}
	if got := m.Properties["bq-job"]; got != "urn:babel:orders:created" {
		t.Errorf("bq-job = %q: the contract property must win", got)
	}
	if _, ok := m.Properties[" "]; ok {
		t.Error("a blank key was written")
	}
	if _, ok := m.Properties["blank"]; ok {
		t.Error("a blank value was written")
	}
	if m.EventTime.IsZero() {
		t.Error("the event time of meta.created_at is missing")
	}
	if sent[1].DeliverAfter != 0 || sent[1].Properties["x-a"] != "1" {
		t.Errorf("negative delay: DeliverAfter %v, properties %v; want an immediate publish with x-a", sent[1].DeliverAfter, sent[1].Properties)
	}
}

// TestSendDelayOnlyOnPublish: a delay is a publish's; the settle writes
// go out at once.
func TestSendDelayOnlyOnPublish(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	from := popOne(t, s, "orders", &fakeMessage{payload: []byte(envelope)})
	for _, in := range []driver.Intent{driver.IntentRelease, driver.IntentDeadLetter, driver.IntentForward,
		driver.IntentRedrive, driver.IntentRestore} {
		r, err := s.tr.Send(context.Background(), &driver.Outgoing{Intent: in, Queue: "out", Body: envelope, From: from, Delay: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if r.Delay != 0 {
			t.Errorf("%s: receipt delay %v", in, r.Delay)
		}
	}
	for i, m := range s.fc.producer("out").messages() {
		if m.DeliverAfter != 0 {
			t.Errorf("write %d delayed by %v", i, m.DeliverAfter)
		}
	}
}

func TestSendKeys(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	from := popOne(t, s, "orders", &fakeMessage{payload: []byte(envelope), key: "k\x00\xff", orderingKey: "ok-1",
		props: map[string]string{"bq-job": "urn:babel:orders:created"}})
	outs := []*driver.Outgoing{
		{Intent: driver.IntentPublish, Queue: "out", Body: envelope, Key: []byte("pub\x01")},
		{Intent: driver.IntentRelease, Queue: "out", Body: envelope, From: from},
		{Intent: driver.IntentDeadLetter, Queue: "out", Body: envelope, From: from, Headers: map[string]string{"traceparent": "tp"}},
		{Intent: driver.IntentRedrive, Queue: "out", Body: envelope, From: from},
		{Intent: driver.IntentForward, Queue: "out", Body: envelope, From: from},
		{Intent: driver.IntentRestore, Queue: "out", Body: envelope, From: from},
		{Intent: driver.IntentDeadLetter, Queue: "out", Body: envelope, From: from, Key: []byte("over")},
		// A message from another binding has no keys to keep.
		{Intent: driver.IntentDeadLetter, Queue: "out", Body: envelope, From: &babelqueue.ReceivedMessage{Body: envelope}},
		{Intent: driver.IntentPublish, Queue: "out", Body: envelope},
	}
	want := [][2]string{
		{"pub\x01", "pub\x01"},
		{"k\x00\xff", "ok-1"}, {"k\x00\xff", "ok-1"}, {"k\x00\xff", "ok-1"}, {"k\x00\xff", "ok-1"}, {"k\x00\xff", "ok-1"},
		{"over", "over"},
		{"", ""}, {"", ""},
	}
	for _, out := range outs {
		if _, err := s.tr.Send(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	sent := s.fc.producer("out").messages()
	if len(sent) != len(want) {
		t.Fatalf("sent %d, want %d", len(sent), len(want))
	}
	for i, m := range sent {
		if got := [2]string{m.Key, m.OrderingKey}; got != want[i] {
			t.Errorf("write %d (%s): key and ordering key %q, want %q", i, outs[i].Intent, got, want[i])
		}
	}
	if sent[2].Properties["traceparent"] != "tp" || sent[2].Properties["bq-job"] != "urn:babel:orders:created" {
		t.Errorf("dead letter properties %v", sent[2].Properties)
	}
}

func TestSendEventTime(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	et := time.UnixMilli(1700000000000)
	from := popOne(t, s, "orders", &fakeMessage{payload: []byte(envelope), eventTime: et})
	created := time.UnixMilli(1749132727000)
	for in, want := range map[driver.Intent]time.Time{
		driver.IntentPublish:    created,
		driver.IntentRelease:    created,
		driver.IntentDeadLetter: created,
		driver.IntentRedrive:    created,
		driver.IntentForward:    et,
		driver.IntentRestore:    et,
	} {
		out := &driver.Outgoing{Intent: in, Queue: "out-" + in.String(), Body: envelope}
		if in != driver.IntentPublish {
			out.From = from
		}
		if _, err := s.tr.Send(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		if got := s.fc.producer(out.Queue).messages()[0].EventTime; !got.Equal(want) {
			t.Errorf("%s: event time %v, want %v", in, got, want)
		}
	}
}

func TestSendForwardWritesAsGiven(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	gated := `{"job":"urn:x","meta":{"schema_version":2}, "attempts":5}`
	et := time.UnixMilli(1700000000000)
	props := map[string]string{"bq-schema-version": "2", "bq-job": "urn:x", "bq-attempts": "1"}
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(gated), key: "k1", orderingKey: "o1", eventTime: et,
		redelivery: 3, props: props})
	if msg.Body != gated {
		t.Fatalf("a version-gated body was changed by Pop: %s", msg.Body)
	}
	for _, in := range []driver.Intent{driver.IntentForward, driver.IntentRestore} {
		if _, err := s.tr.Send(ctx, &driver.Outgoing{Intent: in, Queue: "orders.dlq", Body: msg.Body, From: msg, Headers: msg.Headers}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range s.fc.producer("orders.dlq").messages() {
		if string(m.Payload) != gated {
			t.Errorf("payload = %s", m.Payload)
		}
		if diff := cmp.Diff(props, m.Properties); diff != "" {
			t.Errorf("properties (-want +got):\n%s", diff)
		}
		if m.Key != "k1" || m.OrderingKey != "o1" || !m.EventTime.Equal(et) {
			t.Errorf("key %q ordering key %q event time %v", m.Key, m.OrderingKey, m.EventTime)
		}
		m.Properties["x"] = "changed"
	}
	if _, ok := props["x"]; ok {
		t.Error("a forwarded message shares the caller's header map")
	}
}

// TestSendPropertiesAreOutgoingHeaders holds the properties Send writes to
// driver.OutgoingHeaders, the contract's definition, for every intent,
// bodies with and without each contract field, and every kind of extra
// header (a bq-job route that differs from the body's included).
func TestSendPropertiesAreOutgoingHeaders(t *testing.T) {
	bodies := []string{
		envelope,
		`{"urn":"urn:babel:orders:created","job":" ","meta":{"id":"m-2","schema_version":"2"},"attempts":7}`,
		`{"job":"urn:x","trace_id":"","meta":{"lang":"go","created_at":1},"attempts":-1}`,
		`{"job":"urn:x","attempts":2147483648}`,
		`{}`,
		`not json`,
	}
	extras := []map[string]string{
		nil,
		{},
		{"traceparent": "tp", "tracestate": "ts"},
		{"bq-job": "urn:spoofed", "bq-message-id": "m-extra", "bq-trace-id": "t-extra"},
		{"bq-job": " ", "bq-attempts": "4", "bq-replay-bypass": "1", "bq-redrive-count": "2"},
		{"blank": " \t", " ": "x", "": "y", "ok": "v"},
	}
	intents := []driver.Intent{driver.IntentPublish, driver.IntentRetry, driver.IntentRelease,
		driver.IntentDeadLetter, driver.IntentForward, driver.IntentRedrive, driver.IntentRestore}
	for _, in := range intents {
		for _, body := range bodies {
			for _, extra := range extras {
				s := newFake(t, WithRepublishRetries())
				out := &driver.Outgoing{Intent: in, Queue: "orders", Body: body, Headers: extra}
				if in != driver.IntentPublish {
					out.From = popOne(t, s, "orders", &fakeMessage{payload: []byte(envelope), props: map[string]string{"bq-job": "urn:from"}})
				}
				var want map[string]string
				for _, h := range driver.OutgoingHeaders(out) {
					if want == nil {
						want = map[string]string{}
					}
					want[h.Key] = h.Value
				}
				if n := extra["bq-attempts"]; in == driver.IntentRetry && !wire.IsBlank(n) {
					// The retry's count wins over a body's own attempts
					// (see properties).
					want["bq-attempts"] = n
				}
				if _, err := s.tr.Send(context.Background(), out); err != nil {
					t.Fatal(err)
				}
				got := s.fc.producer("orders").messages()[0].Properties
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, body %s, extra %v: properties (-OutgoingHeaders +written):\n%s", in, body, extra, diff)
				}
				if string(s.fc.producer("orders").messages()[0].Payload) != body {
					t.Errorf("%s: body not written byte for byte", in)
				}
			}
		}
	}
}

func TestSendErrors(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	if _, err := s.tr.Send(ctx, nil); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Errorf("Send(nil) = %v", err)
	}
	s.fc.createErr = errors.New("no permission")
	r, err := s.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentDeadLetter, Queue: "orders.dlq", Body: envelope})
	if err == nil || r.Partition != -1 {
		t.Errorf("Send with a failing producer = %+v, %v", r, err)
	}
}
