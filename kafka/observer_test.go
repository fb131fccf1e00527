package kafka

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"
)

// eventLog collects ReinjectEvents and what was true when each arrived.
type eventLog struct {
	mu     sync.Mutex
	events []ReinjectEvent
	// committedAt and writtenAt are the retry-topic committed offset and
	// the number of work-topic records when the observer ran.
	committedAt []int64
	writtenAt   []int
}

func (l *eventLog) snapshot() []ReinjectEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]ReinjectEvent(nil), l.events...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

func (l *eventLog) waitEvents(t *testing.T, n int) []ReinjectEvent {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got := l.snapshot(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("observer saw %d events, want %d", len(l.snapshot()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReinjectObserverReportsDueAndWriteTimes(t *testing.T) {
	var rg *reinjectRig
	var log eventLog
	observe := func(ev ReinjectEvent) {
		committed := rg.offsets.get(ev.RetryTopic, ev.Partition)
		written := len(rg.log.records(ev.WorkTopic))
		log.mu.Lock()
		defer log.mu.Unlock()
		log.events = append(log.events, ev)
		log.committedAt = append(log.committedAt, committed)
		log.writtenAt = append(log.writtenAt, written)
	}
	const tier = 5 * time.Second
	rg = newReinjectRigWith(t, 2, []time.Duration{tier}, []Option{WithReinjectObserver(observe)})
	// Partition 0: an old record (due 5s ago, carried at once), then a
	// future-dated one (due one tier after it was first looked at).
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("old"), Time: t0.Add(-10 * time.Second)})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("future"), Time: t0.Add(time.Hour)})
	// Partition 1: a record stamped now, due after the tier.
	rg.log.append("orders.retry.1", 1, kafkago.Message{Value: []byte("now"), Time: t0})
	rg.start([]int{0, 1})
	rg.waitRecords("orders", 1)
	rg.waitTimers(2) // "future" and "now" wait
	if got := log.waitEvents(t, 1); len(got) != 1 {
		t.Fatalf("events before the tier elapsed: %+v", got)
	}
	rg.clock.Advance(7 * time.Second) // both are written 2s after they were due
	rg.waitRecords("orders", 3)
	got := log.waitEvents(t, 3)
	want := []ReinjectEvent{
		{WorkTopic: "orders", RetryTopic: "orders.retry.1", Tier: tier, Partition: 0, Offset: 0, Due: t0.Add(-5 * time.Second), Written: t0},
		{WorkTopic: "orders", RetryTopic: "orders.retry.1", Tier: tier, Partition: 0, Offset: 1, Due: t0.Add(tier), Written: t0.Add(7 * time.Second)},
		{WorkTopic: "orders", RetryTopic: "orders.retry.1", Tier: tier, Partition: 1, Offset: 0, Due: t0.Add(tier), Written: t0.Add(7 * time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for i, lag := range []time.Duration{5 * time.Second, 2 * time.Second, 2 * time.Second} {
		if got[i].Lag() != lag || got[i].Lag() != got[i].Written.Sub(got[i].Due) {
			t.Errorf("event %d: lag %v, want %v", i, got[i].Lag(), lag)
		}
	}
	// Each call came after the write and before the commit was marked.
	log.mu.Lock()
	for i, ev := range log.events {
		if log.committedAt[i] > ev.Offset {
			t.Errorf("offset %d/%d: committed %d before the observer ran", ev.Partition, ev.Offset, log.committedAt[i])
		}
		if log.writtenAt[i] == 0 {
			t.Errorf("offset %d/%d: observer ran before the write", ev.Partition, ev.Offset)
		}
	}
	log.mu.Unlock()
	rg.waitCommitted("orders.retry.1", 0, 2)
	rg.waitCommitted("orders.retry.1", 1, 1)
}

func TestReinjectObserverPanicAndFailedWrites(t *testing.T) {
	var log eventLog
	observe := func(ev ReinjectEvent) {
		log.mu.Lock()
		log.events = append(log.events, ev)
		log.mu.Unlock()
		panic("observer bug")
	}
	rg := newReinjectRigWith(t, 1, []time.Duration{time.Second}, []Option{WithReinjectObserver(observe)})
	failed := false
	rg.writer.setFail(func([]kafkago.Message) error {
		if !failed {
			failed = true
			return errors.New("broker down")
		}
		return nil
	})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("a"), Time: t0.Add(-time.Minute)})
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("b"), Time: t0.Add(-time.Minute)})
	rg.start([]int{0})
	rg.waitTimers(1) // backing off after the failed write
	if n := len(log.snapshot()); n != 0 {
		t.Fatalf("observer called %d times before any write was acknowledged", n)
	}
	rg.clock.Advance(100 * time.Millisecond)
	rg.waitRecords("orders", 1)
	rg.waitCommitted("orders.retry.1", 0, 2) // the panic changed nothing
	got := log.waitEvents(t, 2)
	if len(got) != 2 || len(rg.log.records("orders")) != 2 {
		t.Fatalf("events %+v, records %d", got, len(rg.log.records("orders")))
	}
	for i, ev := range got {
		if ev.Offset != int64(i) || !ev.Due.Equal(t0.Add(-59*time.Second)) || !ev.Written.Equal(t0.Add(100*time.Millisecond)) {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	// The Reinjector keeps carrying records after the panics.
	rg.log.append("orders.retry.1", 0, kafkago.Message{Value: []byte("c"), Time: t0})
	rg.waitTimers(1)
	rg.clock.Advance(time.Second)
	rg.waitRecords("orders", 3)
	rg.waitCommitted("orders.retry.1", 0, 3)
}
