package otel

import (
	"maps"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/trace"
)

// mapSource is a babelqueue.HeaderSource over a map.
type mapSource map[string]string

func (s mapSource) LookupHeader(key string) (string, bool) { v, ok := s[key]; return v, ok }
func (s mapSource) HeaderMap() map[string]string           { return maps.Clone(s) }

func TestWithLinkKeepsHeadersABindingDeferred(t *testing.T) {
	msg := &babelqueue.ReceivedMessage{Queue: "orders"}
	msg.DeferHeaders(mapSource{"traceparent": "00-aa-bb-01", "bq-attempts": "1"})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	cp := withLink(msg, &delivery{span: trace.SpanFromContext(trace.ContextWithSpanContext(t.Context(), sc))})
	for k, want := range map[string]string{"traceparent": "00-aa-bb-01", "bq-attempts": "1", HeaderRetryLink: formatLink(sc)} {
		if got, ok := cp.Header(k); !ok || got != want {
			t.Errorf("copy's %s = %q, %v; want %q", k, got, ok, want)
		}
	}
	if msg.Headers != nil {
		t.Error("withLink changed the delivered message")
	}
}
