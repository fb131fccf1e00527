package pulsar

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// sendRetry is Send of IntentRetry: it writes the copy of out.From through the
// retry producer of its queue and acknowledges out.From, or negatively
// acknowledges out.From when there is no retry producer (see Retry).
func (t *Transport) sendRetry(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	from := out.From
	d := deliveryOf(from)
	if d == nil {
		return noReceipt, fmt.Errorf("pulsar: retry: %w: message was not received from this binding", babelqueue.ErrInvalidOption)
	}
	if t.isClosed() {
		return noReceipt, errClosed("retry")
	}
	r := noReceipt
	if out.Queue != from.Queue {
		// The copy goes back to the topic it was consumed from.
		r.Queue = from.Queue
	}
	p, err := t.retryProducerFor(from.Queue, d.topic)
	if err != nil {
		d.consumer.Nack(d.msg)
		t.warn(fmt.Sprintf("retry of a message from %s left negatively acknowledged: %v", d.topic, err))
		return noReceipt, fmt.Errorf("pulsar: retry on %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	if p == nil {
		d.consumer.Nack(d.msg)
		return r, nil
	}
	id, err := p.Send(ctx, message(out))
	if err != nil && tooBig(err) {
		// The copy can never be written: leave the original reserved, so
		// that the App writes a bounded dead letter and acknowledges it
		// (driver.ErrTooLarge); Retry, with no App behind it, nacks it.
		return noReceipt, fmt.Errorf("pulsar: retry republish to %s: %w: %w", d.topic, driver.ErrTooLarge, err)
	}
	if err != nil {
		d.consumer.Nack(d.msg)
		t.warn(fmt.Sprintf("retry republish to %s failed, message left negatively acknowledged: %v", d.topic, err))
		return noReceipt, fmt.Errorf("pulsar: retry republish to %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	if err := d.consumer.Ack(d.msg); err != nil {
		return noReceipt, fmt.Errorf("pulsar: ack after retry on %s: %w: %w", d.topic, babelqueue.ErrSettle, err)
	}
	rid := receipt(id, 0)
	r.Partition, r.ID = rid.Partition, rid.ID
	return r, nil
}

// Retry makes sure msg is delivered again with attempts = counted and
// settles it, as the App's retry does (Send of IntentRetry).
//
// With a retry producer for msg.Queue (WithRetryProducer, or one built
// lazily through WithRetryClient or WithRepublishRetries) it republishes to
// the topic msg was consumed from: the body with its attempts set to
// counted (a body that is not an accepted envelope byte for byte), the
// contract properties projected from it, the out-of-band properties of
// msg, its bq-job route, bq-replay-bypass and bq-redrive-count,
// bq-attempts = counted, and the key, ordering key and event time of msg;
// then it acknowledges msg. When the write, or the creation of the
// producer, fails, msg is negatively acknowledged instead and the error
// matches babelqueue.ErrSettle.
//
// Without a retry producer it negatively acknowledges msg; the broker's
// redelivery count then carries the attempts (Shared and KeyShared only).
func (t *Transport) Retry(ctx context.Context, msg *babelqueue.ReceivedMessage, counted int) error {
	if msg == nil {
		return fmt.Errorf("pulsar: retry: %w: nil message", babelqueue.ErrInvalidOption)
	}
	body := msg.Body
	if class, _ := wire.ClassifyBody([]byte(body)); class == wire.ClassAccepted {
		if b, err := wire.SetAttempts([]byte(body), counted); err == nil {
			body = string(b)
		}
	}
	_, err := t.Send(ctx, &driver.Outgoing{
		Intent:  driver.IntentRetry,
		Queue:   msg.Queue,
		Body:    body,
		From:    msg,
		Headers: retryHeaders(msg, counted),
		Attempt: counted - 1,
	})
	if errors.Is(err, driver.ErrTooLarge) {
		// Send left msg reserved for the App's bounded dead letter; here
		// nothing else settles it.
		if d := deliveryOf(msg); d != nil {
			d.consumer.Nack(d.msg)
		}
		return fmt.Errorf("%w: %w", babelqueue.ErrSettle, err)
	}
	return err
}

// retryHeaders returns the headers the App gives a retry copy of msg: its
// non-contract headers, its bq-job, bq-replay-bypass and bq-redrive-count,
// and bq-attempts = counted.
func retryHeaders(msg *babelqueue.ReceivedMessage, counted int) map[string]string {
	h := make(map[string]string, len(msg.Headers)+1)
	for k, v := range msg.Headers {
		if !wire.IsContractHeader(k) {
			h[k] = v
		}
	}
	for _, k := range [...]string{wire.HeaderJob, wire.HeaderReplayBypass, wire.HeaderRedriveCount} {
		if v, ok := msg.Header(k); ok && !wire.IsBlank(v) {
			h[k] = v
		}
	}
	h[wire.HeaderAttempts] = strconv.Itoa(counted)
	return h
}
