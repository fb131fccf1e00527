package kafka

import (
	"context"
	"errors"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Retries of the administrative broker calls that are safe to repeat
// (offset fetches and commits without joining a group, the writes a
// redrive repeats only when the broker says it appended nothing).
const (
	brokerCallAttempts = 5
	brokerCallBackoff  = 200 * time.Millisecond
)

// retrying calls fn until it succeeds, returns an error retry rejects, or
// brokerCallAttempts attempts were made, waiting attempt × brokerCallBackoff
// between attempts (about two seconds in all), or until ctx ends.
func retrying(ctx context.Context, retry func(error) bool, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt >= brokerCallAttempts || !retry(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * brokerCallBackoff):
		}
	}
}

// transient reports a broker error the broker marks as temporary (a
// coordinator moving, a leader election, offsets still loading): a call
// that is safe to repeat is tried again.
func transient(err error) bool {
	var ke kafkago.Error
	return errors.As(err, &ke) && ke.Temporary()
}
