//go:build integration

package smoke

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

func pulsarClient(t *testing.T) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               brokertest.PulsarURL(t),
		ConnectionTimeout: 10 * time.Second,
		OperationTimeout:  30 * time.Second,
		Logger:            pulsarlog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(io.Discard, nil))),
	})
	if err != nil {
		t.Fatalf("pulsar.NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func pulsarTopic(t *testing.T) string {
	return "persistent://public/default/" + brokertest.Topic(t, "smoke")
}

func subscribe(t *testing.T, c pulsar.Client, opts pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	opts.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	cons, err := c.Subscribe(opts)
	if err != nil {
		t.Fatalf("Subscribe %s (%v): %v", opts.Topic, opts.Type, err)
	}
	t.Cleanup(cons.Close)
	return cons
}

func producer(t *testing.T, c pulsar.Client, topic string) pulsar.Producer {
	t.Helper()
	// Delayed messages must not ride in a batch: the delay applies to
	// single messages.
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("CreateProducer %s: %v", topic, err)
	}
	t.Cleanup(p.Close)
	return p
}

func receive(ctx context.Context, t *testing.T, cons pulsar.Consumer, within time.Duration) (pulsar.Message, error) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return cons.Receive(rctx)
}

// TestPulsarProduceConsume sends messages and receives them in order with
// their properties.
func TestPulsarProduceConsume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := pulsarClient(t)
	topic := pulsarTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "smoke", Type: pulsar.Exclusive})
	p := producer(t, c, topic)
	const n = 10
	for i := range n {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{
			Payload:    []byte("m" + strconv.Itoa(i)),
			Properties: map[string]string{"i": strconv.Itoa(i)},
		}); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	for i := range n {
		m, err := receive(ctx, t, cons, 20*time.Second)
		if err != nil {
			t.Fatalf("Receive %d: %v", i, err)
		}
		if string(m.Payload()) != "m"+strconv.Itoa(i) || m.Properties()["i"] != strconv.Itoa(i) {
			t.Fatalf("message %d = %q %v", i, m.Payload(), m.Properties())
		}
		if err := cons.Ack(m); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
}

// delay is long against the broker's 100 ms delayed-delivery tick and short
// enough to keep the test quick.
const delay = 4 * time.Second

// sendDelayed subscribes "smoke" with subType to a new topic, then sends
// "delayed" with DeliverAfter delay. It returns a one-minute context, the
// consumer, the producer and when the message was sent.
func sendDelayed(t *testing.T, subType pulsar.SubscriptionType) (context.Context, pulsar.Consumer, pulsar.Producer, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	c := pulsarClient(t)
	topic := pulsarTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "smoke", Type: subType})
	p := producer(t, c, topic)
	sent := time.Now()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("delayed"), DeliverAfter: delay}); err != nil {
		t.Fatalf("Send delayed: %v", err)
	}
	return ctx, cons, p, sent
}

// TestPulsarDeliverAfterShared: on a Shared subscription a message sent
// with DeliverAfter is held back, and a message sent after it without delay
// overtakes it.
func TestPulsarDeliverAfterShared(t *testing.T) {
	ctx, cons, p, sent := sendDelayed(t, pulsar.Shared)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("now")}); err != nil {
		t.Fatalf("Send now: %v", err)
	}

	m, err := receive(ctx, t, cons, delay/2)
	if err != nil {
		t.Fatalf("the undelayed message did not arrive within %s: %v", delay/2, err)
	}
	if string(m.Payload()) != "now" {
		t.Fatalf("first message %q arrived %s after sending, want the undelayed one (delayed delivery not applied)", m.Payload(), time.Since(sent))
	}
	_ = cons.Ack(m)

	m, err = receive(ctx, t, cons, delay+20*time.Second)
	if err != nil {
		t.Fatalf("the delayed message never arrived: %v", err)
	}
	got := time.Since(sent)
	if string(m.Payload()) != "delayed" {
		t.Fatalf("second message %q, want delayed", m.Payload())
	}
	// Non-strict delayed delivery may release a message up to one tick
	// (100 ms) early; allow a little more.
	if got < delay-500*time.Millisecond {
		t.Fatalf("delayed message arrived after %s, want at least about %s", got, delay)
	}
	_ = cons.Ack(m)
}

// TestPulsarDeliverAfterExclusive: an Exclusive subscription ignores
// DeliverAfter and gets the message at once.
func TestPulsarDeliverAfterExclusive(t *testing.T) {
	ctx, cons, _, sent := sendDelayed(t, pulsar.Exclusive)
	m, err := receive(ctx, t, cons, delay/2)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no message within %s: the Exclusive subscription held the delayed message back", delay/2)
	}
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if string(m.Payload()) != "delayed" {
		t.Fatalf("got %q", m.Payload())
	}
	t.Logf("Exclusive subscription received the DeliverAfter(%s) message after %s", delay, time.Since(sent).Round(time.Millisecond))
	_ = cons.Ack(m)
}

// TestPulsarNackRedeliveryCount: on a Shared subscription each negative
// acknowledgement brings the message back with RedeliveryCount one higher.
func TestPulsarNackRedeliveryCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := pulsarClient(t)
	topic := pulsarTopic(t)
	cons := subscribe(t, c, pulsar.ConsumerOptions{
		Topic: topic, SubscriptionName: "smoke", Type: pulsar.Shared,
		NackRedeliveryDelay: 200 * time.Millisecond,
	})
	p := producer(t, c, topic)
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("again")}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for want := uint32(0); want <= 2; want++ {
		m, err := receive(ctx, t, cons, 20*time.Second)
		if err != nil {
			t.Fatalf("Receive (delivery %d): %v", want+1, err)
		}
		if string(m.Payload()) != "again" {
			t.Fatalf("got %q", m.Payload())
		}
		if m.RedeliveryCount() != want {
			t.Fatalf("delivery %d: RedeliveryCount %d, want %d", want+1, m.RedeliveryCount(), want)
		}
		if want < 2 {
			cons.Nack(m)
		} else if err := cons.Ack(m); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
}
