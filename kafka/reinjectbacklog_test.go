package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// TestBacklogTimeoutIsBoundedByTheInterval: a sample never outlasts its
// interval by more than the 1s floor, nor 10s.
func TestBacklogTimeoutIsBoundedByTheInterval(t *testing.T) {
	for every, want := range map[time.Duration]time.Duration{
		200 * time.Millisecond: time.Second, 5 * time.Second: 5 * time.Second, time.Minute: 10 * time.Second,
	} {
		if got := backlogTimeout(every); got != want {
			t.Errorf("backlogTimeout(%v) = %v, want %v", every, got, want)
		}
	}
}

// TestBacklogSampleOfAnUnansweringBrokerReportsErrors: a broker that
// accepts connections and never answers gives every tier an error and
// zero counts, within the sample's bound; a panicking hook is recovered.
func TestBacklogSampleOfAnUnansweringBrokerReportsErrors(t *testing.T) {
	addr := unansweringBroker(t)
	var got []driver.ReinjectBacklog
	tr, err := New(WithBrokers(addr), WithGroupID("g"), WithRetryTiers(time.Second, 2*time.Second),
		WithReinjectHooks(panicky{}, backlogFunc(func(tiers []driver.ReinjectBacklog) { got = tiers })))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r, err := tr.NewReinjector("orders")
	if err != nil {
		t.Fatal(err)
	}
	b := newBacklogBroker(&tr.cfg, r.topics)
	defer b.close()
	start := time.Now()
	r.reportBacklog(context.Background(), r.sampleBacklog(context.Background(), b, 300*time.Millisecond))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("sample took %v, want about its 300ms bound", took)
	}
	if len(got) != 2 {
		t.Fatalf("%d tiers reported, want 2", len(got))
	}
	for i, tb := range got {
		if tb.Err == nil || tb.Backlog != 0 || tb.OldestAge != 0 || tb.Tier != RetryTopic("orders", i+1) || tb.Group != "g.reinject" || tb.SampledAt.IsZero() {
			t.Errorf("tier %d: %+v, want an error and zero counts", i+1, tb)
		}
	}
}

type panicky struct{}

func (panicky) OnReinjectBacklog(context.Context, []driver.ReinjectBacklog) { panic("boom") }

type backlogFunc func([]driver.ReinjectBacklog)

func (f backlogFunc) OnReinjectBacklog(_ context.Context, tiers []driver.ReinjectBacklog) {
	f(tiers)
}
