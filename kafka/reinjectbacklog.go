package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	kafkago "github.com/segmentio/kafka-go"
)

// reinjectBacklogTimeout bounds the broker calls of one sample; a sample
// is also bounded by the interval (but given at least
// minReinjectBacklogTimeout), so that an unreachable broker is reported
// within one interval plus that bound.
const (
	reinjectBacklogTimeout    = 10 * time.Second
	minReinjectBacklogTimeout = time.Second
)

// backlogTimeout is the bound of one sample taken every every.
func backlogTimeout(every time.Duration) time.Duration {
	return min(reinjectBacklogTimeout, max(every, minReinjectBacklogTimeout))
}

// WithReinjectBacklogInterval sets how often a running Reinjector samples
// the backlog of every retry tier it carries for its backlog hooks. The
// hooks are the driver.ReinjectBacklogHook values of WithReinjectHooks; the
// first sample is taken when Run starts. The sample reads, per tier topic,
// the end offsets, the group's committed offsets and the timestamp of the
// oldest record not carried yet, through connections of its own; a
// Reinjector without such hooks, or without brokers (WithWriter and a group
// factory only), samples nothing. A non-positive interval is rejected.
func WithReinjectBacklogInterval(d time.Duration) Option {
	return positive("re-inject backlog interval", d, func(c *config) *time.Duration { return &c.reinjectBacklogEvery })
}

// startBacklog starts the backlog sampler of a Run when it has hooks to
// report to; the returned function stops it and waits for it.
func (r *Reinjector) startBacklog(ctx context.Context) (stop func()) {
	cfg := &r.t.cfg
	if len(cfg.reinjectBacklogHooks) == 0 || len(cfg.brokers) == 0 {
		return func() {}
	}
	every := cfg.reinjectBacklogEvery
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := newBacklogBroker(cfg, r.topics)
		defer b.close()
		for {
			r.reportBacklog(ctx, r.sampleBacklog(ctx, b, backlogTimeout(every)))
			if !sleep(ctx, r.clock, every) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// sampleBacklog reads the backlog of every tier topic, in tier order,
// within timeout.
func (r *Reinjector) sampleBacklog(ctx context.Context, b *backlogBroker, timeout time.Duration) []driver.ReinjectBacklog {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]driver.ReinjectBacklog, 0, len(r.topics))
	for _, topic := range r.topics {
		tb := driver.ReinjectBacklog{Tier: topic, TierIndex: r.indexOf[topic], Queue: r.workOf[topic], Group: r.groupID}
		tb.Err = r.tierBacklog(ctx, b, topic, &tb)
		if tb.Err != nil {
			tb.Backlog, tb.OldestAge, tb.OldestLag = 0, 0, 0
		}
		tb.SampledAt = r.clock.Now()
		out = append(out, tb)
	}
	return out
}

// tierBacklog fills the counts of tb from the broker (see backlogOf).
func (r *Reinjector) tierBacklog(ctx context.Context, b *backlogBroker, topic string, tb *driver.ReinjectBacklog) error {
	return backlogOf(ctx, b, r.groupID, topic, r.tierOf[topic], r.clock.Now, tb)
}

// backlogOf fills the counts of tb from the broker: per partition of
// topic, the records from group's committed offset (the first offset when
// it committed none, as a new group starts there) to the end offset, and
// the timestamp of the first of them, aged at now() against tier.
func backlogOf(ctx context.Context, b *backlogBroker, group, topic string, tier time.Duration, now func() time.Time, tb *driver.ReinjectBacklog) error {
	parts, err := b.partitions(ctx, topic)
	if err != nil {
		return err
	}
	first, next, err := b.boundsOnce(ctx, topic, parts)
	if err != nil {
		return err
	}
	committed, err := b.committed(ctx, group, topic, parts)
	if err != nil {
		return err
	}
	var oldest time.Time
	for _, p := range parts {
		start := first[p]
		if c, ok := committed[p]; ok && c.CommittedOffset > start {
			start = c.CommittedOffset
		}
		if next[p] <= start {
			continue
		}
		tb.Backlog += next[p] - start
		ts, err := b.firstRecordTime(ctx, topic, p, start)
		if err != nil {
			return err
		}
		if !ts.IsZero() && (oldest.IsZero() || ts.Before(oldest)) {
			oldest = ts
		}
	}
	if tb.Backlog > 0 && !oldest.IsZero() {
		tb.OldestAge = max(now().Sub(oldest), 0)
		tb.OldestLag = max(tb.OldestAge-tier, 0)
	}
	return nil
}

// backlogBroker is the broker client of the backlog sampler: a
// redriveBroker whose connections read the record batch headers of its
// fetches (fetchTap), so that the oldest record's timestamp is its append
// time on a LogAppendTime tier, as the workers count it.
type backlogBroker struct {
	*redriveBroker
	batches *batchLogs
}

func newBacklogBroker(cfg *config, tiers []string) *backlogBroker {
	logs := newBatchLogs(tiers)
	return &backlogBroker{redriveBroker: newRedriveBrokerOn(cfg, tappedNetTransport(cfg, logs.add)), batches: logs}
}

// firstRecordTime returns the timestamp of the first record of
// topic/partition at or after offset (its batch's append time on a
// LogAppendTime batch); zero when there is none.
func (b *backlogBroker) firstRecordTime(ctx context.Context, topic string, partition int, offset int64) (time.Time, error) {
	res, err := b.client.Fetch(ctx, &kafkago.FetchRequest{
		Topic: topic, Partition: partition, Offset: offset,
		MinBytes: 1, MaxBytes: 64 << 10, MaxWait: 100 * time.Millisecond,
	})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return time.Time{}, wrapf(err, "read %s/%d at %d", topic, partition, offset)
	}
	for {
		rec, err := res.Records.ReadRecord()
		switch {
		case errors.Is(err, io.EOF):
			return time.Time{}, nil
		case err != nil:
			return time.Time{}, wrapf(err, "read %s/%d at %d", topic, partition, offset)
		}
		if rec.Offset >= offset {
			// Fetch returns once the whole response was read: the tap has
			// seen the header of the record's batch.
			return b.batches.recordTime(topic, partition, rec.Offset, rec.Time), nil
		}
	}
}

// reportBacklog hands one sample to every backlog hook, recovering a
// panic.
func (r *Reinjector) reportBacklog(ctx context.Context, tiers []driver.ReinjectBacklog) {
	if ctx.Err() != nil {
		return
	}
	for _, tb := range tiers {
		if tb.Err != nil {
			r.log.Warn("kafka: re-injector backlog sample failed", "tier", tb.Tier, "group", tb.Group, "err", tb.Err)
		}
	}
	for _, h := range r.t.cfg.reinjectBacklogHooks {
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.log.Warn("kafka: re-inject backlog hook panicked", "panic", fmt.Sprint(p))
				}
			}()
			h.OnReinjectBacklog(ctx, tiers)
		}()
	}
}
