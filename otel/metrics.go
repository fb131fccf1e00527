package otel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Metric names. The four messaging.* ones are those of the OpenTelemetry
// messaging semantic conventions (v1.43.0), so stock messaging dashboards
// read them; the babelqueue.* ones count what the conventions have no
// instrument for. Every instrument carries messaging.system and
// messaging.destination.name; README.md lists the extra attributes of
// each and which outcome moves which counter.
const (
	// MetricSentMessages counts new messages the App attempted to publish,
	// with error.type when the broker did not acknowledge them, {message}.
	MetricSentMessages = "messaging.client.sent.messages"
	// MetricConsumedMessages counts every settled delivery once, by
	// AttrOutcome and AttrReason, with error.type when it was retried,
	// dead-lettered or dropped, {message}.
	MetricConsumedMessages = "messaging.client.consumed.messages"
	// MetricProcessDuration is the duration of handler calls in seconds,
	// by AttrURN, with error.type when the handler failed (histogram).
	MetricProcessDuration = "messaging.process.duration"
	// MetricOperationDuration is the duration of a publish, from the write
	// until the broker's acknowledgement, in seconds (histogram).
	MetricOperationDuration = "messaging.client.operation.duration"
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
	// MetricReinjectLag is how late a re-injected retry record was written
	// back to its work queue, in seconds. It is a histogram of the broker's
	// acknowledgement minus the record's due time, negative when early.
	MetricReinjectLag = "babelqueue.reinject.lag"
)

// Operation names (messaging.operation.name) of the spans and metrics.
const (
	operationSend    = "send"
	operationProcess = "process"
)

// scopeName is the instrumentation scope of the meter and the tracer.
const scopeName = "github.com/babelqueue/babelqueue-go/otel"

// durationBuckets are the histogram boundaries, in seconds, of the
// duration and lag histograms: 1 ms to 5 min.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// instruments are the BabelQueue instruments of one meter.
type instruments struct {
	meter                                   metric.Meter
	sent, consumed, retried, deadLettered   metric.Int64Counter
	poison, versionGated, redriven          metric.Int64Counter
	processDuration, operationDuration, lag metric.Float64Histogram
}

// newInstruments creates the instruments on a meter of mp (nil: the global
// MeterProvider).
func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	if mp == nil {
		mp = globalMeterProvider()
	}
	m := mp.Meter(scopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(semconv.SchemaURL))
	out := instruments{meter: m}
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
	counter(&out.sent, MetricSentMessages, "Number of messages producer attempted to send to the broker.")
	counter(&out.consumed, MetricConsumedMessages, "Number of messages that were delivered to the application.")
	counter(&out.retried, MetricRetried, "Deliveries retried, by the reason they failed.")
	counter(&out.deadLettered, MetricDeadLettered, "Deliveries written to a dead-letter queue, by the reason they were given up on.")
	counter(&out.poison, MetricPoison, "Settled deliveries whose body is not a BabelQueue envelope.")
	counter(&out.versionGated, MetricVersionGated, "Settled deliveries rejected by the schema version gate.")
	counter(&out.redriven, MetricRedriven, "Dead letters moved back to a work queue by a redrive.")
	histogram(&out.processDuration, MetricProcessDuration, "Duration of processing operation.")
	histogram(&out.operationDuration, MetricOperationDuration, "Duration of messaging operation initiated by a producer or consumer client.")
	histogram(&out.lag, MetricReinjectLag, "Time a re-injected retry record was written back after its due time.")
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// maxCachedAttrs bounds the attribute combinations an attrCache keeps.
const maxCachedAttrs = 1024

// maxExtraAttrs is how many attributes beyond messaging.system and
// messaging.destination.name one measurement carries at most.
const maxExtraAttrs = 5

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

// attrKey is a queue and up to maxExtraAttrs more string attributes.
type attrKey struct {
	queue string
	k     [maxExtraAttrs]attribute.Key
	v     [maxExtraAttrs]string
}

func newAttrCache(system string) *attrCache {
	return &attrCache{system: system, opts: make(map[attrKey]metric.MeasurementOption)}
}

// at returns the measurement option of messaging.system, queue as
// messaging.destination.name, and the attributes of extra whose key is
// set (a zero KeyValue is skipped, so that optional attributes can be
// passed unconditionally). Extra values are strings; past maxExtraAttrs
// they are ignored.
func (c *attrCache) at(queue string, extra ...attribute.KeyValue) metric.MeasurementOption {
	k := attrKey{queue: queue}
	n := 0
	for _, kv := range extra {
		if kv.Key == "" || n == maxExtraAttrs {
			continue
		}
		k.k[n], k.v[n] = kv.Key, kv.Value.AsString()
		n++
	}
	c.mu.RLock()
	opt, ok := c.opts[k]
	c.mu.RUnlock()
	if ok {
		return opt
	}
	attrs := make([]attribute.KeyValue, 0, 2+n)
	attrs = append(attrs, semconv.MessagingSystemKey.String(c.system), semconv.MessagingDestinationName(queue))
	for i := range n {
		attrs = append(attrs, k.k[i].String(k.v[i]))
	}
	opt = metric.WithAttributeSet(attribute.NewSet(attrs...))
	c.mu.Lock()
	if len(c.opts) < maxCachedAttrs {
		c.opts[k] = opt
	}
	c.mu.Unlock()
	return opt
}

// optional returns key=value, or the zero KeyValue (skipped by at) when
// value is empty.
func optional(key attribute.Key, value string) attribute.KeyValue {
	if value == "" {
		return attribute.KeyValue{}
	}
	return key.String(value)
}

// seconds records d on h.
func seconds(ctx context.Context, h metric.Float64Histogram, d time.Duration, opt metric.MeasurementOption) {
	h.Record(ctx, d.Seconds(), opt)
}
