package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// setupLimit bounds how long a setup step (creating a topic or an audit
// subscription) is repeated while the broker refuses it. A Pulsar
// standalone that was just killed and restarted may, for a while, report
// its only bookie as unavailable for new ledgers ("Not enough non-faulty
// bookies"); such a refusal is the broker settling, not a finding.
const setupLimit = 90 * time.Second

// untilAccepted calls step until it succeeds, ctx ends or limit passes,
// waiting 1 s, then 2 s, up to 5 s between calls. Each refusal is logged;
// the last one is returned, wrapped with what and the number of attempts
// (and with ctx's error when ctx ended).
func untilAccepted(ctx context.Context, log *slog.Logger, what string, limit time.Duration, step func() error) error {
	deadline := time.Now().Add(limit)
	stopped := func(attempt int, err error) error {
		return fmt.Errorf("%s (refused %d times, then stopped: %w): %w", what, attempt, ctx.Err(), err)
	}
	wait := time.Second
	for attempt := 1; ; attempt++ {
		err := step()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return stopped(attempt, err)
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%s (refused %d times in %s): %w", what, attempt, limit, err)
		}
		log.Warn("setup step refused; repeating it", "step", what, "attempt", attempt, "err", err)
		if !sleepCtx(ctx, wait) {
			return stopped(attempt, err)
		}
		wait = min(2*wait, 5*time.Second)
	}
}
