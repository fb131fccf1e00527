package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var errRefused = errors.New("server error: not enough non-faulty bookies available")

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestUntilAcceptedRepeatsARefusedStep(t *testing.T) {
	calls := 0
	err := untilAccepted(context.Background(), quietLog(), "subscribe", time.Minute, func() error {
		calls++
		if calls == 1 {
			return errRefused
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("err=%v calls=%d, want nil after 2 calls", err, calls)
	}
}

func TestUntilAcceptedGivesUpAtTheLimit(t *testing.T) {
	calls := 0
	err := untilAccepted(context.Background(), quietLog(), "subscribe", 1500*time.Millisecond, func() error {
		calls++
		return errRefused
	})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "subscribe (refused 2 times") {
		t.Fatalf("err=%v, want the step's error after 2 refusals", err)
	}
	if calls != 2 { // at 0 s and 1 s; the next wait (2 s) would pass the limit
		t.Fatalf("calls=%d, want 2", calls)
	}
}

func TestUntilAcceptedStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := untilAccepted(ctx, quietLog(), "subscribe", time.Minute, func() error {
		calls++
		return errRefused
	})
	if !errors.Is(err, errRefused) || calls != 1 {
		t.Fatalf("err=%v calls=%d, want the step's error after 1 call", err, calls)
	}
	// It says that it stopped, not that the limit passed.
	if !strings.Contains(err.Error(), "then stopped: context canceled") || strings.Contains(err.Error(), " in 1m") {
		t.Fatalf("err=%v, want it to say the context ended", err)
	}
}
