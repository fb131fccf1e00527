package otel

import (
	"context"
	"fmt"
	"sync"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Re-injector backlog gauges, observed from the latest sample a
// re-injector reported (driver.ReinjectBacklogHook). Each carries
// messaging.system, messaging.destination.name (the retry tier queue),
// messaging.consumer.group.name (the re-injector's group) and AttrTier.
const (
	// MetricReinjectBacklog is how many records wait in a retry tier
	// queue, not carried back yet: end offset minus committed ({record}).
	MetricReinjectBacklog = "babelqueue.reinject.backlog"
	// MetricReinjectOldestAge is how long the oldest waiting record of a
	// tier has waited, in seconds.
	MetricReinjectOldestAge = "babelqueue.reinject.oldest_age"
	// MetricReinjectOldestLag is how far past its due time the oldest
	// waiting record of a tier is, in seconds (0 when none is overdue).
	MetricReinjectOldestLag = "babelqueue.reinject.oldest_lag"
)

// AttrTier is the 1-based position of a retry tier among the configured
// tiers.
const AttrTier = attribute.Key("babelqueue.tier")

// backlogs holds the latest sample of every tier, by tier queue and group.
type backlogs struct {
	mu    sync.Mutex
	tiers map[backlogKey]driver.ReinjectBacklog
}

type backlogKey struct{ tier, group string }

// registerBacklogGauges creates the gauges on m, observed from b.
func registerBacklogGauges(m metric.Meter, system string, b *backlogs) error {
	backlog, err := m.Int64ObservableGauge(MetricReinjectBacklog, metric.WithUnit("{record}"),
		metric.WithDescription("Records waiting in a retry tier, not carried back to their work queue yet."))
	if err != nil {
		return fmt.Errorf("otel: instrument %s: %w", MetricReinjectBacklog, err)
	}
	age, err := m.Float64ObservableGauge(MetricReinjectOldestAge, metric.WithUnit("s"),
		metric.WithDescription("How long the oldest record waiting in a retry tier has waited."))
	if err != nil {
		return fmt.Errorf("otel: instrument %s: %w", MetricReinjectOldestAge, err)
	}
	lag, err := m.Float64ObservableGauge(MetricReinjectOldestLag, metric.WithUnit("s"),
		metric.WithDescription("How far past its due time the oldest record waiting in a retry tier is."))
	if err != nil {
		return fmt.Errorf("otel: instrument %s: %w", MetricReinjectOldestLag, err)
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, tb := range b.tiers {
			attrs := []attribute.KeyValue{
				semconv.MessagingSystemKey.String(system),
				semconv.MessagingDestinationName(tb.Tier),
				AttrTier.Int(tb.TierIndex),
			}
			if tb.Group != "" {
				attrs = append(attrs, semconv.MessagingConsumerGroupName(tb.Group))
			}
			opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
			o.ObserveInt64(backlog, tb.Backlog, opt)
			o.ObserveFloat64(age, tb.OldestAge.Seconds(), opt)
			o.ObserveFloat64(lag, tb.OldestLag.Seconds(), opt)
		}
		return nil
	}, backlog, age, lag)
	if err != nil {
		return fmt.Errorf("otel: register the re-inject backlog gauges: %w", err)
	}
	return nil
}

// OnReinjectBacklog keeps the latest sample of every tier for the backlog
// gauges. A tier whose sample failed is not observed until a sample of it
// succeeds again, so that a gauge never shows a stale count as current.
func (h *Hooks) OnReinjectBacklog(_ context.Context, tiers []driver.ReinjectBacklog) {
	b := h.t.backlogs
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, tb := range tiers {
		k := backlogKey{tb.Tier, tb.Group}
		if tb.Err != nil {
			delete(b.tiers, k)
			continue
		}
		b.tiers[k] = tb
	}
}

var _ driver.ReinjectBacklogHook = (*Hooks)(nil)
