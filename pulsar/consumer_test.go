package pulsar

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// runConsumer runs c until stop is called or the test ends.
func runConsumer(t *testing.T, c *Consumer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Run did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

type seen struct {
	mu       sync.Mutex
	attempts []int
}

func (s *seen) failing(_ context.Context, env *babelqueue.Envelope) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, env.Attempts)
	return errors.New("boom")
}

func (s *seen) get() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.attempts...)
}

func sentCount(fc *fakeClient, topic string) int {
	p := fc.producer(topic)
	if p == nil {
		return 0
	}
	return len(p.messages())
}

func checkDeadLetter(t *testing.T, m *pulsar.ProducerMessage, wantAttempts int) {
	t.Helper()
	var v struct {
		Attempts   int `json:"attempts"`
		DeadLetter struct {
			Reason   string `json:"reason"`
			Attempts int    `json:"attempts"`
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal(m.Payload, &v); err != nil {
		t.Fatalf("dead letter %s: %v", m.Payload, err)
	}
	if v.Attempts != wantAttempts || v.DeadLetter.Attempts != wantAttempts || v.DeadLetter.Reason != "failed" {
		t.Errorf("dead letter %s; want reason failed and attempts %d", m.Payload, wantAttempts)
	}
}

func TestConsumerSharedRetriesByNackThenDeadLetters(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(10*time.Millisecond))
	s.fc.loopback = true
	s.fc.consumer("orders").redeliverOnNack = true
	var h seen
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing})
	if err := s.tr.Publish(context.Background(), "orders", envelope); err != nil {
		t.Fatal(err)
	}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the dead letter", func() bool { return sentCount(s.fc, "orders.dlq") == 1 })
	stop()

	if diff := cmp.Diff([]int{0, 1, 2}, h.get()); diff != "" {
		t.Errorf("attempts seen (-want +got):\n%s", diff)
	}
	dl := s.fc.producer("orders.dlq").messages()[0]
	checkDeadLetter(t, dl, 3)
	if dl.Properties["bq-job"] != "urn:babel:orders:created" {
		t.Errorf("dead letter properties %v", dl.Properties)
	}
	acked, nacked := s.fc.consumer("orders").counts()
	if acked != 1 || nacked != 2 {
		t.Errorf("acked %d nacked %d; want 2 nacks then 1 ack after the dead letter", acked, nacked)
	}
	if n := sentCount(s.fc, "orders"); n != 1 {
		t.Errorf("%d messages written to the work topic; want only the original publish (retries by nack)", n)
	}
}

func TestConsumerExclusiveRetriesByRepublish(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithMaxWaitTime(10*time.Millisecond))
	s.fc.loopback = true
	var h seen
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing})
	if err := s.tr.PublishWithHeaders(context.Background(), "orders", envelope, map[string]string{"traceparent": "tp"}); err != nil {
		t.Fatal(err)
	}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the dead letter", func() bool { return sentCount(s.fc, "orders.dlq") == 1 })
	stop()

	if diff := cmp.Diff([]int{0, 1, 2}, h.get()); diff != "" {
		t.Errorf("attempts seen (-want +got):\n%s", diff)
	}
	checkDeadLetter(t, s.fc.producer("orders.dlq").messages()[0], 3)
	work := s.fc.producer("orders").messages() // the publish, then two retry copies
	if len(work) != 3 {
		t.Fatalf("work topic got %d writes, want 3", len(work))
	}
	for i, m := range work[1:] {
		if m.Properties["bq-attempts"] != []string{"1", "2"}[i] || m.Properties["traceparent"] != "tp" {
			t.Errorf("retry copy %d properties %v", i+1, m.Properties)
		}
	}
	if acked, nacked := s.fc.consumer("orders").counts(); acked != 3 || nacked != 0 {
		t.Errorf("acked %d nacked %d; want 3 acks and no nack", acked, nacked)
	}
}

func TestConsumerRoutesOnPropertyAndCallsMismatchHook(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(10*time.Millisecond))
	got := make(chan string, 2)
	hook := make(chan [2]string, 2)
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{
		"urn:babel:orders:routed": func(_ context.Context, env *babelqueue.Envelope) error { got <- "property " + env.URN(); return nil },
		"urn:babel:orders:created": func(_ context.Context, env *babelqueue.Envelope) error {
			got <- "body " + env.URN()
			return nil
		},
	}, babelqueue.WithOnRoutingMismatch(func(p, b string, _ *babelqueue.Envelope) { hook <- [2]string{p, b}; panic("ignored") }))
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(envelope), props: map[string]string{"bq-job": "urn:babel:orders:routed"}}
	runConsumer(t, c)
	select {
	case g := <-got:
		if g != "property urn:babel:orders:created" {
			t.Errorf("handled by %q", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not handled")
	}
	select {
	case h := <-hook:
		if h != [2]string{"urn:babel:orders:routed", "urn:babel:orders:created"} {
			t.Errorf("hook got %v", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("mismatch hook not called")
	}
	bqtest.WaitUntil(t, 5*time.Second, "the ack", func() bool { a, _ := s.fc.consumer("orders").counts(); return a == 1 })
}

func TestConsumerVersionGateFailedWriteThenExactForward(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(10*time.Millisecond))
	fc := s.fc.consumer("orders")
	fc.redeliverOnNack = true
	s.fc.createErr = errors.New("dlq unavailable")
	var h seen
	var mu sync.Mutex
	var versions []string
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing},
		babelqueue.WithOnSchemaVersionRejected(func(v, q string) { mu.Lock(); versions = append(versions, v+"@"+q); mu.Unlock() }),
		babelqueue.WithFailureBackoff(time.Millisecond))
	props := map[string]string{"bq-schema-version": "2", "bq-attempts": "0", "bq-job": "urn:babel:orders:created"}
	fc.ch <- &fakeMessage{payload: []byte(envelope), props: props, key: "k"}
	runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "two failed dead-letter writes", func() bool { _, n := fc.counts(); return n >= 2 })
	s.fc.mu.Lock()
	s.fc.createErr = nil
	s.fc.mu.Unlock()
	bqtest.WaitUntil(t, 5*time.Second, "the dead letter", func() bool { return sentCount(s.fc, "orders.dlq") == 1 })
	bqtest.WaitUntil(t, 5*time.Second, "the ack", func() bool { a, _ := fc.counts(); return a == 1 })

	dl := s.fc.producer("orders.dlq").messages()[0]
	if string(dl.Payload) != envelope || dl.Key != "k" {
		t.Errorf("dead letter %s key %q; want the body as received although it was redelivered", dl.Payload, dl.Key)
	}
	if diff := cmp.Diff(props, dl.Properties); diff != "" {
		t.Errorf("dead letter properties (-want +got):\n%s", diff)
	}
	if len(h.get()) != 0 {
		t.Error("the handler ran for a version-gated message")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(versions) < 3 || versions[0] != "2@orders" {
		t.Errorf("hook calls %v; want one per delivery", versions)
	}
}

// TestConsumerPoisonRetriesThenDrops: with dead-lettering off a poison
// body takes the bounded retry: republished byte for byte with
// bq-attempts counting on and its route kept, then dropped.
func TestConsumerPoisonRetriesThenDrops(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithMaxWaitTime(10*time.Millisecond))
	s.fc.loopback = true
	var h seen
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing},
		babelqueue.WithDeadLetter(false))
	const poison = "\xff\xfenot json"
	s.fc.consumer("orders").ch <- &fakeMessage{payload: []byte(poison), key: "pk",
		props: map[string]string{"bq-job": "urn:babel:orders:created", "traceparent": "tp"}}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the drop", func() bool { a, _ := s.fc.consumer("orders").counts(); return a == 3 })
	stop()

	copies := s.fc.producer("orders").messages()
	if len(copies) != 2 {
		t.Fatalf("%d retry copies, want 2", len(copies))
	}
	for i, m := range copies {
		want := map[string]string{"bq-job": "urn:babel:orders:created", "traceparent": "tp", "bq-attempts": strconv.Itoa(i + 1)}
		if string(m.Payload) != poison || m.Key != "pk" {
			t.Errorf("copy %d: payload %q key %q", i+1, m.Payload, m.Key)
		}
		if diff := cmp.Diff(want, m.Properties); diff != "" {
			t.Errorf("copy %d properties (-want +got):\n%s", i+1, diff)
		}
	}
	if len(h.get()) != 0 || sentCount(s.fc, "orders.dlq") != 0 {
		t.Error("poison reached a handler or a dead-letter queue")
	}
	if _, nacked := s.fc.consumer("orders").counts(); nacked != 0 {
		t.Errorf("%d nacks; want retries by republish only", nacked)
	}
}

// stampHook adds a header to every write the App makes.
type stampHook struct{}

func (stampHook) OnPublish(ctx context.Context, out *driver.Outgoing) context.Context {
	out.Headers["x-stamp"] = out.Intent.String()
	return ctx
}

// TestAppKeyAndHookHeadersReachEveryWrite: a key set on a publish is kept
// on each retry copy and the dead letter, and headers a publish hook adds
// are written with each of them.
func TestAppKeyAndHookHeadersReachEveryWrite(t *testing.T) {
	s := newFake(t, WithRepublishRetries(), WithMaxWaitTime(10*time.Millisecond))
	s.fc.loopback = true
	var h seen
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{"urn:babel:orders:created": h.failing},
		babelqueue.WithHooks(stampHook{}))
	if _, err := c.App().Publish(context.Background(), "urn:babel:orders:created", map[string]any{"order_id": 1},
		babelqueue.WithKey([]byte("cust-1"))); err != nil {
		t.Fatal(err)
	}
	stop := runConsumer(t, c)
	bqtest.WaitUntil(t, 5*time.Second, "the dead letter", func() bool { return sentCount(s.fc, "orders.dlq") == 1 })
	stop()

	writes := append(s.fc.producer("orders").messages(), s.fc.producer("orders.dlq").messages()...)
	stamps := []string{"publish", "retry", "retry", "dead_letter"}
	if len(writes) != len(stamps) {
		t.Fatalf("%d writes, want %d", len(writes), len(stamps))
	}
	for i, m := range writes {
		if m.Key != "cust-1" || m.OrderingKey != "cust-1" || m.Properties["x-stamp"] != stamps[i] {
			t.Errorf("write %d: key %q ordering key %q properties %v", i, m.Key, m.OrderingKey, m.Properties)
		}
	}
}

// TestConsumerRunStopsWithNilAtItsDeadline: the stop rule of package
// babelqueue: a context past its deadline is a normal stop, as a cancelled
// one is.
func TestConsumerRunStopsWithNilAtItsDeadline(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithMaxWaitTime(10*time.Millisecond))
	c := NewConsumer(s.tr, "orders", map[string]babelqueue.Handler{
		"urn:babel:orders:created": func(context.Context, *babelqueue.Envelope) error { return nil },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}
