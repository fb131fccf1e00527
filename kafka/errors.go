package kafka

import (
	"errors"
	"fmt"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

var (
	// ErrClosed is returned by Pop, Ack and the publish calls once Close has
	// run. It wraps babelqueue.ErrClosed. A closed transport never opens a
	// new consumer-group reader.
	ErrClosed = fmt.Errorf("kafka: transport is closed: %w", babelqueue.ErrClosed)

	// ErrDelayUnsupported is returned, with nothing written, when no retry
	// tier covers a delay. PublishDelayed and PublishRetry return it when
	// no tier covers the delay or none is configured,
	// PublishRetryForAttempt and NewReinjector when none is configured.
	// Kafka has no native delayed delivery, so a delay is never clamped or
	// dropped. It wraps babelqueue.ErrDelayUnsupported, so either sentinel
	// matches.
	ErrDelayUnsupported = fmt.Errorf("kafka: delay needs a retry tier that covers it: %w", babelqueue.ErrDelayUnsupported)

	// ErrRecordTooLarge is returned, with nothing of the record written,
	// when a record is larger than the writer or the broker accepts. The
	// limits are the writer's batch bytes (WithBatchBytes) and the broker's
	// message.max.bytes or the topic's max.message.bytes
	// (MessageSizeTooLarge, RecordListTooLarge). Writing it again fails the
	// same way. It wraps babelqueue.ErrTooLarge, so an App answers such a
	// refused retry copy or dead letter with a bounded dead letter (reason
	// "oversize").
	ErrRecordTooLarge = fmt.Errorf("kafka: record too large: %w", babelqueue.ErrTooLarge)

	// ErrNoBrokers is returned by New when a component needs brokers and
	// none were given with WithBrokers.
	ErrNoBrokers = fmt.Errorf("kafka: no brokers configured (WithBrokers): %w", babelqueue.ErrInvalidOption)

	// ErrNoGroupID is returned by Pop and NewReinjector when no consumer
	// group was given with WithGroupID.
	ErrNoGroupID = fmt.Errorf("kafka: no consumer group configured (WithGroupID): %w", babelqueue.ErrInvalidOption)

	// ErrConnectionRejected is returned when a broker rejects the
	// transport's connection settings, which retrying cannot heal. Its TLS
	// certificate is not trusted or not for the host dialled, one side
	// speaks TLS and the other does not, or the SASL credentials or
	// mechanism are refused. The error wrapping it names the broker and the
	// reason. Pop reports it when it opens a topic's reader, Reinjector.Run
	// when it starts, EnsureTopics and Redrive before they give up. A
	// broker that is merely down is not reported this way. It wraps
	// babelqueue.ErrInvalidOption.
	ErrConnectionRejected = fmt.Errorf("kafka: the broker rejects the connection settings (WithTLS, WithSASL): %w", babelqueue.ErrInvalidOption)

	// ErrRevoked is returned by Ack for a delivery whose partition was
	// revoked before it settled; the partition's next owner reads it again.
	// Nothing is committed for it.
	ErrRevoked = errors.New("kafka: the partition was revoked; the record will be delivered again")

	// ErrEmptyTopic is returned when a blank topic (queue) name is passed.
	ErrEmptyTopic = fmt.Errorf("kafka: blank topic name: %w", babelqueue.ErrInvalidOption)
)

// writeError wraps a failed write of topic with context and maps the
// size errors of kafka-go and of the broker onto ErrRecordTooLarge.
func writeError(topic string, err error) error {
	if isTooLarge(err) {
		return fmt.Errorf("kafka: write to %q: %w: %w", topic, ErrRecordTooLarge, err)
	}
	return fmt.Errorf("kafka: write to %q: %w", topic, err)
}

func isTooLarge(err error) bool {
	var tooLarge kafkago.MessageTooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, kafkago.MessageSizeTooLarge) || errors.Is(err, kafkago.RecordListTooLarge) {
		return true
	}
	var each kafkago.WriteErrors
	if errors.As(err, &each) {
		for _, e := range each {
			if e != nil && isTooLarge(e) {
				return true
			}
		}
	}
	return false
}
