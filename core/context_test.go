package babelqueue

import (
	"context"
	"errors"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

func TestHeadersAndReplayInTheHandlerContext(t *testing.T) {
	cases := []struct {
		name       string
		headers    map[string]string
		wantReplay bool
	}{
		{name: "no replay header", headers: map[string]string{"traceparent": "tp"}},
		{name: "replay", headers: map[string]string{wire.HeaderReplayBypass: "true"}, wantReplay: true},
		{name: "blank replay", headers: map[string]string{wire.HeaderReplayBypass: " \t"}},
		{name: "nbsp is not blank", headers: map[string]string{wire.HeaderReplayBypass: "\u00a0"}, wantReplay: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport()
			a := testApp(mem)
			var got map[string]string
			var replay bool
			effects := 0
			a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
				got, replay = HeadersFromContext(ctx), IsReplay(ctx)
				return BypassExternalEffects(ctx, func() error { effects++; return nil })
			})
			mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: envBody(t, "urn:x", 0), From: nil, Headers: tc.headers})
			drain(t, a, "orders")
			for k, v := range tc.headers {
				if got[k] != v {
					t.Errorf("header %s = %q, want %q", k, got[k], v)
				}
			}
			if tc.headers[wire.HeaderJob] != got[wire.HeaderJob] {
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
	h := map[string]string{wire.HeaderReplayBypass: "1"}
	ctx = ContextWithHeaders(ctx, h)
	h[wire.HeaderReplayBypass] = ""
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
