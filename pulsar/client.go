package pulsar

import (
	"context"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The Transport reaches pulsar-client-go only through these three small
// interfaces, so that its logic can be tested without a broker.

// producer is the part of pulsar.Producer the Transport uses.
type producer interface {
	Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error)
	Close()
}

// consumer is the part of pulsar.Consumer the Transport uses.
type consumer interface {
	Receive(ctx context.Context) (pulsar.Message, error)
	Ack(msg pulsar.Message) error
	Nack(msg pulsar.Message)
	Close()
}

// client creates producers and consumers.
type client interface {
	CreateProducer(opts pulsar.ProducerOptions) (producer, error)
	Subscribe(opts pulsar.ConsumerOptions) (consumer, error)
	Close()
}

// realClient adapts a pulsar.Client. failures, set for a client the
// Transport built, explains creation errors caused by a failed broker
// connection.
type realClient struct {
	c        pulsar.Client
	failures *connFailures
}

func (r realClient) CreateProducer(opts pulsar.ProducerOptions) (producer, error) {
	p, err := r.c.CreateProducer(opts)
	if err != nil {
		return nil, r.failures.explain(err)
	}
	return p, nil
}

func (r realClient) Subscribe(opts pulsar.ConsumerOptions) (consumer, error) {
	c, err := r.c.Subscribe(opts)
	if err != nil {
		return nil, r.failures.explain(err)
	}
	return c, nil
}

func (r realClient) Close() { r.c.Close() }

// rawClientOf returns the pulsar.Client behind c, or nil for a fake.
func rawClientOf(c client) pulsar.Client {
	if r, ok := c.(realClient); ok {
		return r.c
	}
	return nil
}

// borrowedProducer wraps a producer the caller owns: Close does nothing.
type borrowedProducer struct{ p producer }

func (b borrowedProducer) Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return b.p.Send(ctx, msg)
}

func (borrowedProducer) Close() {}
