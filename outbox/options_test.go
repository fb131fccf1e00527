package outbox_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/outbox"
)

func TestNewReportsEveryInvalidOption(t *testing.T) {
	ob, err := outbox.New(0, outbox.WithTable("bad name"), outbox.WithClock(nil), nil)
	if ob != nil || !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("New = %v, %v; want nil and ErrInvalidOption", ob, err)
	}
	for _, want := range []string{"unknown dialect", `table name "bad name"`, "nil clock", "nil option"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}

func TestNewRelayReportsEveryInvalidOption(t *testing.T) {
	r, err := outbox.NewRelay(nil, nil, nil, outbox.WithBatchSize(0), outbox.WithInFlight(-1), outbox.WithParallelism(0),
		outbox.WithLease(0), outbox.WithPoll(0), outbox.WithBackoff(time.Second, time.Millisecond), outbox.WithSendTimeout(0),
		outbox.WithRelayID(""), outbox.WithLogger(nil))
	if r != nil || !errors.Is(err, babelqueue.ErrInvalidOption) {
		t.Fatalf("NewRelay = %v, %v; want nil and ErrInvalidOption", r, err)
	}
	for _, want := range []string{"nil database", "nil outbox", "nil sender", "batch size 0", "batches in flight -1", "parallelism 0",
		"lease 0s", "poll interval 0s", "backoff 1s..1ms", "send timeout 0s", "empty relay id", "nil logger"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
}
