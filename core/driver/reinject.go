package driver

import (
	"context"
	"time"
)

// ReinjectHook is called by a binding's re-injector for every retry record
// it carried back to its work queue, or failed to. Register it with the
// binding (the Kafka binding: WithReinjectHooks); the App's WithHooks
// accepts it too, so that one telemetry value serves both.
type ReinjectHook interface {
	OnReinject(ctx context.Context, r *Reinjection)
}

// Reinjection is one retry record a re-injector carried back, or failed
// to, as reported to ReinjectHook.
type Reinjection struct {
	// Tier is the retry tier topic the record was read from, and TierIndex
	// its 1-based position among the configured tiers.
	Tier      string
	TierIndex int
	// Partition and Offset locate the retry record in Tier (the Kafka
	// binding: its partition and offset), so that a record carried twice
	// (one position reported twice) can be told from two records.
	Partition int
	Offset    int64
	// Queue is the work queue it was written back to.
	Queue string
	// Delay is the record's delay (its bq-delay, else the tier's).
	Delay time.Duration
	// Lag is how late the write back was acknowledged past the record's due
	// time; negative when it went early (it never should).
	Lag time.Duration
	// Err is why the write back failed; nil when it succeeded.
	Err error
}

// ReinjectBacklogHook is called by a binding's re-injector each time it
// samples the backlog of its retry tiers, with one entry per tier queue it
// carries. The Kafka binding samples every WithReinjectBacklogInterval
// while Run runs. The slice and its entries are the hook's only for the
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

// StaleTierHook is told when the oldest record of a retry tier queue has
// waited well past its delay, so its re-injector is missing or behind.
//
// The Kafka binding calls it from a consuming transport with retry tiers
// (WithStaleTierWarning sets "well past"), once per sample in which the
// tier is stale, with the sample; Group is the re-injector group whose
// offsets were read. Register it with the binding (WithReinjectHooks); the
// App's WithHooks accepts it too.
type StaleTierHook interface {
	OnStaleTier(ctx context.Context, tier ReinjectBacklog)
}
