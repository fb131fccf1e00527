package kafka

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	kafkago "github.com/segmentio/kafka-go"
)

func TestClassifyWrite(t *testing.T) {
	dialRefused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	readCut := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	cases := []struct {
		name    string
		err     error
		started bool
		want    writeOutcome
	}{
		{"dial refused", dialRefused, true, nothingWritten},
		{"not leader", kafkago.NotLeaderForPartition, true, nothingWritten},
		{"unknown topic", kafkago.UnknownTopicOrPartition, true, nothingWritten},
		{"broker: too large", kafkago.MessageSizeTooLarge, true, nothingWritten},
		{"client: too large", kafkago.MessageTooLargeError{}, true, nothingWritten},
		{"writer closed", io.ErrClosedPipe, true, nothingWritten},
		{"context ended before the write", context.DeadlineExceeded, false, nothingWritten},
		{"context ended during the write", context.DeadlineExceeded, true, outcomeUnknown},
		{"connection cut (EOF)", io.ErrUnexpectedEOF, true, outcomeUnknown},
		{"connection reset while reading the answer", readCut, true, outcomeUnknown},
		{"acks=all timed out", kafkago.RequestTimedOut, true, outcomeUnknown},
		{"appended, replicas lost", kafkago.NotEnoughReplicasAfterAppend, true, outcomeUnknown},
		{"anything else", errors.New("something new"), true, outcomeUnknown},
		{"batch: all refused", kafkago.WriteErrors{nil, kafkago.NotLeaderForPartition}, true, nothingWritten},
		{"batch: one cut", kafkago.WriteErrors{kafkago.NotLeaderForPartition, io.EOF}, true, outcomeUnknown},
	}
	for _, c := range cases {
		if got := classifyWrite(c.err, c.started); got != c.want {
			t.Errorf("%s: classifyWrite(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

func TestSendRetriesOnlyWhatWasNotWritten(t *testing.T) {
	newApp := func(fail func(n int32) error) (*babelqueue.App, *atomic.Int32) {
		var calls atomic.Int32
		w := &fakeWriter{log: newFakeLog(), fail: func([]kafkago.Message) error { return fail(calls.Add(1)) }}
		tr, err := New(WithWriter(w), WithReaderFactory(func(string) Reader { return nil }), WithClock(instantClock{}))
		if err != nil {
			t.Fatal(err)
		}
		app, err := babelqueue.NewApp(tr, babelqueue.WithDefaultQueue("orders"))
		if err != nil {
			t.Fatal(err)
		}
		return app, &calls
	}
	ctx := context.Background()
	body := map[string]int{"n": 1}

	// Refused twice (a leader election), then written: one success.
	app, calls := newApp(func(n int32) error {
		if n <= 2 {
			return kafkago.LeaderNotAvailable
		}
		return nil
	})
	if _, err := app.Publish(ctx, "urn:t:o", body); err != nil || calls.Load() != 3 {
		t.Fatalf("publish after two refusals = %v after %d attempts; want nil after 3", err, calls.Load())
	}

	// Cut off after the request went out: no second attempt, unknown.
	app, calls = newApp(func(int32) error { return io.ErrUnexpectedEOF })
	_, err := app.Publish(ctx, "urn:t:o", body)
	if !errors.Is(err, babelqueue.ErrPublishUnknown) || calls.Load() != 1 {
		t.Fatalf("publish cut off = %v after %d attempts; want an unknown outcome after 1", err, calls.Load())
	}

	// Refused for good: attempted writeAttempts times at most, not unknown.
	app, calls = newApp(func(int32) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	_, err = app.Publish(ctx, "urn:t:o", body)
	if err == nil || errors.Is(err, babelqueue.ErrPublishUnknown) || calls.Load() != writeAttempts {
		t.Fatalf("publish refused = %v after %d attempts; want a refusal after %d", err, calls.Load(), writeAttempts)
	}

	// Refused for a reason no retry heals: one attempt.
	app, calls = newApp(func(int32) error { return kafkago.InvalidTopic })
	_, err = app.Publish(ctx, "urn:t:o", body)
	if err == nil || errors.Is(err, babelqueue.ErrPublishUnknown) || calls.Load() != 1 {
		t.Fatalf("publish to an invalid topic = %v after %d attempts; want a refusal after 1", err, calls.Load())
	}
}

// instantClock pauses for nothing: every timer has fired already.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Now() }

func (instantClock) NewTimer(time.Duration) driver.Timer {
	c := make(chan time.Time, 1)
	c <- time.Now()
	return firedTimer(c)
}

type firedTimer chan time.Time

func (f firedTimer) C() <-chan time.Time { return f }
func (firedTimer) Stop() bool            { return false }
