package kafka

import "time"

// ReinjectEvent describes one retry record that a Reinjector wrote back to
// its work topic.
type ReinjectEvent struct {
	// WorkTopic is the topic the record was written to (its
	// bq-original-topic header, else the work topic of RetryTopic).
	WorkTopic string
	// RetryTopic is the retry-tier topic the record was read from.
	RetryTopic string
	// Tier is the delay of RetryTopic's tier.
	Tier time.Duration
	// Partition and Offset locate the record on RetryTopic.
	Partition int
	Offset    int64
	// Due is when the record became due: its timestamp + Tier, clamped so
	// that a record stamped later than the Reinjector's clock counts from
	// the time the Reinjector first looked at it (a future-dated record
	// waits at most one tier; see ReinjectWait).
	Due time.Time
	// Written is the time on the transport's clock (WithClock) when the
	// broker acknowledged the write to WorkTopic.
	Written time.Time
}

// Lag is how late the record was written back: Written - Due. It is
// negative only if the clock went backwards.
func (e ReinjectEvent) Lag() time.Duration { return e.Written.Sub(e.Due) }

// ReinjectObserver is called by a Reinjector once per record, after the
// broker acknowledged the record's write to its work topic and before its
// retry-topic offset is marked for commit. It runs on the goroutine that
// carries the record's partition, so it should return quickly: that
// partition waits for it. It is diagnostic only: a panic in it is recovered
// and logged, and it never changes what is written or committed.
type ReinjectObserver func(ReinjectEvent)

// observe calls the observer of the transport with ev, if any, recovering a
// panic.
func (r *Reinjector) observe(ev ReinjectEvent) {
	fn := r.t.cfg.reinjectObserver
	if fn == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Warn("kafka: ReinjectObserver panicked", "panic", p, "from", ev.RetryTopic,
				"partition", ev.Partition, "offset", ev.Offset)
		}
	}()
	fn(ev)
}
