package driver

import (
	"context"
	"time"
)

// Transport is the one contract a broker binding implements. Every write
// the App or redrive.Run asks for is one Send whose Outgoing says what it is
// for; every delivery is settled by exactly one Ack, one HandBack, or a
// Send of IntentRetry on a binding whose Features say it settles retries.
// The design document core/DESIGN.md describes the contract in full.
//
// Guarantees a binding gives:
//   - Send returns nil only once the broker acknowledged the write;
//   - Receive, Ack and HandBack may be called from several goroutines, and
//     Ack and HandBack for the deliveries of one queue in any order; the
//     binding alone decides what it may commit, and never commits past a
//     delivery that is neither acknowledged nor handed back;
//   - a delivery that was handed back, or never settled, is delivered
//     again (to this consumer or the next owner of its partition).
type Transport interface {
	// Features reports what the binding supports. It is constant for the
	// life of the transport.
	Features() Features
	// Send writes one message as out describes and returns once the
	// broker acknowledged it. A write the binding cannot perform as asked
	// (a delay no tier covers, say) returns an error, matching
	// ErrDelayUnsupported where it concerns a delay, having written
	// nothing.
	Send(ctx context.Context, out *Outgoing) (Receipt, error)
	// Receive reserves the next message of queue, waiting at most
	// timeout, and returns (nil, nil) when nothing arrived in time. The
	// body already carries the attempts count reconciled by the binding's
	// rule. Its headers may be deferred (ReceivedMessage.DeferHeaders):
	// wire.Header reads them, FillHeaders builds the Headers map.
	Receive(ctx context.Context, queue string, timeout time.Duration) (*ReceivedMessage, error)
	// Ack settles a reserved message: it will not be delivered again once
	// the binding has committed it, which it does as soon as every earlier
	// delivery it must commit with it is settled too.
	Ack(ctx context.Context, msg *ReceivedMessage) error
	// HandBack returns a reserved message unsettled, so that it is
	// delivered again and no later commit passes it (Kafka rewinds its
	// partition, Pulsar negatively acknowledges). A binding whose Features
	// report HandBackNone does nothing: it redelivers what was never
	// acknowledged by itself.
	HandBack(ctx context.Context, msg *ReceivedMessage) error
}

// Features is what a binding supports, stated once (Transport.Features).
// The App and redrive.Run read it instead of probing for capabilities.
type Features struct {
	// Keys: Outgoing.Key, and the key of Outgoing.From, are written byte
	// for byte (a Kafka record key, a Pulsar key and ordering key).
	Keys bool
	// Headers: Outgoing.Headers are written beside the message. Without
	// it a publish with headers fails with errors.ErrUnsupported; settle
	// writes go out without them.
	Headers bool
	// Delay: Outgoing.Delay is honoured on IntentPublish.
	Delay bool
	// SettlesRetry: a Send of IntentRetry also settles Outgoing.From (it
	// acknowledges it after the written copy, or hands it back so that the
	// broker's redelivery counts the attempt); the App then neither
	// acknowledges nor hands it back. Exception: a copy refused as too
	// large (ErrTooLarge) leaves From reserved, and the App settles it
	// with a bounded dead letter.
	SettlesRetry bool
	// HandBack says how HandBack returns a message.
	HandBack HandBackMode
	// AckNonBlocking: Ack uses neither the cancellation nor the deadline
	// of its context (it updates local state, or hands the acknowledgement
	// to a client that bounds it itself). The App then calls Ack with the
	// delivery's context as is, instead of arming a settle timeout for it.
	AckNonBlocking bool
}

// HandBackMode says how a binding hands a message back.
type HandBackMode uint8

const (
	// HandBackNone: HandBack does nothing; what was never acknowledged is
	// delivered again by the binding itself.
	HandBackNone HandBackMode = iota
	// HandBackRewind: the consumer is put back at the message, unchanged
	// (Kafka, whose commits are cumulative).
	HandBackRewind
	// HandBackNack: the message is negatively acknowledged and redelivered
	// with its redelivery count increased (Pulsar).
	HandBackNack
)

// Intent says what a write is for. It decides how the binding treats the
// headers: every intent but IntentForward and IntentRestore projects the
// contract headers from Body and merges Headers beside them (a contract
// header wins a collision, blank keys and values are skipped); those two
// write Headers exactly as given.
type Intent uint8

const (
	// IntentPublish: a new message.
	IntentPublish Intent = iota + 1
	// IntentRetry: a copy of the reserved message From, for its next
	// attempt. Attempt is the reconciled attempts of From; Body (for an
	// envelope; a poison body is left byte for byte) and Headers carry
	// Attempt+1, and the bq-attempts of Headers wins over the body's. A binding with retry tiers
	// writes it to the tier chosen from Attempt, else to Queue.
	IntentRetry
	// IntentRelease: From handed to its queue unchanged for another
	// consumer (the unknown-URN release), attempts not counted.
	IntentRelease
	// IntentDeadLetter: the dead letter of From, to its dead-letter queue.
	IntentDeadLetter
	// IntentForward: Body and Headers written exactly as given, the key of
	// From kept (a version-gated message going to its dead-letter queue).
	IntentForward
	// IntentRedrive: a dead letter moved back to work.
	IntentRedrive
	// IntentRestore: the reserved message From written back, unchanged, to
	// the tail of its queue (a dead letter a redrive keeps). Headers are
	// written as given; a binding keeps what Body cannot hold (a null
	// value) from From.
	IntentRestore
)

var intentNames = [...]string{"", "publish", "retry", "release", "dead_letter", "forward", "redrive", "restore"}

// String names the intent: publish, retry, release, dead_letter, forward,
// redrive, restore.
func (i Intent) String() string {
	if int(i) < len(intentNames) && i != 0 {
		return intentNames[i]
	}
	return "intent(" + itoa(int(i)) + ")"
}

// Outgoing is one write, as the App or redrive.Run asks a binding for it.
type Outgoing struct {
	Intent Intent
	// Queue is the destination (a topic).
	Queue string
	// Body is the message, written byte for byte.
	Body string
	// Key is the message key; nil means none. A non-nil empty key is an
	// empty key, kept apart from none. It wins over the key of From.
	Key []byte
	// From is the reserved message this write derives from (a retry, a
	// dead letter, a redrive); when Key is nil its key is kept byte for
	// byte.
	From *ReceivedMessage
	// Headers are out-of-band headers; the Intent says how they combine
	// with the contract headers. A binding does not keep the map.
	Headers map[string]string
	// Delay asks, on IntentPublish, for delivery no sooner than Delay from
	// now; zero or less means no delay.
	Delay time.Duration
	// Attempt is, on IntentRetry, the reconciled attempts of From.
	Attempt int

	proj known // the projection of Body, when its writer knew it (SetProjection)
}

// Receipt is what a binding reports of a write it made. Fields it does
// not know stay zero.
type Receipt struct {
	// Queue is where the message went, when the binding chose it (a Kafka
	// retry tier topic); empty when it went to Outgoing.Queue.
	Queue string
	// Delay is the delay the binding applied (a retry tier's delay).
	Delay time.Duration
	// Partition is the partition written, or -1 when unknown.
	Partition int32
	// ID is the broker's identifier of the message (a Pulsar message ID),
	// when it reports one.
	ID string
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
	// while a binding defers the headers (DeferHeaders) until FillHeaders.
	Headers map[string]string
	// Handle is the binding's own reference to the delivery (a Kafka record,
	// a Pulsar message, ...). The App never looks inside it.
	Handle any
	// Key is the message key (a Kafka record key, a Pulsar ordering key or
	// key); nil when it has none. The App orders concurrent handling by it
	// (WithConcurrency, OrderKey).
	Key []byte
	// Partition is the partition the message was read from, 0 when the
	// queue has one or the binding does not say.
	Partition int32
	// Offset is the message's offset in its partition (a Kafka offset);
	// 0 when the binding has none to report (Pulsar names a message by
	// its ID, not by an offset).
	Offset int64
	// Group is the consumer group (Kafka) or subscription (Pulsar) the
	// message was read in; "" when none. Telemetry reports Key, Partition,
	// Offset and Group as the messaging semantic conventions name them.
	Group string

	pre     *predecoded  // Body decoded ahead of the App (Predecode), or nil
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
