package driver

import "errors"

// ErrTooLarge marks a write the broker can never accept because of its
// size; writing the same bytes again fails the same way. Nothing was
// written. A binding wraps it only into errors of that kind, never into a
// transient one: Kafka's MessageSizeTooLarge and RecordListTooLarge
// refusals and kafka-go's client-side size check, Pulsar's MessageTooBig.
// The App answers a settle write refused this way with a bounded dead
// letter (wire.ReasonOversize) instead of handing the original back.
var ErrTooLarge = errors.New("babelqueue: message larger than the broker accepts")

// MessageLocator is implemented by a binding whose broker names a delivered
// message by an id (a Pulsar message id) rather than by partition and
// offset. The App records that id in a bounded dead letter; without it the
// dead letter names ReceivedMessage.Partition and ReceivedMessage.Offset.
type MessageLocator interface {
	// MessageID returns the broker's id of msg as text, "" when unknown.
	MessageID(msg *ReceivedMessage) string
}
