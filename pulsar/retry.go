package pulsar

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Retry makes sure msg is delivered again with attempts = counted and
// settles the original (the babelqueue.Retrier capability).
//
// With a retry producer for msg.Queue (WithRetryProducer, or one built
// lazily through WithRetryClient or WithRepublishRetries) it republishes to
// the topic msg was consumed from, with every property of msg kept (bq-job
// and traceparent included) and bq-attempts = counted, the body's attempts
// set to counted (a body that is not an accepted envelope is republished
// byte for byte), and the key and ordering key kept; then it acknowledges
// msg. When the write, or the creation of the producer, fails, msg is
// negatively acknowledged instead and the returned error matches
// babelqueue.ErrSettle.
//
// Without a retry producer it negatively acknowledges msg; the broker's
// redelivery count then carries the attempts (Shared and KeyShared only).
func (t *Transport) Retry(ctx context.Context, msg *babelqueue.ReceivedMessage, counted int) error {
	d := deliveryOf(msg)
	if d == nil {
		return fmt.Errorf("pulsar: retry: %w: message was not received from this binding", babelqueue.ErrInvalidOption)
	}
	if t.isClosed() {
		return errClosed("retry")
	}
	p, err := t.retryProducerFor(msg.Queue, d.topic)
	if err != nil {
		d.consumer.Nack(d.msg)
		t.warn(fmt.Sprintf("retry of a message from %s left negatively acknowledged: %v", d.topic, err))
		return fmt.Errorf("pulsar: retry on %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	if p == nil {
		d.consumer.Nack(d.msg)
		return nil
	}
	if _, err := p.Send(ctx, retryMessage(msg, d, counted)); err != nil {
		d.consumer.Nack(d.msg)
		t.warn(fmt.Sprintf("retry republish to %s failed, message left negatively acknowledged: %v", d.topic, err))
		return fmt.Errorf("pulsar: retry republish to %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	if err := d.consumer.Ack(d.msg); err != nil {
		return fmt.Errorf("pulsar: ack after retry on %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	return nil
}

// retryMessage builds the republished copy of msg carrying counted.
func retryMessage(msg *babelqueue.ReceivedMessage, d *delivery, counted int) *pulsar.ProducerMessage {
	body := []byte(msg.Body)
	if class, _ := babelqueue.ClassifyBody(body); class == babelqueue.ClassAccepted {
		if out, err := babelqueue.SetAttempts(body, counted); err == nil {
			body = out
		}
	}
	props := make(map[string]string, len(msg.Headers)+1)
	for k, v := range msg.Headers {
		props[k] = v
	}
	props[babelqueue.HeaderAttempts] = strconv.Itoa(counted)
	return &pulsar.ProducerMessage{
		Payload:     body,
		Properties:  props,
		Key:         d.msg.Key(),
		OrderingKey: d.msg.OrderingKey(),
		EventTime:   d.msg.EventTime(),
	}
}
