package babelqueue

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestHeadersAndReplayInTheHandlerContext(t *testing.T) {
	cases := []struct {
		name       string
		headers    map[string]string
		wantReplay bool
	}{
		{name: "no replay header", headers: map[string]string{"traceparent": "tp"}},
		{name: "replay", headers: map[string]string{HeaderReplayBypass: "true"}, wantReplay: true},
		{name: "blank replay", headers: map[string]string{HeaderReplayBypass: " \t"}},
		{name: "nbsp is not blank", headers: map[string]string{HeaderReplayBypass: "\u00a0"}, wantReplay: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := NewInMemoryTransport()
			a := testApp(mem)
			var got map[string]string
			var replay bool
			effects := 0
			a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
				got, replay = HeadersFromContext(ctx), IsReplay(ctx)
				return BypassExternalEffects(ctx, func() error { effects++; return nil })
			})
			mem.Forward(context.Background(), "orders", envBody(t, "urn:x", 0), nil, tc.headers)
			drain(t, a, "orders")
			for k, v := range tc.headers {
				if got[k] != v {
					t.Errorf("header %s = %q, want %q", k, got[k], v)
				}
			}
			if tc.headers[HeaderJob] != got[HeaderJob] {
				t.Errorf("contract headers missing from the context: %v", got)
			}
			if replay != tc.wantReplay {
				t.Errorf("IsReplay = %v, want %v", replay, tc.wantReplay)
			}
			if wantEffects := map[bool]int{true: 0, false: 1}[tc.wantReplay]; effects != wantEffects {
				t.Errorf("effects ran %d times, want %d", effects, wantEffects)
			}
		})
	}
}

func TestContextHelpersOutsideAHandler(t *testing.T) {
	ctx := context.Background()
	if HeadersFromContext(ctx) != nil || IsReplay(ctx) {
		t.Error("a bare context has headers or is a replay")
	}
	boom := errors.New("boom")
	if err := BypassExternalEffects(ctx, func() error { return boom }); err != boom {
		t.Errorf("BypassExternalEffects = %v, want fn's error", err)
	}
	h := map[string]string{HeaderReplayBypass: "1"}
	ctx = ContextWithHeaders(ctx, h)
	h[HeaderReplayBypass] = ""
	if !IsReplay(ctx) {
		t.Error("ContextWithHeaders did not copy its map")
	}
	got := HeadersFromContext(ctx)
	got["x"] = "y"
	if _, ok := HeadersFromContext(ctx)["x"]; ok {
		t.Error("HeadersFromContext returned the context's own map")
	}
	ran := false
	if err := BypassExternalEffects(ctx, func() error { ran = true; return boom }); err != nil || ran {
		t.Errorf("on replay: err=%v ran=%v, want nil and false", err, ran)
	}
}

type ctxKey struct{}

func TestSettleContextBehavesLikeWithoutCancelWithTimeout(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
	c := newSettleContext()

	// A call that ends in time: values carried, the parent's
	// cancellation not followed, never done.
	c.arm(parent, time.Hour)
	cancel(errors.New("consumer stopping"))
	if c.Value(ctxKey{}) != "v" {
		t.Error("the settle context lost the consume context's values")
	}
	if c.Err() != nil || context.Cause(c) != nil {
		t.Errorf("Err = %v, Cause = %v after the parent was cancelled; want nil", c.Err(), context.Cause(c))
	}
	if d, ok := c.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline = %v, %v; want about an hour ahead", d, ok)
	}
	c.disarm()

	// A call that overruns its deadline.
	c.arm(parent, 10*time.Millisecond)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the deadline passed and Done was not closed")
	}
	if c.Err() != context.DeadlineExceeded || context.Cause(c) != context.DeadlineExceeded {
		t.Errorf("Err = %v, Cause = %v; want DeadlineExceeded", c.Err(), context.Cause(c))
	}
	c.disarm()

	// The next call starts afresh.
	c.arm(parent, time.Hour)
	if c.Err() != nil {
		t.Errorf("re-armed context: Err = %v", c.Err())
	}
	select {
	case <-c.Done():
		t.Error("re-armed context is done")
	default:
	}
	c.disarm()
}

func TestSettleContextEnforcesEachCallsOwnDeadline(t *testing.T) {
	c := newSettleContext()
	// A short call started the timer; a long call follows it. The timer
	// fires in the long call, which must go on.
	c.arm(context.Background(), 20*time.Millisecond)
	c.disarm()
	c.arm(context.Background(), 200*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if c.Err() != nil {
		t.Fatalf("the previous call's deadline ended the current call: %v", c.Err())
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the current call's deadline passed and Done was not closed")
	}
	c.disarm()
	// A firing while no call runs ends nothing.
	c.expire()
	c.arm(context.Background(), time.Hour)
	if c.Err() != nil {
		t.Fatalf("a firing between calls ended the next call: %v", c.Err())
	}
	c.disarm()
}
