//go:build integration

package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestIntegrationStaleTierWarnsWithoutAReinjector: on a real broker, an
// App with retry tiers and no re-injector retries a failing message into
// its tier 1 (LogAppendTime, as EnsureTopics makes it); once it waited its
// 1s tier plus the 500ms of WithStaleTierWarning, the transport logs a
// warning naming the re-inject group and calls the StaleTierHook. A
// Reinjector of the same transport then carries it (its own group, not the
// App's), and the warning clears.
func TestIntegrationStaleTierWarnsWithoutAReinjector(t *testing.T) {
	topic, group := uniq("it-stale"), uniq("g")
	var logs bqtest.SyncBuffer
	hook := &staleHook{}
	tr := itTransport(t, WithGroupID(group), WithRetryTiers(time.Second, time.Hour), WithStaleTierWarning(500*time.Millisecond),
		WithReinjectHooks(hook), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ensure(t, tr, topic, 1)
	ctx := bgCtx(t, 90*time.Second)

	app, err := babelqueue.NewApp(tr, quiet, babelqueue.WithDefaultQueue(topic), babelqueue.WithPollTimeout(200*time.Millisecond),
		babelqueue.WithOnError(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan int, 4)
	if err := app.Handle("urn:it:stale", func(_ context.Context, env *babelqueue.Envelope) error {
		handled <- env.Attempts
		if env.Attempts == 0 {
			return errors.New("first delivery fails")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Consume(cctx, topic) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Consume: %v", err)
		}
	}()
	if _, err := app.Publish(ctx, "urn:it:stale", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if got := <-handled; got != 0 {
		t.Fatalf("first delivery saw attempts %d", got)
	}
	if !waitFor(30*time.Second, func() bool { return len(hook.calls()) > 0 }) {
		t.Fatalf("no stale tier reported; logs:\n%s", logs.String())
	}
	tb := hook.calls()[0]
	if tb.Tier != RetryTopic(topic, 1) || tb.Group != group+".reinject" || tb.Backlog != 1 || tb.OldestLag <= 500*time.Millisecond {
		t.Errorf("stale tier %+v", tb)
	}
	if !strings.Contains(logs.String(), "retry tier records wait past their tier") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}

	stopReinjector := startReinjector(t, ctx, tr, topic)
	defer stopReinjector()
	select {
	case got := <-handled:
		if got != 1 {
			t.Errorf("re-injected delivery saw attempts %d, want 1", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retry was never re-injected")
	}
	if !waitFor(30*time.Second, func() bool { return strings.Contains(logs.String(), "retry tier is carried again") }) {
		t.Fatalf("the warning never cleared; logs:\n%s", logs.String())
	}
}
