package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

type errReader struct{ err error }

func (r errReader) FetchMessage(context.Context) (kafkago.Message, error) {
	return kafkago.Message{}, r.err
}
func (r errReader) CommitMessages(context.Context, ...kafkago.Message) error { return nil }

func TestPopReportsOnlyPermanentGroupErrors(t *testing.T) {
	cases := []struct {
		err       error
		permanent bool
	}{
		{kafkago.GroupCoordinatorNotAvailable, false},
		{fmt.Errorf("join: %w", kafkago.RebalanceInProgress), false},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), false},
		{kafkago.SASLAuthenticationFailed, true},
		{fmt.Errorf("join: %w", kafkago.GroupAuthorizationFailed), true},
		{kafkago.InvalidGroupId, true},
	}
	for _, c := range cases {
		tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithReaderFactory(func(string) Reader { return errReader{c.err} }))
		if err != nil {
			t.Fatal(err)
		}
		m, err := tr.Pop(context.Background(), "orders", time.Second)
		if m != nil {
			t.Fatalf("%v: got a message", c.err)
		}
		if got := err != nil; got != c.permanent {
			t.Fatalf("Pop with %v returned %v, want an error: %v", c.err, err, c.permanent)
		}
		if c.permanent && !errors.Is(err, c.err) {
			t.Fatalf("error %v does not wrap %v", err, c.err)
		}
	}
}

// scriptedGroup returns the errors it was given, then blocks.
type scriptedGroup struct{ errs []error }

func (g *scriptedGroup) Next(ctx context.Context) (groupGeneration, error) {
	if len(g.errs) > 0 {
		err := g.errs[0]
		g.errs = g.errs[1:]
		return nil, err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (g *scriptedGroup) Close() error { return nil }

func TestReinjectorRetriesTransientGroupErrors(t *testing.T) {
	run := func(errs ...error) error {
		g := &scriptedGroup{errs: errs}
		tr, err := New(WithWriter(&fakeWriter{log: newFakeLog()}), WithReaderFactory(func(string) Reader { return nil }),
			WithGroupID("g"), WithRetryTiers(time.Second), func(c *config) { c.groupFactory = func(string, []string) groupMember { return g } })
		if err != nil {
			t.Fatal(err)
		}
		r, err := tr.NewReinjector("orders")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return r.Run(ctx)
	}
	if err := run(kafkago.GroupCoordinatorNotAvailable, kafkago.RebalanceInProgress); err != nil {
		t.Fatalf("transient errors stopped Run: %v", err)
	}
	if err := run(kafkago.GroupCoordinatorNotAvailable, kafkago.GroupAuthorizationFailed); !errors.Is(err, kafkago.GroupAuthorizationFailed) {
		t.Fatalf("permanent error: Run returned %v", err)
	}
}
