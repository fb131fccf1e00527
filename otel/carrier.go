package otel

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// headerCarrier adapts out-of-band headers to propagation.TextMapCarrier.
type headerCarrier map[string]string

var _ propagation.TextMapCarrier = headerCarrier(nil)

func (c headerCarrier) Get(key string) string { return c[key] }
func (c headerCarrier) Set(key, value string) { c[key] = value }
func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// extract returns ctx carrying the remote span context of headers.
func (t *Telemetry) extract(ctx context.Context, headers map[string]string) context.Context {
	if len(headers) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, headerCarrier(headers))
}

// inject returns a copy of headers with the trace context of ctx added.
func (t *Telemetry) inject(ctx context.Context, headers map[string]string) map[string]string {
	out := make(map[string]string, len(headers)+2)
	maps.Copy(out, headers)
	t.prop.Inject(ctx, headerCarrier(out))
	return out
}

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
