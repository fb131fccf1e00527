package babelqueue

import (
	"context"
	"time"
)

// ReinjectBacklogHook is called by a binding's re-injector each time it
// samples the backlog of its retry tiers (the Kafka binding: every
// WithReinjectBacklogInterval while Run runs), with one entry per tier
// queue it carries. The slice and its entries are the hook's only for the
// call.
type ReinjectBacklogHook interface {
	OnReinjectBacklog(ctx context.Context, tiers []ReinjectBacklog)
}

// ReinjectBacklog is what waits in one retry tier queue, as a re-injector
// sampled it from the broker.
type ReinjectBacklog struct {
	// Tier is the retry tier queue, TierIndex its 1-based position among
	// the configured tiers, and Queue the work queue it is carried to.
	Tier      string
	TierIndex int
	Queue     string
	// Group is the re-injector's consumer group (or subscription).
	Group string
	// Backlog is how many records are not carried yet: the end offset
	// minus the group's committed offset, summed over the partitions.
	Backlog int64
	// OldestAge is how long the oldest record not carried yet has waited
	// (the sample time minus its timestamp), and OldestLag how far past
	// its due time it is (OldestAge minus the tier's delay, never below
	// zero). Both are zero when Backlog is.
	OldestAge, OldestLag time.Duration
	// SampledAt is when the sample was taken, on the re-injector's clock.
	SampledAt time.Time
	// Err is why the tier could not be sampled (the broker unreachable,
	// say); the counts are then zero and mean nothing.
	Err error
}
