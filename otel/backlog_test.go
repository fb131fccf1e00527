package otel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// TestReinjectBacklogGaugesShowTheLatestSample: each tier's backlog,
// oldest age and oldest lag are observed from the latest sample; a tier
// whose sample failed disappears until it is sampled again.
func TestReinjectBacklogGaugesShowTheLatestSample(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	ctx := context.Background()
	hooks.OnReinjectBacklog(ctx, []driver.ReinjectBacklog{
		{Tier: "orders.retry.1", TierIndex: 1, Queue: "orders", Group: "bq-reinject", Backlog: 7, OldestAge: 1500 * time.Millisecond, OldestLag: 500 * time.Millisecond},
		{Tier: "orders.retry.2", TierIndex: 2, Queue: "orders", Group: "bq-reinject", Backlog: 1, OldestAge: time.Second},
	})
	hooks.OnReinjectBacklog(ctx, []driver.ReinjectBacklog{
		{Tier: "orders.retry.1", TierIndex: 1, Queue: "orders", Group: "bq-reinject", Backlog: 3, OldestAge: 2 * time.Second, OldestLag: time.Second},
		{Tier: "orders.retry.2", TierIndex: 2, Queue: "orders", Group: "bq-reinject", Err: errors.New("broker unreachable")},
	})
	rm := h.Collect(t)
	want := map[string]float64{
		MetricReinjectBacklog: 3, MetricReinjectOldestAge: 2, MetricReinjectOldestLag: 1,
	}
	for name, v := range want {
		m, ok := oteltest.FindMetric(rm, name)
		if !ok {
			t.Fatalf("%s not observed", name)
		}
		var points []float64
		var attrs []map[string]string
		switch g := m.Data.(type) {
		case metricdata.Gauge[int64]:
			for _, dp := range g.DataPoints {
				points = append(points, float64(dp.Value))
				attrs = append(attrs, setMap(dp.Attributes.ToSlice()))
			}
		case metricdata.Gauge[float64]:
			for _, dp := range g.DataPoints {
				points = append(points, dp.Value)
				attrs = append(attrs, setMap(dp.Attributes.ToSlice()))
			}
		default:
			t.Fatalf("%s is a %T, want a gauge", name, m.Data)
		}
		if len(points) != 1 || points[0] != v {
			t.Errorf("%s = %v, want one point of %v (the failed tier left out)", name, points, v)
			continue
		}
		for k, want := range map[string]string{"messaging.system": "kafka", "messaging.destination.name": "orders.retry.1",
			"messaging.consumer.group.name": "bq-reinject", "babelqueue.tier": "1"} {
			if attrs[0][k] != want {
				t.Errorf("%s: %s = %q, want %q", name, k, attrs[0][k], want)
			}
		}
	}
}

func setMap(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}
