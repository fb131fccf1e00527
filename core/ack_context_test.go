package babelqueue

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// ackRecorder is an in-memory transport that records whether the context
// of each Ack carried a deadline.
type ackRecorder struct {
	*bqtest.InMemoryTransport
	deadlines []bool
}

func (r *ackRecorder) Ack(ctx context.Context, msg *ReceivedMessage) error {
	_, ok := ctx.Deadline()
	r.deadlines = append(r.deadlines, ok)
	return r.InMemoryTransport.Ack(ctx, msg)
}

// TestAckContextFollowsAckNonBlocking checks that the App bounds Ack with
// the settle timeout unless the binding reports an Ack that uses no
// context (driver.Features.AckNonBlocking), and that the message is
// acknowledged either way.
func TestAckContextFollowsAckNonBlocking(t *testing.T) {
	for _, nonBlocking := range []bool{false, true} {
		f := driver.Features{Keys: true, HandBack: driver.HandBackRewind, AckNonBlocking: nonBlocking}
		rec := &ackRecorder{InMemoryTransport: bqtest.NewInMemoryTransport(bqtest.WithMemoryFeatures(f))}
		a, err := NewApp(rec, WithPollTimeout(time.Millisecond), WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		a.Handle("urn:t:ack", func(context.Context, *Envelope) error { return nil })
		ctx := context.Background()
		if _, err := a.Publish(ctx, "urn:t:ack", map[string]int{"n": 1}, ToQueue("q")); err != nil {
			t.Fatal(err)
		}
		n, err := a.Drain(ctx, "q")
		if err != nil || n != 1 {
			t.Fatalf("AckNonBlocking=%v: Drain = %d, %v; want 1, nil", nonBlocking, n, err)
		}
		if len(rec.deadlines) != 1 || rec.deadlines[0] == nonBlocking {
			t.Errorf("AckNonBlocking=%v: Ack context deadlines %v; want [%v]", nonBlocking, rec.deadlines, !nonBlocking)
		}
		if left := rec.Len("q") + rec.InFlight("q"); left != 0 {
			t.Errorf("AckNonBlocking=%v: %d messages left unacknowledged", nonBlocking, left)
		}
	}
}
