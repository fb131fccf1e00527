package otel

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// headerCarrier adapts an out-of-band header map to
// propagation.TextMapCarrier.
type headerCarrier map[string]string

func (c headerCarrier) Get(key string) string { return c[key] }
func (c headerCarrier) Set(key, value string) { c[key] = value }
func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// messageCarrier reads the headers of a delivery through
// ReceivedMessage.Header, so that headers a binding defers are read
// without being built into a map. It is read-only.
type messageCarrier struct{ m *babelqueue.ReceivedMessage }

func (c messageCarrier) Get(key string) string { v, _ := c.m.Header(key); return v }
func (c messageCarrier) Set(string, string)    {}
func (c messageCarrier) Keys() []string {
	keys := make([]string, 0, len(c.m.Headers))
	for k := range c.m.Headers {
		keys = append(keys, k)
	}
	return keys
}

var (
	_ propagation.TextMapCarrier = headerCarrier(nil)
	_ propagation.TextMapCarrier = messageCarrier{}
)

// formatLink writes sc in W3C traceparent form (HeaderRetryLink).
func formatLink(sc trace.SpanContext) string {
	h := headerCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	return h["traceparent"]
}

// parseLink reads a HeaderRetryLink value.
func parseLink(v string) (trace.SpanContext, bool) {
	if v == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), headerCarrier{"traceparent": v})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}
