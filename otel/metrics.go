package otel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Metric names. Every instrument carries messaging.system and
// messaging.destination.name; README.md lists the extra attributes of each
// and which outcome moves which counter.
const (
	// MetricPublished counts new messages the broker acknowledged, {message}.
	MetricPublished = "babelqueue.messages.published"
	// MetricHandled counts settled deliveries by AttrOutcome and AttrReason,
	// {message}.
	MetricHandled = "babelqueue.messages.handled"
	// MetricRetried counts retried deliveries by AttrReason and AttrTarget,
	// {message}.
	MetricRetried = "babelqueue.messages.retried"
	// MetricDeadLettered counts dead-lettered deliveries by AttrReason and
	// AttrTarget, {message}.
	MetricDeadLettered = "babelqueue.messages.dead_lettered"
	// MetricPoison counts settled deliveries whose body is not an
	// envelope, {message}.
	MetricPoison = "babelqueue.messages.poison"
	// MetricVersionGated counts settled deliveries the version gate
	// rejected, {message}.
	MetricVersionGated = "babelqueue.messages.version_gated"
	// MetricRedriven counts dead letters a redrive moved back to work; the
	// destination is the target queue, {message}.
	MetricRedriven = "babelqueue.messages.redriven"
	// MetricHandlerDuration is the duration of handler calls in seconds, by
	// AttrURN and AttrHandlerOutcome (histogram).
	MetricHandlerDuration = "babelqueue.handler.duration"
	// MetricReinjectLag is how late a re-injected retry record was written
	// back to its work queue, in seconds: the broker's acknowledgement
	// minus the record's due time (histogram; negative when early).
	MetricReinjectLag = "babelqueue.reinject.lag"
)

// scopeName is the instrumentation scope of the meter and the tracer.
const scopeName = "github.com/babelqueue/babelqueue-go/otel"

// durationBuckets are the histogram boundaries, in seconds, of
// MetricHandlerDuration and MetricReinjectLag: 1 ms to 5 min.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// instruments are the BabelQueue instruments of one meter.
type instruments struct {
	published, handled, retried, deadLettered metric.Int64Counter
	poison, versionGated, redriven            metric.Int64Counter
	handlerDuration, reinjectLag              metric.Float64Histogram
}

// newInstruments creates the instruments on a meter of mp (nil: the global
// MeterProvider).
func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	if mp == nil {
		mp = globalMeterProvider()
	}
	m := mp.Meter(scopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(semconv.SchemaURL))
	var out instruments
	var err error
	counter := func(dst *metric.Int64Counter, name, desc string) {
		if err == nil {
			if *dst, err = m.Int64Counter(name, metric.WithUnit("{message}"), metric.WithDescription(desc)); err != nil {
				err = fmt.Errorf("otel: instrument %s: %w", name, err)
			}
		}
	}
	histogram := func(dst *metric.Float64Histogram, name, desc string) {
		if err == nil {
			if *dst, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
				metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
				err = fmt.Errorf("otel: instrument %s: %w", name, err)
			}
		}
	}
	counter(&out.published, MetricPublished, "Messages published and acknowledged by the broker.")
	counter(&out.handled, MetricHandled, "Deliveries settled, by how they were settled.")
	counter(&out.retried, MetricRetried, "Deliveries retried, by the reason they failed.")
	counter(&out.deadLettered, MetricDeadLettered, "Deliveries written to a dead-letter queue, by the reason they were given up on.")
	counter(&out.poison, MetricPoison, "Settled deliveries whose body is not a BabelQueue envelope.")
	counter(&out.versionGated, MetricVersionGated, "Settled deliveries rejected by the schema version gate.")
	counter(&out.redriven, MetricRedriven, "Dead letters moved back to a work queue by a redrive.")
	histogram(&out.handlerDuration, MetricHandlerDuration, "Duration of handler calls.")
	histogram(&out.reinjectLag, MetricReinjectLag, "Time a re-injected retry record was written back after its due time.")
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// maxCachedAttrs bounds the attribute combinations an attrCache keeps.
const maxCachedAttrs = 1024

// attrCache memoizes the measurement option of each recurring attribute
// combination (a queue with an outcome and a reason, say), so that a
// measurement does not build and sort its attribute set every time. Past
// maxCachedAttrs combinations (URNs are the caller's), options are built
// uncached.
type attrCache struct {
	system string
	mu     sync.RWMutex
	opts   map[attrKey]metric.MeasurementOption
}

// attrKey is a queue and up to two more string attributes.
type attrKey struct {
	queue  string
	k1, k2 attribute.Key
	v1, v2 string
}

func newAttrCache(system string) *attrCache {
	return &attrCache{system: system, opts: make(map[attrKey]metric.MeasurementOption)}
}

// at returns the measurement option of messaging.system, queue as
// messaging.destination.name, and the non-empty keys of extra.
func (c *attrCache) at(queue string, extra ...attribute.KeyValue) metric.MeasurementOption {
	k := attrKey{queue: queue}
	if len(extra) > 0 {
		k.k1, k.v1 = extra[0].Key, extra[0].Value.AsString()
	}
	if len(extra) > 1 {
		k.k2, k.v2 = extra[1].Key, extra[1].Value.AsString()
	}
	c.mu.RLock()
	opt, ok := c.opts[k]
	c.mu.RUnlock()
	if ok {
		return opt
	}
	attrs := make([]attribute.KeyValue, 0, 2+len(extra))
	attrs = append(attrs, semconv.MessagingSystemKey.String(c.system), semconv.MessagingDestinationName(queue))
	opt = metric.WithAttributeSet(attribute.NewSet(append(attrs, extra...)...))
	c.mu.Lock()
	if len(c.opts) < maxCachedAttrs {
		c.opts[k] = opt
	}
	c.mu.Unlock()
	return opt
}

// seconds records d on h.
func seconds(ctx context.Context, h metric.Float64Histogram, d time.Duration, opt metric.MeasurementOption) {
	h.Record(ctx, d.Seconds(), opt)
}
