package otel

import (
	"context"
	"fmt"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Metric names. Every instrument carries messaging.system and
// messaging.destination.name; the extra attributes are listed per name.
const (
	// MetricPublished counts messages published (acknowledged by the
	// broker), {message}.
	MetricPublished = "babelqueue.messages.published"
	// MetricHandled counts settled deliveries by AttrOutcome, {message}.
	MetricHandled = "babelqueue.messages.handled"
	// MetricRetried counts retry copies written, by AttrReason, {message}.
	MetricRetried = "babelqueue.messages.retried"
	// MetricDeadLettered counts dead-letter writes, by AttrReason, {message}.
	MetricDeadLettered = "babelqueue.messages.dead_lettered"
	// MetricPoison counts deliveries whose body is not an envelope, {message}.
	MetricPoison = "babelqueue.messages.poison"
	// MetricVersionGated counts deliveries the version gate rejected,
	// {message}.
	MetricVersionGated = "babelqueue.messages.version_gated"
	// MetricRedriven counts dead letters moved back to work; the
	// destination is the target queue, {message}.
	MetricRedriven = "babelqueue.messages.redriven"
	// MetricHandlerDuration is the duration of handler calls in seconds, by
	// AttrURN and AttrHandlerOutcome (histogram).
	MetricHandlerDuration = "babelqueue.handler.duration"
	// MetricReinjectLag is how late a re-injected retry record was written
	// back to its work topic: actual time minus due time, in seconds
	// (histogram; negative when early).
	MetricReinjectLag = "babelqueue.reinject.lag"
)

// meterName is the instrumentation scope of the meter and the tracer.
const meterName = "github.com/babelqueue/babelqueue-go/otel"

// durationBuckets are the histogram boundaries, in seconds, of
// MetricHandlerDuration and MetricReinjectLag: 1 ms to 5 min.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics holds the BabelQueue instruments of one meter. Its methods are
// what the decorator records and what bindings and tools call for the
// events the decorator cannot see (a re-injection, a redrive run on a bare
// transport). The methods are safe for concurrent use; a nil *Metrics
// records nothing.
type Metrics struct {
	published, handled, retried, deadLettered metric.Int64Counter
	poison, versionGated, redriven            metric.Int64Counter
	handlerDuration, reinjectLag              metric.Float64Histogram
}

// NewMetrics creates the instruments on a meter of mp. A nil mp is the
// global MeterProvider.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = globalMeterProvider()
	}
	m := mp.Meter(meterName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(semconv.SchemaURL))
	var out Metrics
	var err error
	counter := func(dst *metric.Int64Counter, name, desc string) {
		if err != nil {
			return
		}
		*dst, err = m.Int64Counter(name, metric.WithUnit("{message}"), metric.WithDescription(desc))
		if err != nil {
			err = fmt.Errorf("otel: instrument %s: %w", name, err)
		}
	}
	histogram := func(dst *metric.Float64Histogram, name, desc string) {
		if err != nil {
			return
		}
		*dst, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		if err != nil {
			err = fmt.Errorf("otel: instrument %s: %w", name, err)
		}
	}
	counter(&out.published, MetricPublished, "Messages published and acknowledged by the broker.")
	counter(&out.handled, MetricHandled, "Deliveries settled, by how they were settled.")
	counter(&out.retried, MetricRetried, "Retry copies written for messages that failed, by the reason they failed.")
	counter(&out.deadLettered, MetricDeadLettered, "Messages written to a dead-letter queue, by the reason they were given up on.")
	counter(&out.poison, MetricPoison, "Deliveries whose body is not a BabelQueue envelope.")
	counter(&out.versionGated, MetricVersionGated, "Deliveries rejected by the schema version gate.")
	counter(&out.redriven, MetricRedriven, "Dead letters moved back to a work queue by a redrive.")
	histogram(&out.handlerDuration, MetricHandlerDuration, "Duration of handler calls.")
	histogram(&out.reinjectLag, MetricReinjectLag, "Time a re-injected retry record was written back after its due time.")
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func destination(system, queue string, extra ...attribute.KeyValue) metric.MeasurementOption {
	attrs := make([]attribute.KeyValue, 0, 2+len(extra))
	attrs = append(attrs, semconv.MessagingSystemKey.String(system), semconv.MessagingDestinationName(queue))
	return metric.WithAttributes(append(attrs, extra...)...)
}

// Published records one message published to queue.
func (m *Metrics) Published(ctx context.Context, system, queue string) {
	if m != nil {
		m.published.Add(ctx, 1, destination(system, queue))
	}
}

// Handled records one delivery of queue settled with outcome (Outcome*).
func (m *Metrics) Handled(ctx context.Context, system, queue, outcome string) {
	if m != nil {
		m.handled.Add(ctx, 1, destination(system, queue, AttrOutcome.String(outcome)))
	}
}

// Retried records one retry copy of a message of queue that failed for
// reason (babelqueue.ReasonFailed, ReasonUnknownURN, ReasonPoison).
func (m *Metrics) Retried(ctx context.Context, system, queue, reason string) {
	if m != nil {
		m.retried.Add(ctx, 1, destination(system, queue, AttrReason.String(reason)))
	}
}

// DeadLettered records one message of queue written to its dead-letter
// queue for reason (a dead_letter.reason, or ReasonVersionGated).
func (m *Metrics) DeadLettered(ctx context.Context, system, queue, reason string) {
	if m != nil {
		m.deadLettered.Add(ctx, 1, destination(system, queue, AttrReason.String(reason)))
	}
}

// Poison records one delivery of queue whose body is not an envelope.
func (m *Metrics) Poison(ctx context.Context, system, queue string) {
	if m != nil {
		m.poison.Add(ctx, 1, destination(system, queue))
	}
}

// VersionGated records one delivery of queue rejected by the version gate.
func (m *Metrics) VersionGated(ctx context.Context, system, queue string) {
	if m != nil {
		m.versionGated.Add(ctx, 1, destination(system, queue))
	}
}

// Redriven records n dead letters moved back to the queue target.
func (m *Metrics) Redriven(ctx context.Context, system, target string, n int) {
	if m != nil && n > 0 {
		m.redriven.Add(ctx, int64(n), destination(system, target))
	}
}

// RedriveResult records the messages a babelqueue.Redrive run moved, per
// target queue, for a redrive run on a transport that is not decorated (a
// decorated one records them itself). A dry run records nothing.
func (m *Metrics) RedriveResult(ctx context.Context, system string, res *babelqueue.RedriveResult) {
	if m == nil || res == nil || res.DryRun {
		return
	}
	counted, last := 0, ""
	for _, it := range res.Items {
		if it.Outcome == babelqueue.RedriveMoved {
			m.Redriven(ctx, system, it.Target, 1)
			counted, last = counted+1, it.Target
		}
	}
	// Items stops at babelqueue.MaxRedriveItems while Moved stays exact:
	// the messages past it are counted under the last target seen.
	m.Redriven(ctx, system, last, res.Moved-counted)
}

// HandlerDuration records one handler call for urn on queue that took d;
// failed reports whether it returned an error (or panicked).
func (m *Metrics) HandlerDuration(ctx context.Context, system, queue, urn string, d time.Duration, failed bool) {
	if m == nil {
		return
	}
	result := "success"
	if failed {
		result = "error"
	}
	m.handlerDuration.Record(ctx, d.Seconds(), destination(system, queue, AttrURN.String(urn), AttrHandlerOutcome.String(result)))
}

// ReinjectLag records how late a retry record was written back to its work
// topic queue: the time it was written minus the time it was due (record
// time + tier delay). A re-injector calls it after each write.
func (m *Metrics) ReinjectLag(ctx context.Context, system, queue string, lag time.Duration) {
	if m != nil {
		m.reinjectLag.Record(ctx, lag.Seconds(), destination(system, queue))
	}
}
