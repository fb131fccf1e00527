//go:build integration

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

func TestIntegrationPublishProjection(t *testing.T) {
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	q := uniqueQueue(t)
	r := newRawReader(t, rawClient(t), q)
	ctx := context.Background()
	if err := tr.PublishWithHeaders(ctx, q, envelope, map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"bq-job":      "urn:spoofed",
	}); err != nil {
		t.Fatal(err)
	}
	m := r.next(t, 10*time.Second)
	want := map[string]string{
		"bq-job":            "urn:babel:orders:created",
		"bq-trace-id":       "t-1",
		"bq-message-id":     "m-1",
		"bq-schema-version": "1",
		"bq-source-lang":    "php",
		"bq-attempts":       "0",
		"traceparent":       "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
	if diff := cmp.Diff(want, m.Properties()); diff != "" {
		t.Errorf("delivered properties (-want +got):\n%s", diff)
	}
	if string(m.Payload()) != envelope {
		t.Errorf("delivered payload %s", m.Payload())
	}
	if got := m.EventTime().UnixMilli(); got != 1749132727000 {
		t.Errorf("event time %d, want created_at", got)
	}
}

func TestIntegrationPopAttemptsAfterNack(t *testing.T) {
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared), WithNackRedeliveryDelay(100*time.Millisecond))
	q := uniqueQueue(t)
	ctx := context.Background()
	if err := tr.Publish(ctx, q, bodyWithAttempts("0")); err != nil {
		t.Fatal(err)
	}
	for want := 0; want < 3; want++ {
		msg, err := tr.Pop(ctx, q, 10*time.Second)
		if err != nil || msg == nil {
			t.Fatalf("Pop %d = %v, %v", want, msg, err)
		}
		if n, _ := wire.BodyAttempts([]byte(msg.Body)); n != want {
			t.Fatalf("delivery %d: body attempts %d (redelivery count %d)", want, n, Message(msg).RedeliveryCount())
		}
		if want < 2 {
			if err := tr.Nack(ctx, msg); err != nil {
				t.Fatal(err)
			}
		} else if err := tr.Ack(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if msg, err := tr.Pop(ctx, q, 500*time.Millisecond); msg != nil || err != nil {
		t.Fatalf("after Ack: Pop = %v, %v; want nothing", msg, err)
	}
}

func TestIntegrationKeysKeptOnSendAndRetry(t *testing.T) {
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Exclusive), WithRepublishRetries())
	q, other := uniqueQueue(t), uniqueQueue(t)
	r := newRawReader(t, c, other)
	ctx := context.Background()
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(bodyWithAttempts("0")), Key: "customer-7",
		OrderingKey: "\x00ord\xff", Properties: map[string]string{"bq-job": "urn:a", "traceparent": "tp-9"}})

	msg, err := tr.Pop(ctx, q, 10*time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	rc, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentDeadLetter, Queue: other, Body: msg.Body, From: msg,
		Headers: map[string]string{"traceparent": "tp-9"}})
	if err != nil {
		t.Fatal(err)
	}
	m := r.next(t, 10*time.Second)
	if m.Key() != "customer-7" || m.OrderingKey() != "\x00ord\xff" {
		t.Errorf("dead letter: key %q ordering key %q", m.Key(), m.OrderingKey())
	}
	if rc.ID != m.ID().String() || rc.Partition != m.ID().PartitionIdx() {
		t.Errorf("receipt %+v, the broker delivered %s", rc, m.ID())
	}

	// A key set on a publish is the key and the ordering key.
	if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: other, Body: envelope, Key: []byte("k\x01")}); err != nil {
		t.Fatal(err)
	}
	if m := r.next(t, 10*time.Second); m.Key() != "k\x01" || m.OrderingKey() != "k\x01" {
		t.Errorf("keyed publish: key %q ordering key %q", m.Key(), m.OrderingKey())
	}

	// Retry republishes on the Exclusive subscription's own topic.
	if err := tr.Retry(ctx, msg, 1); err != nil {
		t.Fatal(err)
	}
	again, err := tr.Pop(ctx, q, 10*time.Second)
	if err != nil || again == nil {
		t.Fatalf("Pop of the retried copy = %v, %v", again, err)
	}
	pm := Message(again)
	if pm.Key() != "customer-7" || pm.OrderingKey() != "\x00ord\xff" {
		t.Errorf("retry: key %q ordering key %q", pm.Key(), pm.OrderingKey())
	}
	// The contract properties are projected from the body, beside the
	// out-of-band ones and the route.
	wantProps := map[string]string{"bq-job": "urn:a", "traceparent": "tp-9", "bq-attempts": "1",
		"bq-trace-id": "t", "bq-message-id": "i", "bq-schema-version": "1", "bq-source-lang": "go"}
	if diff := cmp.Diff(wantProps, pm.Properties()); diff != "" {
		t.Errorf("retry properties (-want +got):\n%s", diff)
	}
	if n, _ := wire.BodyAttempts([]byte(again.Body)); n != 1 {
		t.Errorf("retried body attempts %d, want 1", n)
	}
	if err := tr.Ack(ctx, again); err != nil {
		t.Fatal(err)
	}
	if msg, err := tr.Pop(ctx, q, 500*time.Millisecond); msg != nil || err != nil {
		t.Fatalf("the original came back after Retry acknowledged it: %v, %v", msg, err)
	}
}

func TestIntegrationDeliverAfter(t *testing.T) {
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	q := uniqueQueue(t)
	ctx := context.Background()
	// Subscribe first so that the delayed message is tracked by this subscription.
	if msg, err := tr.Pop(ctx, q, 100*time.Millisecond); msg != nil || err != nil {
		t.Fatalf("Pop on a new queue = %v, %v", msg, err)
	}
	const delay = 3 * time.Second
	start := time.Now()
	if err := tr.PublishDelayed(ctx, q, envelope, delay); err != nil {
		t.Fatal(err)
	}
	if msg, err := tr.Pop(ctx, q, delay-time.Second); msg != nil || err != nil {
		t.Fatalf("delivered %v after %v, before the delay of %v (err %v)", msg != nil, time.Since(start), delay, err)
	}
	msg, err := tr.Pop(ctx, q, 15*time.Second)
	if err != nil || msg == nil {
		t.Fatalf("delayed message never delivered: %v", err)
	}
	if el := time.Since(start); el < delay {
		t.Errorf("delivered after %v, want at least %v", el, delay)
	}
	if msg.Body != envelope || msg.Headers["bq-job"] != "urn:babel:orders:created" {
		t.Errorf("delayed message body %s headers %v", msg.Body, msg.Headers)
	}
	_ = tr.Ack(ctx, msg)
}

func TestIntegrationConstructorRejectsExclusiveWithoutRepublish(t *testing.T) {
	for _, st := range []pulsar.SubscriptionType{pulsar.Exclusive, pulsar.Failover} {
		_, err := New(WithServiceURL(brokerURL(t)), WithSubscriptionType(st))
		if !errors.Is(err, babelqueue.ErrInvalidOption) {
			t.Errorf("%s: New = %v, want ErrInvalidOption", subscriptionTypeName(st), err)
		}
	}
	if _, err := New(WithServiceURL(brokerURL(t))); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Errorf("undeclared: New = %v, want ErrInvalidOption", err)
	}
}

func TestIntegrationForwardKeepsEverything(t *testing.T) {
	c := rawClient(t)
	tr := newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared))
	q, dlq := uniqueQueue(t), uniqueQueue(t)
	r := newRawReader(t, c, dlq)
	ctx := context.Background()
	body := `{"job":"urn:a","meta":{"schema_version":2},"attempts":0}`
	props := map[string]string{"bq-schema-version": "2", "bq-job": "urn:a", "x-custom": "v"}
	rawSend(t, c, q, &pulsar.ProducerMessage{Payload: []byte(body), Key: "k", Properties: props})
	msg, err := tr.Pop(ctx, q, 10*time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	if _, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: dlq, Body: msg.Body, From: msg, Headers: msg.Headers}); err != nil {
		t.Fatal(err)
	}
	m := r.next(t, 10*time.Second)
	if string(m.Payload()) != body || m.Key() != "k" {
		t.Errorf("forwarded payload %s key %q", m.Payload(), m.Key())
	}
	if diff := cmp.Diff(props, m.Properties()); diff != "" {
		t.Errorf("forwarded properties (-want +got):\n%s", diff)
	}
}
