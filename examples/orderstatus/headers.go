package orderstatus

import (
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"
)

// The headers of a retried record. A record keeps its other headers; these
// are replaced on every retry.
const (
	// RetryHeaderPrefix starts every retry header.
	RetryHeaderPrefix = "retry."
	// HeaderAttempt is the attempt the retried record is on (1 for the first retry).
	HeaderAttempt = "retry.attempt"
	// HeaderReason is why the previous attempt failed.
	HeaderReason = "retry.reason"
	// HeaderError is the error of the previous attempt.
	HeaderError = "retry.error"
	// HeaderPartition is the record's partition on the events topic.
	HeaderPartition = "retry.partition"
	// HeaderOffset is the record's offset on the events topic.
	HeaderOffset = "retry.offset"
)

// The headers a dead letter gains. A dead letter keeps all the headers it had.
const (
	// DLQHeaderReason is why the record was given up on.
	DLQHeaderReason = "dlq.reason"
	// DLQHeaderError is the error that made it a dead letter.
	DLQHeaderError = "dlq.error"
	// DLQHeaderTopic, DLQHeaderPartition and DLQHeaderOffset say where the
	// record came from: its place on the events topic, even when it was
	// consumed from the retry topic, or its own place when its retry headers
	// were unreadable.
	DLQHeaderTopic     = "dlq.topic"
	DLQHeaderPartition = "dlq.partition"
	DLQHeaderOffset    = "dlq.offset"
	// DLQHeaderAttempts is the number of attempts of a record that ran out
	// of them; absent on a record dead-lettered at once.
	DLQHeaderAttempts = "dlq.attempts"
)

// RetryHeaders returns the headers of the retry of a record with headers hs:
// hs without any retry.* header, then the five retry headers for the given
// attempt, reason, error and origin.
func RetryHeaders(hs []kafka.Header, attempt int, reason string, cause error, from Place) []kafka.Header {
	out := make([]kafka.Header, 0, len(hs)+5)
	for _, h := range hs {
		if !strings.HasPrefix(h.Key, RetryHeaderPrefix) {
			out = append(out, h)
		}
	}
	return append(out,
		kafka.Header{Key: HeaderAttempt, Value: []byte(strconv.Itoa(attempt))},
		kafka.Header{Key: HeaderReason, Value: []byte(reason)},
		kafka.Header{Key: HeaderError, Value: []byte(cause.Error())},
		kafka.Header{Key: HeaderPartition, Value: []byte(strconv.Itoa(from.Partition))},
		kafka.Header{Key: HeaderOffset, Value: []byte(strconv.FormatInt(from.Offset, 10))},
	)
}

// DeadLetterHeaders returns the headers of the dead letter of a record with
// headers hs: all of hs, then the dlq.* headers; dlq.attempts only when
// attempts is above 0.
func DeadLetterHeaders(hs []kafka.Header, reason string, cause error, from Place, attempts int) []kafka.Header {
	out := make([]kafka.Header, 0, len(hs)+6)
	out = append(out, hs...)
	out = append(out,
		kafka.Header{Key: DLQHeaderReason, Value: []byte(reason)},
		kafka.Header{Key: DLQHeaderError, Value: []byte(cause.Error())},
		kafka.Header{Key: DLQHeaderTopic, Value: []byte(from.Topic)},
		kafka.Header{Key: DLQHeaderPartition, Value: []byte(strconv.Itoa(from.Partition))},
		kafka.Header{Key: DLQHeaderOffset, Value: []byte(strconv.FormatInt(from.Offset, 10))},
	)
	if attempts > 0 {
		out = append(out, kafka.Header{Key: DLQHeaderAttempts, Value: []byte(strconv.Itoa(attempts))})
	}
	return out
}

// Header returns the value of the last header named key, and whether there is one.
func Header(hs []kafka.Header, key string) (string, bool) {
	value, found := "", false
	for _, h := range hs {
		if h.Key == key {
			value, found = string(h.Value), true
		}
	}
	return value, found
}
