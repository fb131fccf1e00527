package orderstatus

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The OpenTelemetry instruments of the processor.
const (
	// MeterName is the instrumentation scope of the counters.
	MeterName = "github.com/babelqueue/babelqueue-go/examples/orderstatus"
	// MetricRetries counts records produced to the retry topic.
	MetricRetries = "orderstatus.retries"
	// MetricDeadLetters counts records produced to the dead-letter topic.
	MetricDeadLetters = "orderstatus.dead_letters"
	// ReasonAttribute is the attribute of both counters naming the reason.
	ReasonAttribute = attribute.Key("orderstatus.reason")
)

type counters struct {
	retried metric.Int64Counter
	dropped metric.Int64Counter
}

func newCounters(mp metric.MeterProvider) (counters, error) {
	meter := mp.Meter(MeterName)
	retried, err := meter.Int64Counter(MetricRetries,
		metric.WithDescription("Records produced to the retry topic, by the reason their attempt failed."),
		metric.WithUnit("{record}"))
	if err != nil {
		return counters{}, fmt.Errorf("orderstatus: counter %s: %w", MetricRetries, err)
	}
	dropped, err := meter.Int64Counter(MetricDeadLetters,
		metric.WithDescription("Records produced to the dead-letter topic, by the reason they were given up on."),
		metric.WithUnit("{record}"))
	if err != nil {
		return counters{}, fmt.Errorf("orderstatus: counter %s: %w", MetricDeadLetters, err)
	}
	return counters{retried: retried, dropped: dropped}, nil
}

func (c counters) retry(ctx context.Context, reason string) {
	c.retried.Add(ctx, 1, metric.WithAttributes(ReasonAttribute.String(reason)))
}

func (c counters) deadLetter(ctx context.Context, reason string) {
	c.dropped.Add(ctx, 1, metric.WithAttributes(ReasonAttribute.String(reason)))
}
