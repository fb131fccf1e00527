package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	kafkago "github.com/segmentio/kafka-go"
)

// The transport's own Writer makes one attempt per WriteMessages
// (MaxAttempts 1): kafka-go's internal retries would turn an attempt cut off
// after its produce request went out into a later dial error, reported as if
// nothing had been written. The transport retries instead, and only writes
// that were refused before anything was sent.
const (
	// writeAttempts bounds the attempts of one write (kafka-go's default
	// MaxAttempts).
	writeAttempts = 10
	// writeBackoffMin and writeBackoffMax bound the pause between attempts
	// (kafka-go's WriteBackoffMin and WriteBackoffMax).
	writeBackoffMin = 100 * time.Millisecond
	writeBackoffMax = time.Second
)

// writeOutcome is what a failed write left on the broker.
type writeOutcome int

const (
	// nothingWritten: the write was refused before a produce request
	// reached a broker (dial refused, unknown topic, record too large), or
	// the broker answered it with an error that appends nothing.
	nothingWritten writeOutcome = iota
	// outcomeUnknown: the produce request may have been appended (the
	// connection broke after it went out, the wait for the acknowledgement
	// ended, the leader appended but could not replicate in time).
	outcomeUnknown
)

// classifyWrite tells what a failed write of kafka-go left on the broker.
// started reports whether the context was still live when the write began
// (a context ended before it makes the writer refuse at once).
func classifyWrite(err error, started bool) writeOutcome {
	var each kafkago.WriteErrors
	if errors.As(err, &each) {
		for _, e := range each {
			if e != nil && classifyWrite(e, started) == outcomeUnknown {
				return outcomeUnknown
			}
		}
		return nothingWritten
	}
	var code kafkago.Error
	var tooLarge kafkago.MessageTooLargeError
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, io.ErrClosedPipe), errors.As(err, &tooLarge):
		return nothingWritten
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// kafka-go keeps writing a batch whose caller stopped waiting.
		if started {
			return outcomeUnknown
		}
		return nothingWritten
	case errors.As(err, &code):
		return brokerCodeOutcome(code)
	case refusedDial(err):
		return nothingWritten
	}
	return outcomeUnknown
}

// brokerCodeOutcome is the outcome of a produce request the broker answered
// with code. Every code but two means the partition leader appended
// nothing: RequestTimedOut (acks=all: appended on the leader, replication
// not confirmed in time) and NotEnoughReplicasAfterAppend (appended, then
// the in-sync replicas fell below min.insync.replicas).
func brokerCodeOutcome(code kafkago.Error) writeOutcome {
	switch code {
	case kafkago.RequestTimedOut, kafkago.NotEnoughReplicasAfterAppend, kafkago.Unknown:
		return outcomeUnknown
	}
	return nothingWritten
}

// refusedDial reports a connection that was never made, so no request was
// sent on it.
func refusedDial(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns)
}

// retryable reports a refused write worth another attempt: a broker or
// network condition that heals (a leader election, a broker starting).
func retryable(err error) bool {
	var code kafkago.Error
	if errors.As(err, &code) {
		return code.Temporary()
	}
	var each kafkago.WriteErrors
	if errors.As(err, &each) {
		for _, e := range each {
			if e != nil && !retryable(e) {
				return false
			}
		}
		return true
	}
	return refusedDial(err)
}

// writeClassified hands msgs to the writer, attempting again, after a
// pause, a write that was refused before anything was sent and may heal,
// at most writeAttempts times. A write whose outcome is unknown is never
// attempted again: its error wraps babelqueue.ErrPublishUnknown, so that
// the caller decides (App.Republish). Any other error means nothing of it
// was written. On several records (PublishBatch) an unknown outcome of one
// makes the whole call unknown.
func (t *Transport) writeClassified(ctx context.Context, w Writer, topic string, msgs ...kafkago.Message) error {
	pause := writeBackoffMin
	for attempt := 1; ; attempt++ {
		started := ctx.Err() == nil
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return nil
		}
		if classifyWrite(err, started) == outcomeUnknown {
			return fmt.Errorf("%w: %w", driver.ErrPublishUnknown, writeError(topic, err))
		}
		if attempt >= writeAttempts || !retryable(err) || t.isClosed() || !sleep(ctx, t.cfg.clock, pause) {
			return writeError(topic, err)
		}
		pause = min(2*pause, writeBackoffMax)
	}
}
