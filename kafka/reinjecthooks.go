package kafka

import (
	"context"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// WithReinjectHooks registers hooks that the transport's Reinjectors report
// to; a hook never changes what is written or committed. Every
// driver.ReinjectHook among them is called once per retry record written
// back to its work topic, after the broker acknowledged the write and
// before the retry offset is marked for commit, and once per record of
// every failed write, with Reinjection.Err set. Values that implement
// neither hook are ignored. A hook runs on the goroutine that carries the
// record's partition, which waits for it; a panic in it is recovered and
// logged. Every driver.ReinjectBacklogHook among them receives the backlog
// of the retry tiers, sampled while Run runs (see
// WithReinjectBacklogInterval), and every driver.StaleTierHook the stale
// tiers the transport finds while it consumes (see WithStaleTierWarning).
func WithReinjectHooks(hooks ...babelqueue.Hook) Option {
	return func(c *config) {
		for _, h := range hooks {
			if x, ok := h.(driver.ReinjectHook); ok {
				c.reinjectHooks = append(c.reinjectHooks, x)
			}
			if x, ok := h.(driver.ReinjectBacklogHook); ok {
				c.reinjectBacklogHooks = append(c.reinjectBacklogHooks, x)
			}
			if x, ok := h.(driver.StaleTierHook); ok {
				c.staleTierHooks = append(c.staleTierHooks, x)
			}
		}
	}
}

// reinjection describes the write back of in, the retry record due at due,
// to out's topic, acknowledged at written (or failed with err).
func (w *partitionWorker) reinjection(out, in *kafkago.Message, due, written time.Time, err error) driver.Reinjection {
	delay := w.tier
	if v, ok := lastHeader(in.Headers, wire.HeaderDelay); ok {
		if ms, perr := strconv.ParseInt(v, 10, 64); perr == nil && ms >= 0 {
			delay = time.Duration(ms) * time.Millisecond
		}
	}
	return driver.Reinjection{
		Tier: w.topic, TierIndex: w.tierIndex, Partition: in.Partition, Offset: in.Offset,
		Queue: out.Topic, Delay: delay,
		Lag: written.Sub(due), Err: err,
	}
}

// report hands one record's re-injection to every hook, recovering a panic.
func (w *partitionWorker) report(ctx context.Context, out, in *kafkago.Message, due, at time.Time, err error) {
	hooks := w.r.t.cfg.reinjectHooks
	if len(hooks) == 0 {
		return
	}
	ev := w.reinjection(out, in, due, at, err)
	for _, h := range hooks {
		func() {
			defer func() {
				if p := recover(); p != nil {
					w.r.log.Warn("kafka: re-inject hook panicked", "panic", p, "from", w.topic,
						"partition", w.partition, "offset", in.Offset)
				}
			}()
			h.OnReinject(ctx, &ev)
		}()
	}
}
