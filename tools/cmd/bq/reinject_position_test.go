package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// TestReinjectLogsCarriedPositionsAtDebug: with -v (debug level) bq
// reinject logs the tier, partition and offset of every record it carried
// or failed to, so that one record carried twice shows as one position
// logged twice; at the default level it logs none of them.
func TestReinjectLogsCarriedPositionsAtDebug(t *testing.T) {
	ctx := context.Background()
	carried := &driver.Reinjection{Tier: "orders.retry.1", TierIndex: 1, Partition: 3, Offset: 42, Queue: "orders", Delay: time.Second}
	failed := &driver.Reinjection{Tier: "orders.retry.2", TierIndex: 2, Partition: 1, Offset: 7, Queue: "orders", Delay: 2 * time.Second, Err: errors.New("broker down")}
	durations := map[string]time.Duration{"orders.retry.1": time.Second, "orders.retry.2": 2 * time.Second}

	var debug bytes.Buffer
	m := &tierMismatch{durations: durations, counts: map[string]int64{},
		log: slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	m.OnReinject(ctx, carried)
	m.OnReinject(ctx, carried)
	m.OnReinject(ctx, failed)
	out := debug.String()
	if n := strings.Count(out, "tier=orders.retry.1 partition=3 offset=42"); n != 2 {
		t.Errorf("the record carried twice is logged %d times at its position, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "write back failed") || !strings.Contains(out, "partition=1 offset=7") {
		t.Errorf("the failed write back is not logged with its position:\n%s", out)
	}

	var quiet bytes.Buffer
	m = &tierMismatch{durations: durations, counts: map[string]int64{},
		log: slog.New(slog.NewTextHandler(&quiet, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	m.OnReinject(ctx, carried)
	m.OnReinject(ctx, failed)
	if quiet.Len() != 0 {
		t.Errorf("logged at warn level: %s", quiet.String())
	}
}
