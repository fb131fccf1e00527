package driver

import (
	"context"
	"testing"
)

type otherKey struct{}

func TestDecodedWithContextSharesThePredecodedAllocation(t *testing.T) {
	m := &ReceivedMessage{Body: `{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`}
	m.Predecode()
	pre := m.pre
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	env, ctx, err := m.DecodedWithContext(parent)
	if err != nil || env != &pre.env || ctx != &pre.ctx {
		t.Fatalf("DecodedWithContext = %p, %p, %v; want the predecoded envelope %p and context %p", env, ctx, err, &pre.env, &pre.ctx)
	}
	if got := ctx.Value(MessageContextKey{}); got != m {
		t.Errorf("Value(MessageContextKey) = %v; want the message", got)
	}
	if got := ctx.Value(otherKey{}); got != "v" {
		t.Errorf("Value(otherKey) = %v; want the parent's value", got)
	}
	cancel()
	if ctx.Err() == nil {
		t.Error("the context did not follow its parent's cancellation")
	}
	env2, ctx2, err := m.DecodedWithContext(context.Background())
	if err != nil || env2 == env || ctx2 == ctx || env2.Job != "urn:a" || ctx2.Err() != nil {
		t.Fatalf("second DecodedWithContext = %p, %p, %v; want a fresh decode and context", env2, ctx2, err)
	}
}

func TestDecodedWithContextKeepsTheDecodeError(t *testing.T) {
	m := &ReceivedMessage{Body: `{"job":"urn:a"}`}
	_, ctx, err := m.DecodedWithContext(context.Background())
	if err == nil || ctx == nil || ctx.Message != m {
		t.Fatalf("DecodedWithContext = %v, %v; want the decode error and a context", ctx, err)
	}
}
