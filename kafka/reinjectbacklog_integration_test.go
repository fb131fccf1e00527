//go:build integration

package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	kafkago "github.com/segmentio/kafka-go"
)

// backlogRecorder keeps every backlog sample a Reinjector reports.
type backlogRecorder struct {
	mu      sync.Mutex
	samples [][]driver.ReinjectBacklog
}

func (b *backlogRecorder) OnReinjectBacklog(_ context.Context, tiers []driver.ReinjectBacklog) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.samples = append(b.samples, append([]driver.ReinjectBacklog(nil), tiers...))
}

// waitFor returns the first sample for which ok holds, failing after d.
func (b *backlogRecorder) waitFor(t *testing.T, d time.Duration, ok func([]driver.ReinjectBacklog) bool) []driver.ReinjectBacklog {
	t.Helper()
	deadline := time.Now().Add(d)
	seen := 0
	for time.Now().Before(deadline) {
		b.mu.Lock()
		for ; seen < len(b.samples); seen++ {
			if ok(b.samples[seen]) {
				s := b.samples[seen]
				b.mu.Unlock()
				return s
			}
		}
		b.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var last []driver.ReinjectBacklog
	if len(b.samples) > 0 {
		last = b.samples[len(b.samples)-1]
	}
	t.Fatalf("no backlog sample matched within %v (%d samples, last %+v)", d, len(b.samples), last)
	return nil
}

// TestIntegrationReinjectBacklogPerTier: a running Reinjector reports, per
// tier topic, the records not carried yet (end offset minus committed),
// the age of the oldest and how overdue it is: the short tier drains to
// zero once carried, the long tier keeps its records, with a growing age
// and no lag before they are due.
func TestIntegrationReinjectBacklogPerTier(t *testing.T) {
	topic := uniq("it-backlog")
	tiers := WithRetryTiers(time.Second, time.Minute)
	ensure(t, itTransport(t, tiers), topic, 2)
	ctx := bgCtx(t, 90*time.Second)
	var msgs []kafkago.Message
	for i := range 2 {
		msgs = append(msgs, kafkago.Message{Topic: RetryTopic(topic, 1), Partition: i, Value: []byte(`{"n":1}`)})
	}
	for i := range 3 {
		msgs = append(msgs, kafkago.Message{Topic: RetryTopic(topic, 2), Key: []byte{byte(i)}, Value: []byte(`{"n":2}`)})
	}
	produceRaw(t, msgs...)

	rec := &backlogRecorder{}
	group := uniq("reinject")
	tr := itTransport(t, WithReinjectGroupID(group), tiers, WithReinjectHooks(rec), WithReinjectBacklogInterval(200*time.Millisecond))
	stopReinjector := startReinjector(t, ctx, tr, topic)
	defer stopReinjector()

	first := rec.waitFor(t, 30*time.Second, func(s []driver.ReinjectBacklog) bool {
		return len(s) == 2 && s[0].Err == nil && s[1].Err == nil && s[0].Backlog == 0 && s[1].Backlog == 3
	})
	for i, tb := range first {
		if tb.Tier != RetryTopic(topic, i+1) || tb.TierIndex != i+1 || tb.Queue != topic || tb.Group != group || tb.SampledAt.IsZero() {
			t.Errorf("tier %d reported as %+v", i+1, tb)
		}
	}
	if first[0].OldestAge != 0 || first[0].OldestLag != 0 {
		t.Errorf("drained tier: oldest age %v lag %v, want 0", first[0].OldestAge, first[0].OldestLag)
	}
	if first[1].OldestAge <= 0 || first[1].OldestAge > time.Minute || first[1].OldestLag != 0 {
		t.Errorf("waiting tier: oldest age %v lag %v, want a positive age under the tier and no lag", first[1].OldestAge, first[1].OldestLag)
	}
	later := rec.waitFor(t, 10*time.Second, func(s []driver.ReinjectBacklog) bool {
		return len(s) == 2 && s[1].Err == nil && s[1].OldestAge >= first[1].OldestAge+500*time.Millisecond
	})
	if later[1].Backlog != 3 {
		t.Errorf("waiting tier backlog %d later, want 3", later[1].Backlog)
	}
	// The short tier's records were carried to the work topic.
	if got := readTopic(t, topic, 2, 10*time.Second, 0); len(got) != 2 {
		t.Errorf("%d records carried to %s, want 2", len(got), topic)
	}
}
