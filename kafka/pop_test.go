package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// gatedReader blocks each fetch until a record is sent on next or the
// fetch context ends, and records the context's error.
type gatedReader struct {
	next chan kafkago.Message
	errs chan error
}

func (r *gatedReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	select {
	case m := <-r.next:
		return m, nil
	case <-ctx.Done():
		r.errs <- ctx.Err()
		return kafkago.Message{}, ctx.Err()
	}
}

func (r *gatedReader) CommitMessages(context.Context, ...kafkago.Message) error { return nil }

func TestPopBoundsEachFetchByTimeoutAndCallerContext(t *testing.T) {
	r := &gatedReader{next: make(chan kafkago.Message, 1), errs: make(chan error, 10)}
	tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithReaderFactory(func(string) Reader { return r }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := envelope(t, 0)

	// Several empty polls in a row on the same caller context: each ends
	// at its own timeout as an empty poll, and the next starts afresh.
	for i := 0; i < 3; i++ {
		start := time.Now()
		m, err := tr.Pop(ctx, "orders", 20*time.Millisecond)
		if m != nil || err != nil {
			t.Fatalf("empty poll %d = %v, %v; want nil, nil", i, m, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("empty poll %d took %v", i, took)
		}
		if e := <-r.errs; !errors.Is(e, context.DeadlineExceeded) {
			t.Fatalf("fetch %d ended with %v, want the poll deadline", i, e)
		}
	}

	// A record that is there is delivered, after a timed-out poll.
	r.next <- kafkago.Message{Topic: "orders", Value: []byte(body)}
	m, err := tr.Pop(ctx, "orders", time.Hour)
	if err != nil || m == nil || m.Body != body {
		t.Fatalf("Pop = %v, %v; want the record", m, err)
	}

	// A long poll ends as soon as the caller's context is cancelled, with
	// its error.
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	m, err = tr.Pop(ctx, "orders", time.Hour)
	if m != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop after cancel = %v, %v; want context.Canceled", m, err)
	}
	if e := <-r.errs; !errors.Is(e, context.Canceled) {
		t.Fatalf("fetch ended with %v, want the caller's cancellation", e)
	}

	// A caller context that is already over ends the fetch at once; a
	// sooner caller deadline bounds the poll.
	if _, err := tr.Pop(ctx, "orders", time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop on a cancelled context = %v, want context.Canceled", err)
	}
	<-r.errs
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := tr.Pop(dctx, "orders", time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pop past the caller's deadline = %v, want context.DeadlineExceeded", err)
	}
	<-r.errs
	// And a fresh context polls normally again.
	if m, err := tr.Pop(context.Background(), "orders", 10*time.Millisecond); m != nil || err != nil {
		t.Fatalf("Pop after the cancelled ones = %v, %v; want an empty poll", m, err)
	}
}

func TestFetchContextCarriesTheCallersValuesAndDeadline(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Minute))
	defer cancel()
	c := getFetchContext()
	defer putFetchContext(c)
	c.arm(parent, time.Hour)
	defer c.disarm()
	if c.Value(key{}) != "v" {
		t.Error("the fetch context lost the caller's values")
	}
	pd, _ := parent.Deadline()
	if d, ok := c.Deadline(); !ok || !d.Equal(pd) {
		t.Errorf("Deadline = %v, %v; want the caller's sooner %v", d, ok, pd)
	}
	if c.Err() != nil {
		t.Errorf("Err = %v before any deadline", c.Err())
	}
}
