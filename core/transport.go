package babelqueue

import (
	"context"
	"time"
)

// Transport is the contract every broker binding fulfils. Implementations are
// safe for concurrent Publish; Pop and Ack for one queue are called from one
// goroutine at a time.
type Transport interface {
	// Publish writes body to queue and returns once the broker acknowledged
	// the write.
	Publish(ctx context.Context, queue, body string) error
	// Pop reserves the next message of queue, waiting at most timeout. It
	// returns (nil, nil) when nothing arrived in time. The returned body
	// already carries the attempts count reconciled by the binding's rule.
	Pop(ctx context.Context, queue string, timeout time.Duration) (*ReceivedMessage, error)
	// Ack settles a reserved message: it will not be delivered again.
	Ack(ctx context.Context, msg *ReceivedMessage) error
}

// ReceivedMessage is one reserved delivery.
type ReceivedMessage struct {
	// Body is the message payload. When the binding's attempts rule changed
	// the count, only the attempts value differs from the bytes on the wire.
	Body string
	// Queue is the queue (topic) the message was reserved from.
	Queue string
	// Headers holds every out-of-band header or property delivered with the
	// message, contract bq- headers included. It may be nil; it is nil too
	// while a binding defers the headers (DeferHeaders) until FillHeaders,
	// which only a caller of PopDeferredHeaders meets.
	Headers map[string]string
	// Handle is the binding's own reference to the delivery (a Kafka record,
	// a Pulsar message, ...). The App never looks inside it.
	Handle any

	pre     *delivery    // Body decoded ahead of the App (Predecode), or nil
	headers HeaderSource // the deferred headers (DeferHeaders), or nil
}

// Header returns the delivered header key, and whether it was present.
func (m *ReceivedMessage) Header(key string) (string, bool) {
	if m == nil {
		return "", false
	}
	if m.Headers == nil && m.headers != nil {
		return m.headers.LookupHeader(key)
	}
	v, ok := m.Headers[key]
	return v, ok
}

// HeaderPublisher publishes with out-of-band headers beside the contract
// projection. A contract bq- header wins a key collision; blank keys and
// values are skipped.
type HeaderPublisher interface {
	PublishWithHeaders(ctx context.Context, queue, body string, headers map[string]string) error
}

// KeyedRepublisher republishes body to queue carrying the routing key of the
// reserved message from (Kafka record key, Pulsar key and ordering key) byte
// for byte.
type KeyedRepublisher interface {
	PublishFrom(ctx context.Context, queue, body string, from *ReceivedMessage) error
}

// HeaderRepublisher is KeyedRepublisher with out-of-band headers, with the
// collision rules of HeaderPublisher.
type HeaderRepublisher interface {
	PublishFromWithHeaders(ctx context.Context, queue, body string, from *ReceivedMessage, headers map[string]string) error
}

// Forwarder writes body to queue exactly as given: no header projection from
// the body, headers written as passed (contract bq- headers included), and
// the key of from kept byte for byte. The App uses it where a message must be
// moved unchanged, such as a version-gated message going to its dead-letter
// queue.
type Forwarder interface {
	Forward(ctx context.Context, queue, body string, from *ReceivedMessage, headers map[string]string) error
}

// Rewinder puts the consumer back at a reserved message without settling it,
// so that a later Ack of another message can never settle past it. Bindings
// with cumulative commits (Kafka) implement it.
type Rewinder interface {
	Rewind(ctx context.Context, msg *ReceivedMessage) error
}

// NegativeAcknowledger asks the broker to redeliver a reserved message.
type NegativeAcknowledger interface {
	Nack(ctx context.Context, msg *ReceivedMessage) error
}

// DelayedPublisher publishes body so that it is delivered no sooner than
// delay from now. A binding that cannot honour delay returns an error
// matching ErrDelayUnsupported and writes nothing.
type DelayedPublisher interface {
	PublishDelayed(ctx context.Context, queue, body string, delay time.Duration) error
}

// DelayedHeaderPublisher is DelayedPublisher with out-of-band headers
// written beside the contract projection, with the collision rules of
// HeaderPublisher: a contract bq- header wins a key collision, and blank
// keys and values are skipped. The headers travel with the message through
// the delay and are delivered with it. A binding that cannot honour delay
// returns an error matching ErrDelayUnsupported and writes nothing.
type DelayedHeaderPublisher interface {
	PublishDelayedWithHeaders(ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error
}

// TieredRetrier republishes a reserved message to the retry tier chosen from
// attemptsBefore, the reconciled attempts of that delivery. The written copy
// carries attempts = attemptsBefore+1. It returns an error matching
// ErrDelayUnsupported, having written nothing, when no tiers are configured.
// The caller settles the original afterwards.
type TieredRetrier interface {
	PublishRetryForAttempt(ctx context.Context, from *ReceivedMessage, attemptsBefore int) error
}

// Retrier lets a binding own the whole retry of a reserved message: it makes
// sure the message is delivered again with attempts = counted and settles
// the original (for example Pulsar's negative acknowledge on a Shared
// subscription). The App prefers it to its generic republish.
type Retrier interface {
	Retry(ctx context.Context, msg *ReceivedMessage, counted int) error
}
