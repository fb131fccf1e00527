package pulsar

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func popOne(t *testing.T, s fakeSetup, queue string, m *fakeMessage) *babelqueue.ReceivedMessage {
	t.Helper()
	s.fc.consumer(s.tr.Topic(queue)).ch <- m
	msg, err := s.tr.Pop(context.Background(), queue, time.Second)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	return msg
}

func TestRetryRepublishesThroughGivenProducer(t *testing.T) {
	given := &fakeProducer{topic: "orders"}
	s := newFake(t, WithRetryProducer("orders", given)) // Exclusive (undeclared) is fine with a producer
	props := map[string]string{"bq-job": "urn:routed", "traceparent": "tp-1", "bq-attempts": "0",
		"bq-redrive-count": "1", "bq-replay-bypass": "1", "bq-redrive-source": "dlq@1:2:-1", "bq-trace-id": "t-stale"}
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0")), props: props,
		key: "key-1", orderingKey: "ord-1", eventTime: time.UnixMilli(42)})

	if err := s.tr.Retry(context.Background(), msg, 1); err != nil {
		t.Fatal(err)
	}
	sent := given.messages()
	if len(sent) != 1 {
		t.Fatalf("republished %d messages, want 1", len(sent))
	}
	m := sent[0]
	// The contract properties are projected from the body (its trace id
	// wins over a stale property), beside the App's retry headers: the
	// out-of-band properties, the route, bq-redrive-count and
	// bq-replay-bypass. Other bq- properties are not carried.
	want := map[string]string{"bq-job": "urn:routed", "traceparent": "tp-1", "bq-attempts": "1",
		"bq-trace-id": "t", "bq-message-id": "i", "bq-schema-version": "1", "bq-source-lang": "go",
		"bq-redrive-count": "1", "bq-replay-bypass": "1"}
	if diff := cmp.Diff(want, m.Properties); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if n, ok := wire.BodyAttempts(m.Payload); !ok || n != 1 {
		t.Errorf("body attempts = %d (%v), want 1: %s", n, ok, m.Payload)
	}
	if m.Key != "key-1" || m.OrderingKey != "ord-1" || m.EventTime.UnixMilli() != 42 {
		t.Errorf("key %q ordering key %q event time %v", m.Key, m.OrderingKey, m.EventTime)
	}
	fc := s.fc.consumer("orders")
	if a, n := fc.counts(); a != 1 || n != 0 {
		t.Errorf("acked %d nacked %d, want the original acknowledged", a, n)
	}
	if props["bq-attempts"] != "0" || len(props) != 7 {
		t.Error("Retry changed the delivered message's properties")
	}
	if err := s.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if given.isClosed() {
		t.Error("Close closed a producer the caller owns")
	}
}

func TestRetryPoisonBodyIsRepublishedByteForByte(t *testing.T) {
	given := &fakeProducer{topic: "orders"}
	s := newFake(t, WithRetryProducer("orders", given))
	for _, body := range []string{"\xff\xfenot json", `{"trace_id":"t","attempts":0}`, `[1,2]`} {
		msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(body), props: map[string]string{"bq-job": "urn:x"}})
		if err := s.tr.Retry(context.Background(), msg, 2); err != nil {
			t.Fatal(err)
		}
		sent := given.messages()
		m := sent[len(sent)-1]
		if string(m.Payload) != body {
			t.Errorf("poison body changed: %q -> %q", body, m.Payload)
		}
		if m.Properties["bq-attempts"] != "2" || m.Properties["bq-job"] != "urn:x" {
			t.Errorf("properties = %v", m.Properties)
		}
	}
}

func TestRetryBuildsProducerLazilyFromClient(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithTopicPrefix("t", "n"))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts(strconv.Itoa(i)))})
		if err := s.tr.Retry(ctx, msg, i+1); err != nil {
			t.Fatal(err)
		}
	}
	p := s.fc.producer("persistent://t/n/orders")
	if p == nil || len(p.messages()) != 2 {
		t.Fatalf("retry producer on the consumer's topic missing or wrong: %v", p)
	}
	if len(s.fc.producerOpts) != 1 {
		t.Errorf("created %d producers, want one built lazily and reused", len(s.fc.producerOpts))
	}
	if err := s.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !p.isClosed() {
		t.Error("Close left a retry producer it created open")
	}
}

func TestRetryClientIsUsedForRetries(t *testing.T) {
	s := newFake(t, WithRetryClient(stubClient{}))
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	if err := s.tr.Retry(context.Background(), msg, 1); err != nil {
		t.Fatal(err)
	}
	if p := s.retry.producer("orders"); p == nil || len(p.messages()) != 1 {
		t.Fatal("retry did not go through the retry client")
	}
	if s.fc.producer("orders") != nil {
		t.Error("retry used the main client")
	}
}

func TestRetryWithoutProducerNacks(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	if err := s.tr.Retry(context.Background(), msg, 1); err != nil {
		t.Fatal(err)
	}
	if a, n := s.fc.consumer("orders").counts(); a != 0 || n != 1 {
		t.Errorf("acked %d nacked %d, want one nack", a, n)
	}
	if len(s.fc.producerOpts) != 0 {
		t.Error("a producer was created without a retry producer or client")
	}
}

func TestRetryFailedWriteNacksAndReportsErrSettle(t *testing.T) {
	given := &fakeProducer{topic: "orders", sendErr: errors.New("send timeout")}
	var warnings []string
	s := newFake(t, WithRetryProducer("orders", given), WithOnWarning(func(w string) { warnings = append(warnings, w) }))
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	err := s.tr.Retry(context.Background(), msg, 1)
	if !errors.Is(err, babelqueue.ErrSettle) || !strings.Contains(err.Error(), "send timeout") {
		t.Fatalf("Retry = %v, want ErrSettle wrapping the send error", err)
	}
	if a, n := s.fc.consumer("orders").counts(); a != 0 || n != 1 {
		t.Errorf("acked %d nacked %d, want the original negatively acknowledged", a, n)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %v", warnings)
	}
}

func TestRetryProducerCreationFailureNacks(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithOnWarning(func(string) { panic("hook panics") }))
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	s.fc.createErr = errors.New("no permission")
	if err := s.tr.Retry(context.Background(), msg, 1); !errors.Is(err, babelqueue.ErrSettle) {
		t.Fatalf("Retry = %v, want ErrSettle", err)
	}
	if a, n := s.fc.consumer("orders").counts(); a != 0 || n != 1 {
		t.Errorf("acked %d nacked %d", a, n)
	}
	// The failed creation is not cached: the next retry builds the producer.
	s.fc.createErr = nil
	msg = popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	if err := s.tr.Retry(context.Background(), msg, 1); err != nil {
		t.Fatalf("Retry after recovery = %v", err)
	}
}

// retryOutgoing is the Outgoing the App sends to retry msg at counted.
func retryOutgoing(msg *babelqueue.ReceivedMessage, body string, counted int) *driver.Outgoing {
	return &driver.Outgoing{Intent: driver.IntentRetry, Queue: msg.Queue, Body: body, From: msg,
		Headers: retryHeaders(msg, counted), Attempt: counted - 1}
}

func TestSendRetryRepublishesAndAcknowledges(t *testing.T) {
	given := &fakeProducer{topic: "orders", ids: true}
	s := newFake(t, WithRetryProducer("orders", given))
	et := time.UnixMilli(99)
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("1")), key: "k", orderingKey: "o", eventTime: et,
		props: map[string]string{"bq-job": "urn:a", "bq-attempts": "1", "traceparent": "tp"}})
	r, err := s.tr.Send(context.Background(), retryOutgoing(msg, bodyWithAttempts("2"), 2))
	if err != nil {
		t.Fatal(err)
	}
	if r.Queue != "" || r.Delay != 0 || r.Partition != 0 || r.ID == "" {
		t.Errorf("receipt %+v; want the partition and ID of the copy, no other queue, no delay", r)
	}
	m := given.messages()[0]
	if string(m.Payload) != bodyWithAttempts("2") || m.Properties["bq-attempts"] != "2" || m.Properties["traceparent"] != "tp" ||
		m.Key != "k" || m.OrderingKey != "o" || !m.EventTime.Equal(et) {
		t.Errorf("copy %s properties %v key %q ordering key %q event time %v", m.Payload, m.Properties, m.Key, m.OrderingKey, m.EventTime)
	}
	if a, n := s.fc.consumer("orders").counts(); a != 1 || n != 0 {
		t.Errorf("acked %d nacked %d; want the original acknowledged by the retry", a, n)
	}
}

func TestSendRetryWithoutProducerHandsBack(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0"))})
	r, err := s.tr.Send(context.Background(), retryOutgoing(msg, bodyWithAttempts("1"), 1))
	if err != nil || r.Partition != -1 || r.ID != "" {
		t.Fatalf("Send = %+v, %v", r, err)
	}
	if a, n := s.fc.consumer("orders").counts(); a != 0 || n != 1 {
		t.Errorf("acked %d nacked %d; want one nack", a, n)
	}
}

func TestSendRetryOfAForeignMessageWritesNothing(t *testing.T) {
	given := &fakeProducer{topic: "orders"}
	s := newFake(t, WithRetryProducer("orders", given))
	foreign := &babelqueue.ReceivedMessage{Body: envelope, Queue: "orders"}
	if _, err := s.tr.Send(context.Background(), retryOutgoing(foreign, envelope, 1)); !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("Send = %v, want ErrInvalidOption", err)
	}
	if len(given.messages()) != 0 {
		t.Error("a copy was written")
	}
}

// TestRetryPoisonObjectBodyCountsOn: a poison object body is republished
// as received, its stale attempts included, but bq-attempts carries the
// count, so that the next delivery reconciles to it and the retries end.
func TestRetryPoisonObjectBodyCountsOn(t *testing.T) {
	given := &fakeProducer{topic: "orders"}
	s := newFake(t, WithRetryProducer("orders", given))
	body := `{"trace_id":"t","attempts":0}`
	msg := popOne(t, s, "orders", &fakeMessage{payload: []byte(body)})
	for counted := 1; counted <= 2; counted++ {
		received := msg.Body // as Pop reconciled it
		if err := s.tr.Retry(context.Background(), msg, counted); err != nil {
			t.Fatal(err)
		}
		m := given.messages()[counted-1]
		if string(m.Payload) != received || m.Properties["bq-attempts"] != strconv.Itoa(counted) {
			t.Fatalf("copy %d: %s %v", counted, m.Payload, m.Properties)
		}
		msg = popOne(t, s, "orders", &fakeMessage{payload: m.Payload, props: m.Properties})
		if h, _ := msg.Header("bq-attempts"); h != strconv.Itoa(counted) {
			t.Fatalf("redelivered copy %d carries bq-attempts %q", counted, h)
		}
	}
}
