package babelqueue

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// predecodingTransport predecodes every message it pops, as a prefetching
// binding does, optionally changing the body afterwards.
type predecodingTransport struct {
	*bqtest.InMemoryTransport
	change func(string) string
	popped []*driver.ReceivedMessage
}

func (t *predecodingTransport) Receive(ctx context.Context, queue string, timeout time.Duration) (*driver.ReceivedMessage, error) {
	m, err := t.InMemoryTransport.Pop(ctx, queue, timeout)
	if m == nil || err != nil {
		return m, err
	}
	m.Predecode()
	if t.change != nil {
		m.Body = t.change(m.Body)
	}
	t.popped = append(t.popped, m)
	return m, nil
}

func TestAppUsesThePredecodedEnvelopeOfAnUnchangedBody(t *testing.T) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	tr := &predecodingTransport{InMemoryTransport: mem}
	a, err := NewApp(tr, WithPollTimeout(time.Millisecond), WithLogger(quietLogger()), WithLegacyURNs())
	if err != nil {
		t.Fatal(err)
	}
	var got []*Envelope
	a.Handle("urn:a", func(_ context.Context, env *Envelope) error {
		got = append(got, env)
		return nil
	})
	env, _ := Make("urn:a", map[string]any{"n": 1}, WithQueue("q"))
	body, _ := env.Encode()
	if err := mem.Publish(ctx, "q", string(body)); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Drain(ctx, "q"); n != 1 || err != nil {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if len(got) != 1 || len(tr.popped) != 1 {
		t.Fatalf("handled %d, popped %d", len(got), len(tr.popped))
	}
	if got[0].Meta.ID != env.Meta.ID {
		t.Fatalf("handled message %q, want %q", got[0].Meta.ID, env.Meta.ID)
	}
}

func TestAppDecodesAgainABodyChangedAfterPredecode(t *testing.T) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	tr := &predecodingTransport{InMemoryTransport: mem, change: func(body string) string {
		out, err := wire.SetAttempts([]byte(body), 4)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}}
	a, err := NewApp(tr, WithPollTimeout(time.Millisecond), WithLogger(quietLogger()), WithLegacyURNs())
	if err != nil {
		t.Fatal(err)
	}
	attempts := -1
	a.Handle("urn:a", func(_ context.Context, env *Envelope) error {
		attempts = env.Attempts
		return nil
	})
	env, _ := Make("urn:a", nil, WithQueue("q"))
	body, _ := env.Encode()
	_ = mem.Publish(ctx, "q", string(body))
	if n, err := a.Drain(ctx, "q"); n != 1 || err != nil {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if attempts != 4 {
		t.Fatalf("handler saw attempts %d, want 4 (the changed body's)", attempts)
	}
}
