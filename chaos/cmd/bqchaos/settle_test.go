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

var errRefused = errors.New("Not enough non-faulty bookies available")

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
	start := time.Now()
	err := untilAccepted(context.Background(), quietLog(), "subscribe", 1500*time.Millisecond, func() error {
		calls++
		return errRefused
	})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "subscribe (refused 2 times") {
		t.Fatalf("err=%v, want the step's error after 2 refusals", err)
	}
	if calls != 2 || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("calls=%d after %s, want 2 within the limit", calls, time.Since(start))
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
}
