package pulsar

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// outcomeProducer wraps a producer the Transport created: a failed Send
// whose message may have reached the broker wraps
// babelqueue.ErrPublishUnknown (see sendOutcomeUnknown). async is p's
// SendAsync when p offers it, has no interceptors and neither batches nor
// chunks, so that a write can reuse its message (send_reuse.go); nil
// otherwise. A batching producer keeps Send: only Send flushes its message
// at once, SendAsync would leave it waiting for the batching delay. A
// chunking one keeps it too: each chunk holds the message, and only the
// last one answers.
type outcomeProducer struct {
	p     producer
	async asyncSender
}

// newOutcomeProducer wraps p, created with opts.
func newOutcomeProducer(p producer, opts *pulsar.ProducerOptions) outcomeProducer {
	o := outcomeProducer{p: p}
	if a, ok := p.(asyncSender); ok && len(opts.Interceptors) == 0 && opts.DisableBatching && !opts.EnableChunking {
		o.async = a
	}
	return o
}

func (o outcomeProducer) Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	live := ctx.Err() == nil
	id, err := o.p.Send(ctx, msg)
	return id, o.outcome(live, err)
}

// sendWrite is Send of w's message through SendAsync (see write).
func (o outcomeProducer) sendWrite(ctx context.Context, w *write) (pulsar.MessageID, error) {
	live := ctx.Err() == nil
	id, err := w.send(ctx, o.async)
	return id, o.outcome(live, err)
}

// outcome wraps err in babelqueue.ErrPublishUnknown when the message may
// have been written; live tells whether the context was live at the send.
func (outcomeProducer) outcome(live bool, err error) error {
	if err != nil && live && sendOutcomeUnknown(err) {
		return fmt.Errorf("%w: %w", driver.ErrPublishUnknown, err)
	}
	return err
}

func (o outcomeProducer) Close() { o.p.Close() }

// sendOutcomeUnknown reports whether a failed Send may have written its
// message: the send timeout fired, or the caller's context ended, while
// the message waited for the broker's receipt (the client keeps sending a
// queued message after Send returned on the context), or the client failed
// in a way it does not name. Refusals before the message was queued or
// answered by the broker (closed producer, full queue, too large, schema,
// unknown or terminated topic, quota, fenced producer) wrote nothing.
func sendOutcomeUnknown(err error) bool {
	if errors.Is(err, pulsar.ErrContextExpired) {
		return false // the context ended before the message was queued
	}
	var perr *pulsar.Error
	if errors.As(err, &perr) {
		switch perr.Result() {
		case pulsar.MessageTooBig, pulsar.InvalidMessage, pulsar.ProducerClosed, pulsar.ProducerQueueIsFull,
			pulsar.ClientMemoryBufferIsFull, pulsar.SchemaFailure, pulsar.TopicNotFound, pulsar.TopicTerminated,
			pulsar.ProducerBlockedQuotaExceededException, pulsar.ProducerBlockedQuotaExceededError,
			pulsar.ProducerFenced, pulsar.AddToBatchFailed:
			return false
		}
	}
	return !errors.Is(err, pulsar.ErrTransaction)
}
