//go:build integration

package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	bqotel "github.com/babelqueue/babelqueue-go/otel"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

const testURN = "urn:babel:orders:created"

// harness is a Telemetry recording into in-memory exporters.
type harness struct {
	*oteltest.Recorder
	tel *bqotel.Telemetry
}

func newHarness(t *testing.T, system string) *harness {
	t.Helper()
	h := &harness{Recorder: oteltest.New(t)}
	tel, err := bqotel.New(bqotel.WithTracerProvider(h.TP), bqotel.WithMeterProvider(h.MP), bqotel.WithSystem(system))
	if err != nil {
		t.Fatal(err)
	}
	h.tel = tel
	return h
}

// waitSpans waits until n spans named name have ended.
func (h *harness) waitSpans(t *testing.T, name string, n int, within time.Duration) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := h.Ended(name)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %q spans ended within %v, want %d", len(got), name, within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// traceparent writes sc in W3C form.
func traceparent(sc trace.SpanContext) string {
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	return h["traceparent"]
}

// gauge returns the value of the gauge name at the data point having want,
// and whether there is one.
func (h *harness) gauge(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.Reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch g := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, dp := range g.DataPoints {
					if oteltest.Matches(dp.Attributes, want) {
						return float64(dp.Value), true
					}
				}
			case metricdata.Gauge[float64]:
				for _, dp := range g.DataPoints {
					if oteltest.Matches(dp.Attributes, want) {
						return dp.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// consume runs app.Consume(queue) until the end of the test.
func consume(t *testing.T, app *babelqueue.App, queue string) {
	t.Helper()
	bqtest.RunUntilCleanup(t, "Consume", 20*time.Second, func(ctx context.Context) error { return app.Consume(ctx, queue) })
}

// closeWithin closes at cleanup and fails the test when close does not
// return within d (a hung broker client).
func closeWithin(t *testing.T, close func() error, d time.Duration) {
	t.Helper()
	t.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- close() }()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("close: %v", err)
			}
		case <-time.After(d):
			t.Errorf("transport Close did not return within %v", d)
		}
	})
}

// recorder is a handler that always fails, keeping the headers of every
// delivery it saw.
type recorder struct {
	mu      sync.Mutex
	headers []map[string]string
}

func (r *recorder) fail(ctx context.Context, _ *babelqueue.Envelope) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := map[string]string{}
	for k, v := range babelqueue.HeadersFromContext(ctx) {
		h[k] = v
	}
	r.headers = append(r.headers, h)
	return errors.New("invalid transition")
}

func (r *recorder) seen() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]string(nil), r.headers...)
}

// checkRetryToDeadLetter checks the spans and counters of a message
// published under root that failed twice on queue: retried, then
// dead-lettered, in one trace, each attempt a child of the producer span,
// the second linked to the first, only the last an error, the dead letter
// keeping the original traceparent. It returns the two attempts' spans.
func checkRetryToDeadLetter(t *testing.T, h *harness, rec *recorder, root trace.SpanContext, queue, system, retryTarget string, viaHeader bool) []tracetest.SpanStub {
	t.Helper()
	process := h.waitSpans(t, "process "+queue, 2, 60*time.Second)
	send := h.Only(t, "send "+queue)
	if send.Parent.SpanID() != root.SpanID() || send.SpanContext.TraceID() != root.TraceID() {
		t.Errorf("send span is not a child of the root span")
	}
	for i, p := range process {
		if p.SpanContext.TraceID() != root.TraceID() || p.Parent.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("process span %d is not a child of the send span in the root's trace", i)
		}
		oteltest.WantAttrs(t, p, map[string]string{"messaging.system": system, "messaging.destination.name": queue,
			"messaging.operation.type": "process", "messaging.message.id": oteltest.Attrs(send)["messaging.message.id"]})
	}
	oteltest.WantAttrs(t, process[0], map[string]string{"babelqueue.attempt": "0", "babelqueue.outcome": "retried", "babelqueue.reason": "failed"})
	oteltest.WantAttrs(t, process[1], map[string]string{"babelqueue.attempt": "1", "babelqueue.outcome": "dead_lettered", "babelqueue.reason": "failed",
		"babelqueue.target": queue + ".dlq"})
	for i, p := range process {
		if got := oteltest.Attrs(p)["error.type"]; got != "failed" {
			t.Errorf("process span %d: error.type = %q, want failed", i, got)
		}
		// Both bindings report the partition and the group (Kafka: also
		// the offset and the key).
		want := []string{"messaging.destination.partition.id", "messaging.consumer.group.name"}
		if system == "kafka" {
			want = append(want, "messaging.kafka.offset", "messaging.kafka.message.key")
		}
		for _, k := range want {
			if oteltest.Attrs(p)[k] == "" {
				t.Errorf("process span %d lacks %s (all: %v)", i, k, oteltest.Attrs(p))
			}
		}
	}
	if process[0].Status.Code != codes.Unset || process[1].Status.Code != codes.Error {
		t.Errorf("statuses %v, %v: want unset, then error", process[0].Status, process[1].Status)
	}
	if !oteltest.LinkedTo(process[1], process[0].SpanContext) {
		t.Errorf("the retry does not link to the failed attempt: %v", process[1].Links)
	}
	seen := rec.seen()
	if len(seen) != 2 || seen[0]["traceparent"] != traceparent(send.SpanContext) || seen[1]["traceparent"] != seen[0]["traceparent"] {
		t.Errorf("traceparent not kept from attempt to attempt: %v", seen)
	}
	if viaHeader && (len(seen) < 2 || seen[1][bqotel.HeaderRetryLink] != traceparent(process[0].SpanContext)) {
		t.Errorf("the retry copy does not carry %s naming the failed attempt: %v", bqotel.HeaderRetryLink, seen)
	}
	sys := map[string]string{"messaging.system": system, "messaging.destination.name": queue}
	for _, c := range []struct {
		metric string
		with   map[string]string
	}{
		{bqotel.MetricSentMessages, map[string]string{"messaging.operation.name": "send", "error.type": ""}},
		{bqotel.MetricConsumedMessages, map[string]string{"messaging.operation.name": "process", "babelqueue.outcome": "retried", "babelqueue.reason": "failed", "error.type": "failed"}},
		{bqotel.MetricConsumedMessages, map[string]string{"messaging.operation.name": "process", "babelqueue.outcome": "dead_lettered", "babelqueue.reason": "failed", "error.type": "failed"}},
		{bqotel.MetricRetried, map[string]string{"babelqueue.reason": "failed", "babelqueue.target": retryTarget}},
		{bqotel.MetricDeadLettered, map[string]string{"babelqueue.reason": "failed", "babelqueue.target": queue + ".dlq"}},
	} {
		want := map[string]string{}
		for k, v := range sys {
			want[k] = v
		}
		for k, v := range c.with {
			want[k] = v
		}
		if n := h.Count(t, c.metric, want); n != 1 {
			t.Errorf("%s%v = %d, want 1", c.metric, c.with, n)
		}
	}
	if n, _ := h.Observations(t, bqotel.MetricProcessDuration, map[string]string{"error.type": "*errors.errorString"}); n != 2 {
		t.Errorf("handler duration errors = %d, want 2", n)
	}
	return process
}

// checkDeadLetterContinuesTrace checks the process span of the dead
// letter read back from queue.dlq: a child of the producer span, linked to
// the last attempt.
func checkDeadLetterContinuesTrace(t *testing.T, h *harness, queue string, last tracetest.SpanStub) {
	t.Helper()
	dlq := h.waitSpans(t, "process "+queue+".dlq", 1, 60*time.Second)[0]
	send := h.Only(t, "send "+queue)
	if dlq.Parent.SpanID() != send.SpanContext.SpanID() || dlq.SpanContext.TraceID() != send.SpanContext.TraceID() {
		t.Errorf("reading the dead letter does not continue the message's trace")
	}
	if !oteltest.LinkedTo(dlq, last.SpanContext) {
		t.Errorf("the dead letter's delivery does not link to the last attempt: %v", dlq.Links)
	}
}
