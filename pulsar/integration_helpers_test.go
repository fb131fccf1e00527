//go:build integration

package pulsar

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
)

// brokerURL returns the service URL of the Pulsar standalone started by
// tools/brokers/up.sh (BQ_PULSAR_URL): the test is skipped without it, and
// fails under CI.
func brokerURL(t testing.TB) string {
	t.Helper()
	return brokertest.PulsarURL(t)
}

// uniqueQueue returns a queue name no other test or run uses.
func uniqueQueue(t testing.TB) string {
	t.Helper()
	return brokertest.Topic(t, "pulsar")
}

// rawClient returns a pulsar-client-go client closed at the end of the test.
func rawClient(t testing.TB) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: brokerURL(t), OperationTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("raw client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// rawProducer creates a producer on topic, closed at the end of the test.
func rawProducer(t testing.TB, c pulsar.Client, topic string) pulsar.Producer {
	t.Helper()
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatalf("raw producer on %s: %v", topic, err)
	}
	t.Cleanup(p.Close)
	return p
}

// rawSend writes msg to topic with a raw producer.
func rawSend(t testing.TB, c pulsar.Client, topic string, msg *pulsar.ProducerMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rawProducer(t, c, topic).Send(ctx, msg); err != nil {
		t.Fatalf("raw send to %s: %v", topic, err)
	}
}

// rawReader subscribes to topic from the earliest message with its own
// subscription.
type rawReader struct {
	c pulsar.Consumer
}

func newRawReader(t testing.TB, c pulsar.Client, topic string) *rawReader {
	t.Helper()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "raw-reader",
		Type:                        pulsar.Exclusive,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
	})
	if err != nil {
		t.Fatalf("raw subscribe to %s: %v", topic, err)
	}
	t.Cleanup(cons.Close)
	return &rawReader{c: cons}
}

// next returns the next message, acknowledged, failing the test after wait.
func (r *rawReader) next(t testing.TB, wait time.Duration) pulsar.Message {
	t.Helper()
	m := r.poll(t, wait)
	if m == nil {
		t.Fatalf("no message within %v", wait)
	}
	return m
}

// poll returns the next message, acknowledged, or nil after wait.
func (r *rawReader) poll(t testing.TB, wait time.Duration) pulsar.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	m, err := r.c.Receive(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		t.Fatalf("raw receive: %v", err)
	}
	if err := r.c.Ack(m); err != nil {
		t.Fatalf("raw ack: %v", err)
	}
	return m
}

// newIntegrationTransport builds a Transport on the broker, closed at the
// end of the test.
func newIntegrationTransport(t testing.TB, opts ...Option) *Transport {
	t.Helper()
	all := append([]Option{WithServiceURL(brokerURL(t)), WithTimeouts(10*time.Second, 10*time.Second)}, opts...)
	tr, err := New(all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}
