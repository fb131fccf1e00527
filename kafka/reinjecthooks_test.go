package kafka

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// hookLog is a driver.ReinjectHook that collects what it is handed,
// and calls inspect first when set.
type hookLog struct {
	mu      sync.Mutex
	events  []driver.Reinjection
	inspect func(r *driver.Reinjection)
}

func (l *hookLog) OnReinject(_ context.Context, r *driver.Reinjection) {
	l.mu.Lock()
	l.events = append(l.events, *r)
	l.mu.Unlock()
	if l.inspect != nil {
		l.inspect(r)
	}
}

// sorted returns the events by lag, then delay, then tier.
func (l *hookLog) sorted() []driver.Reinjection {
	l.mu.Lock()
	out := append([]driver.Reinjection(nil), l.events...)
	l.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Lag != b.Lag {
			return a.Lag < b.Lag
		}
		if a.Delay != b.Delay {
			return a.Delay < b.Delay
		}
		return a.Tier < b.Tier
	})
	return out
}

func (l *hookLog) wait(t *testing.T, n int) []driver.Reinjection {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got := l.sorted(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("hook saw %d re-injections, want %d", len(l.sorted()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// notAHook implements no hook interface: WithReinjectHooks ignores it.
type notAHook struct{}

func TestReinjectHooksReportTierDelayAndLag(t *testing.T) {
	var log hookLog
	const tier1, tier2 = 5 * time.Second, 30 * time.Second
	rg := newReinjectRigWith(t, 2, []time.Duration{tier1, tier2}, []Option{WithReinjectHooks(notAHook{}, &log)})
	// Tier 1, partition 0: an old record (due 5s ago, carried at once),
	// then a future-dated one (due one tier after it was first looked at).
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("old"), Time: t0.Add(-10 * time.Second),
		Headers: []kafkago.Header{h(wire.HeaderDelay, "5000"), h(wire.HeaderOriginalTopic, "orders")}})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("future"), Time: t0.Add(time.Hour)})
	// Tier 1, partition 1: stamped now, with the bq-delay of a deprecated
	// PublishRetry (shorter than its tier).
	rg.log.append("orders.retry.1", 1, kafkago.Message{Value: []byte("now"), Time: t0,
		Headers: []kafkago.Header{h(wire.HeaderDelay, "1234")}})
	// Tier 2, partition 0: due 10s ago.
	rg.log.append("orders.retry.2", 0, kafkago.Message{Value: []byte("older"), Time: t0.Add(-40 * time.Second)})
	rg.start([]int{0, 1})
	rg.waitRecords("orders", 2)
	rg.waitTimers(2) // "future" and "now" wait
	if got := log.wait(t, 2); len(got) != 2 {
		t.Fatalf("re-injections before the tier elapsed: %+v", got)
	}
	rg.clock.Advance(7 * time.Second) // both are written 2s after they were due
	rg.waitRecords("orders", 4)
	got := log.wait(t, 4)
	want := []driver.Reinjection{
		{Tier: "orders.retry.1", TierIndex: 1, Partition: 1, Offset: 0, Queue: "orders", Delay: 1234 * time.Millisecond, Lag: 2 * time.Second},
		{Tier: "orders.retry.1", TierIndex: 1, Partition: 0, Offset: 1, Queue: "orders", Delay: tier1, Lag: 2 * time.Second},
		{Tier: "orders.retry.1", TierIndex: 1, Partition: 0, Offset: 0, Queue: "orders", Delay: tier1, Lag: 5 * time.Second},
		{Tier: "orders.retry.2", TierIndex: 2, Partition: 0, Offset: 0, Queue: "orders", Delay: tier2, Lag: 10 * time.Second},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateErrors()); diff != "" {
		t.Fatalf("re-injections (-want +got):\n%s", diff)
	}
	rg.waitCommitted("orders.retry.1", 0, 2)
	rg.waitCommitted("orders.retry.1", 1, 1)
	rg.waitCommitted("orders.retry.2", 0, 1)
}

// TestReinjectHooksRunAfterTheWriteBeforeTheCommit checks, on one
// partition carried in offset order, that each call sees its record
// written and not yet committed.
func TestReinjectHooksRunAfterTheWriteBeforeTheCommit(t *testing.T) {
	var rg *reinjectRig
	var mu sync.Mutex
	calls := 0
	var bad []string
	log := &hookLog{inspect: func(r *driver.Reinjection) {
		mu.Lock()
		defer mu.Unlock()
		if written := len(rg.log.records("orders")); written < calls {
			bad = append(bad, "a hook ran before its write")
		}
		if committed := rg.offsets.get("orders.retry.1", 0); committed > int64(calls) {
			bad = append(bad, "a hook ran after its commit")
		}
		calls++
	}}
	rg = newReinjectRigWith(t, 1, []time.Duration{time.Second}, []Option{WithReinjectHooks(log)})
	for _, v := range []string{"a", "b", "c"} {
		rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte(v), Time: t0.Add(-time.Minute)})
	}
	rg.start([]int{0})
	rg.waitRecords("orders", 3)
	log.wait(t, 3)
	rg.waitCommitted("orders.retry.1", 0, 3)
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatal(bad)
	}
}

func TestReinjectHooksReportFailedWritesAndSurvivePanics(t *testing.T) {
	log := &hookLog{inspect: func(*driver.Reinjection) { panic("hook bug") }}
	rg := newReinjectRigWith(t, 1, []time.Duration{time.Second}, []Option{WithReinjectHooks(log)})
	down := errors.New("broker down")
	failed := false
	rg.writer.setFail(func([]kafkago.Message) error {
		if !failed {
			failed = true
			return down
		}
		return nil
	})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("a"), Time: t0.Add(-time.Minute)})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("b"), Time: t0.Add(-time.Minute)})
	rg.start([]int{0})
	rg.waitTimers(1) // backing off after the failed write
	failures := log.wait(t, 2)
	for i, ev := range failures {
		want := driver.Reinjection{Tier: "orders.retry.1", TierIndex: 1, Offset: int64(i), Queue: "orders", Delay: time.Second, Lag: 59 * time.Second, Err: down}
		if diff := cmp.Diff(want, ev, cmpopts.EquateErrors()); diff != "" {
			t.Errorf("failure %d (-want +got):\n%s", i, diff)
		}
	}
	if n := len(rg.log.records("orders")); n != 0 {
		t.Fatalf("%d records written by a failed write", n)
	}
	rg.clock.Advance(100 * time.Millisecond)
	rg.waitRecords("orders", 2)
	rg.waitCommitted("orders.retry.1", 0, 2) // the panics changed nothing
	got := log.wait(t, 4)
	// The successful write reports the same records, at the same
	// positions, as the failed one: a record carried twice is told from
	// two records by its tier, partition and offset.
	var ok int
	for _, ev := range got {
		if ev.Err == nil {
			if ev.Partition != 0 || ev.Offset != int64(ok) {
				t.Errorf("carried record %d reported at %d/%d, want 0/%d", ok, ev.Partition, ev.Offset, ok)
			}
			ok++
			if ev.Lag != 59*time.Second+100*time.Millisecond {
				t.Errorf("lag %v, want 59.1s", ev.Lag)
			}
		}
	}
	if ok != 2 {
		t.Fatalf("%d successful re-injections reported, want 2: %+v", ok, got)
	}
	// The Reinjector keeps carrying records after the panics.
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("c"), Time: t0})
	rg.waitTimers(1)
	rg.clock.Advance(time.Second)
	rg.waitRecords("orders", 3)
	rg.waitCommitted("orders.retry.1", 0, 3)
}
