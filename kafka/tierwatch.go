package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// DefaultStaleTierAfter is how long past its tier a retry record may wait
// before a consuming transport warns that no Reinjector carries it.
const DefaultStaleTierAfter = time.Minute

// staleTierRelog is how often a tier that stays stale is logged again.
const staleTierRelog = 5 * time.Minute

// WithStaleTierWarning sets how long past its tier the oldest record of a
// retry tier may wait before the transport warns; 0 turns the check off.
//
// A transport with retry tiers and brokers checks the tiers of every
// queue it consumes, every after/2 (at least 100ms, at most 30s): it reads
// the backlog the Reinjector group (ReinjectGroupID) has not carried, as
// WithReinjectBacklogInterval describes. When the oldest record waited
// longer than its tier plus after, it logs a warning (again every five
// minutes while it lasts) and calls every driver.StaleTierHook of
// WithReinjectHooks; it logs at info level when the tier is carried again.
// A tier topic that does not exist is not reported. Negative is rejected.
func WithStaleTierWarning(after time.Duration) Option {
	return func(c *config) {
		if after < 0 {
			c.fail("stale tier warning %v is negative", after)
			return
		}
		c.staleAfter = after
	}
}

// tierWatch checks the retry tiers of the queues a transport consumes
// (WithStaleTierWarning). Its goroutine starts with the first queue and
// stops when the transport closes.
type tierWatch struct {
	t     *Transport
	group string
	after time.Duration
	every time.Duration

	mu       sync.Mutex
	closed   bool
	queues   []string
	seen     map[string]bool
	cancel   context.CancelFunc
	done     chan struct{}
	warnedAt map[string]time.Time // tier topic -> when it was last logged as stale
}

// newTierWatch returns the watch of t, or nil when t has nothing to watch:
// no tiers, no brokers, no re-inject group or the check turned off.
func newTierWatch(t *Transport) *tierWatch {
	cfg := &t.cfg
	group := cfg.reinjectGroupID()
	if len(cfg.tiers) == 0 || len(cfg.brokers) == 0 || cfg.staleAfter <= 0 || group == "" {
		return nil
	}
	return &tierWatch{t: t, group: group, after: cfg.staleAfter,
		every: min(max(cfg.staleAfter/2, 100*time.Millisecond), 30*time.Second),
		seen:  make(map[string]bool), warnedAt: make(map[string]time.Time)}
}

// watch adds queue to the queues checked, starting the goroutine with the
// first one. It is a no-op on a nil watch and after stop.
func (w *tierWatch) watch(queue string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.seen[queue] {
		return
	}
	w.seen[queue] = true
	w.queues = append(w.queues, queue)
	if w.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
}

// stop ends the goroutine and waits for it.
func (w *tierWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (w *tierWatch) run(ctx context.Context) {
	var b *backlogBroker
	watched := 0 // queues b reads the batch headers of
	defer func() {
		if b != nil {
			b.close()
		}
	}()
	for sleep(ctx, w.t.cfg.clock, w.every) {
		queues := w.watched()
		if b == nil || len(queues) != watched {
			if b != nil {
				b.close()
			}
			b, watched = newBacklogBroker(&w.t.cfg, w.tierTopics(queues)), len(queues)
		}
		w.check(ctx, b, queues)
	}
}

// watched returns the queues watched so far, in the order they came.
func (w *tierWatch) watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.queues...)
}

// tierTopics returns the tier topics of queues.
func (w *tierWatch) tierTopics(queues []string) []string {
	var out []string
	for _, q := range queues {
		for i := range w.t.cfg.tiers {
			out = append(out, RetryTopic(q, i+1))
		}
	}
	return out
}

// check samples every tier of queues once and reports the stale ones.
func (w *tierWatch) check(ctx context.Context, b *backlogBroker, queues []string) {
	ctx, cancel := context.WithTimeout(ctx, backlogTimeout(w.every))
	defer cancel()
	cfg := &w.t.cfg
	log := cfg.log()
	for _, q := range queues {
		for i, tier := range cfg.tiers {
			topic := RetryTopic(q, i+1)
			tb := driver.ReinjectBacklog{Tier: topic, TierIndex: i + 1, Queue: q, Group: w.group}
			err := backlogOf(ctx, b, w.group, topic, tier, cfg.clock.Now, &tb)
			tb.SampledAt = cfg.clock.Now()
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, kafkago.UnknownTopicOrPartition):
				continue // nothing was ever retried through this tier
			case err != nil:
				log.Debug("kafka: stale tier check failed", "tier", topic, "group", w.group, "err", err)
				continue
			}
			if tb.OldestLag <= w.after {
				if _, was := w.warnedAt[topic]; was {
					delete(w.warnedAt, topic)
					log.Info("kafka: retry tier is carried again", "tier", topic, "group", w.group, "backlog", tb.Backlog)
				}
				continue
			}
			if last, was := w.warnedAt[topic]; !was || tb.SampledAt.Sub(last) >= staleTierRelog {
				w.warnedAt[topic] = tb.SampledAt
				log.Warn("kafka: retry tier records wait past their tier: is a Reinjector running in the group?",
					"tier", topic, "queue", q, "group", w.group, "tier_delay", tier, "backlog", tb.Backlog,
					"oldest_age", tb.OldestAge, "oldest_lag", tb.OldestLag)
			}
			for _, h := range cfg.staleTierHooks {
				func() {
					defer func() {
						if p := recover(); p != nil {
							log.Warn("kafka: stale tier hook panicked", "panic", fmt.Sprint(p))
						}
					}()
					h.OnStaleTier(ctx, tb)
				}()
			}
		}
	}
}
