package otel

import (
	"math"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/kafka"
)

func TestReinjectObserverRecordsLagPerWorkTopic(t *testing.T) {
	h := newHarness(t)
	observe := h.tel.ReinjectObserver()
	due := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, ev := range []kafka.ReinjectEvent{
		{WorkTopic: "orders", RetryTopic: "orders.retry.1", Tier: 5 * time.Second, Due: due, Written: due.Add(1500 * time.Millisecond)},
		{WorkTopic: "orders", RetryTopic: "orders.retry.2", Tier: 30 * time.Second, Due: due, Written: due.Add(250 * time.Millisecond)},
		{WorkTopic: "payments", RetryTopic: "payments.retry.1", Tier: 5 * time.Second, Due: due, Written: due.Add(3 * time.Second)},
	} {
		observe(ev)
	}
	for _, c := range []struct {
		topic string
		n     uint64
		sum   float64
	}{{"orders", 2, 1.75}, {"payments", 1, 3}} {
		n, sum := h.observations(t, MetricReinjectLag, map[string]string{"messaging.system": "kafka", "messaging.destination.name": c.topic})
		if n != c.n || math.Abs(sum-c.sum) > 1e-9 {
			t.Errorf("%s: %d observations summing %vs, want %d summing %vs", c.topic, n, sum, c.n, c.sum)
		}
	}
	if n, _ := h.observations(t, MetricReinjectLag, map[string]string{"messaging.destination.name": "orders.retry.1"}); n != 0 {
		t.Errorf("lag recorded against the retry topic")
	}
}

func TestReinjectObserverUsesConfiguredSystem(t *testing.T) {
	h := newHarness(t, WithSystem("redpanda"))
	now := time.Now()
	h.tel.ReinjectObserver()(kafka.ReinjectEvent{WorkTopic: "q", Due: now, Written: now.Add(time.Second)})
	if n, sum := h.observations(t, MetricReinjectLag, map[string]string{"messaging.system": "redpanda", "messaging.destination.name": "q"}); n != 1 || sum != 1 {
		t.Errorf("%d observations summing %v, want 1 summing 1", n, sum)
	}
}
