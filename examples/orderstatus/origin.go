package orderstatus

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/segmentio/kafka-go"
)

// Place is where a record sits in Kafka: its topic, partition and offset.
// A retried record's origin is its place on the events topic.
type Place struct {
	Topic     string
	Partition int
	Offset    int64
}

// String formats p as topic/partition@offset.
func (p Place) String() string {
	return fmt.Sprintf("%s/%d@%d", p.Topic, p.Partition, p.Offset)
}

// Origin returns the attempt a record is on and where it came from.
//
// A record of any topic but the retry topic is attempt 0 from its own place.
// A record of the retry topic reads its attempt (at least 1) and its place on
// the events topic from its retry.attempt, retry.partition and retry.offset
// headers. When one of them is missing or invalid the record is malformed:
// the error names every bad header and the returned place is the record's own,
// so its dead letter says where it really was.
func (s Settings) Origin(m kafka.Message) (attempt int, from Place, err error) {
	own := Place{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	if m.Topic != s.RetryTopic {
		return 0, own, nil
	}
	attempt, attemptErr := headerValue(m, HeaderAttempt, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < 1 {
			err = errors.New("it is less than 1")
		}
		return n, err
	})
	partition, partitionErr := headerValue(m, HeaderPartition, func(v string) (int, error) {
		n, err := strconv.ParseInt(v, 10, 32)
		if err == nil && n < 0 {
			err = errors.New("it is negative")
		}
		return int(n), err
	})
	offset, offsetErr := headerValue(m, HeaderOffset, func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n < 0 {
			err = errors.New("it is negative")
		}
		return n, err
	})
	if err := errors.Join(attemptErr, partitionErr, offsetErr); err != nil {
		return 0, own, err
	}
	return attempt, Place{Topic: s.EventsTopic, Partition: partition, Offset: offset}, nil
}

// headerValue parses the last header named key; a missing header is an error.
func headerValue[T any](m kafka.Message, key string, parse func(string) (T, error)) (T, error) {
	var zero T
	value, found := "", false
	for _, h := range m.Headers {
		if h.Key == key {
			value, found = string(h.Value), true
		}
	}
	if !found {
		return zero, fmt.Errorf("the record has no %s header", key)
	}
	v, err := parse(value)
	if err != nil {
		return zero, fmt.Errorf("the %s header %q is not valid: %w", key, value, err)
	}
	return v, nil
}
