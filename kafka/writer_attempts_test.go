package kafka

import (
	"context"
	"errors"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// wrappingWriter wraps another Writer and exposes it through Unwrap, as a
// counting or tracing writer would.
type wrappingWriter struct{ w Writer }

func (x wrappingWriter) WriteMessages(ctx context.Context, msgs ...kafkago.Message) error {
	return x.w.WriteMessages(ctx, msgs...)
}
func (x wrappingWriter) Unwrap() Writer { return x.w }

// TestWithWriterRequiresOneAttempt: a kafka-go Writer given to WithWriter,
// directly or behind wrappers, must make one attempt per call (kafka-go's
// own retries would report a write cut off after its produce request went
// out as refused); New refuses any other, and accepts MaxAttempts 1 and
// writers it cannot look into.
func TestWithWriterRequiresOneAttempt(t *testing.T) {
	rf := WithReaderFactory(func(string) Reader { return nil })
	cases := []struct {
		name string
		w    Writer
		ok   bool
	}{
		{"kafka-go default (0 = 10 attempts)", &kafkago.Writer{}, false},
		{"kafka-go MaxAttempts 3", &kafkago.Writer{MaxAttempts: 3}, false},
		{"kafka-go MaxAttempts 1", &kafkago.Writer{MaxAttempts: 1}, true},
		{"wrapped default", wrappingWriter{wrappingWriter{&kafkago.Writer{}}}, false},
		{"wrapped MaxAttempts 1", wrappingWriter{&kafkago.Writer{MaxAttempts: 1}}, true},
		{"opaque writer", &fakeWriter{log: newFakeLog()}, true},
	}
	for _, c := range cases {
		tr, err := New(WithWriter(c.w), rf)
		if c.ok {
			if err != nil {
				t.Errorf("%s: New = %v, want it accepted", c.name, err)
				continue
			}
			_ = tr.Close()
			continue
		}
		if !errors.Is(err, babelqueue.ErrInvalidOption) || !strings.Contains(err.Error(), "MaxAttempts") {
			t.Errorf("%s: New = %v, want ErrInvalidOption naming MaxAttempts", c.name, err)
		}
	}
}

// TestWriterAttemptsStopsOnLoopingWrappers: a wrapper whose Unwrap returns
// itself is not followed forever.
func TestWriterAttemptsStopsOnLoopingWrappers(t *testing.T) {
	var loop selfWrapper
	if _, ok := writerAttempts(loop); ok {
		t.Fatal("writerAttempts found a kafka-go Writer in a self-wrapping writer")
	}
}

type selfWrapper struct{}

func (selfWrapper) WriteMessages(context.Context, ...kafkago.Message) error { return nil }
func (s selfWrapper) Unwrap() Writer                                        { return s }
