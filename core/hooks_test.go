package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// hookLog is a hook of every App kind that records what it is told.
type hookLog struct {
	mu         sync.Mutex
	published  []string // intent queue err
	settled    []Settlement
	deliveries []*Delivery
	redriven   []redrive.Item
	ctxSeen    []any // the value of ctxKey in the settle hook's context
}

type hookCtxKey struct{}

func (h *hookLog) OnPublish(ctx context.Context, out *driver.Outgoing) context.Context {
	out.Headers["x-hooked"] = out.Intent.String()
	return ctx
}

func (h *hookLog) OnPublished(_ context.Context, out *driver.Outgoing, r driver.Receipt, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published = append(h.published, fmt.Sprintf("%v %s %v", out.Intent, target(r, out.Queue), err != nil))
}

func (h *hookLog) OnDelivery(ctx context.Context, d *Delivery) context.Context {
	return context.WithValue(ctx, hookCtxKey{}, "delivery:"+d.Queue)
}

func (h *hookLog) OnSettle(ctx context.Context, d *Delivery, s *Settlement) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.settled = append(h.settled, *s)
	h.deliveries = append(h.deliveries, d)
	h.ctxSeen = append(h.ctxSeen, ctx.Value(hookCtxKey{}))
}

func (h *hookLog) OnRedrive(_ context.Context, _ string, it redrive.Item) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.redriven = append(h.redriven, it)
}

func (h *hookLog) last(t *testing.T) (Settlement, *Delivery) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.settled) == 0 {
		t.Fatal("no settlement reported")
	}
	return h.settled[len(h.settled)-1], h.deliveries[len(h.deliveries)-1]
}

// TestSettleHookReportsEveryOutcome drives one delivery down each path and
// checks the Settlement the hook receives, field by field.
func TestSettleHookReportsEveryOutcome(t *testing.T) {
	boom := errors.New("boom")
	type want struct {
		outcome  Outcome
		reason   string
		target   string
		delay    time.Duration
		attempts int
		ran      bool
		errIs    error
	}
	cases := []struct {
		name    string
		opts    []Option
		mem     []bqtest.MemoryOption
		body    func(t *testing.T) string
		headers map[string]string
		handler Handler
		fault   string // a write intent the transport refuses
		want    want
	}{
		{name: "handled", handler: func(context.Context, *Envelope) error { return nil },
			want: want{outcome: OutcomeHandled, attempts: 1, ran: true}},
		{name: "retried by republish", handler: func(context.Context, *Envelope) error { return boom },
			want: want{outcome: OutcomeRetried, reason: wire.ReasonFailed, target: "orders", attempts: 1, ran: true, errIs: boom}},
		{name: "retried on a tier", mem: []bqtest.MemoryOption{bqtest.WithMemoryRetryTiers(5 * time.Second)},
			handler: func(context.Context, *Envelope) error { return boom },
			want:    want{outcome: OutcomeRetried, reason: wire.ReasonFailed, target: "orders", delay: 5 * time.Second, attempts: 1, ran: true, errIs: boom}},
		{name: "dead-lettered after the last attempt", opts: []Option{WithMaxAttempts(1)},
			handler: func(context.Context, *Envelope) error { return boom },
			want:    want{outcome: OutcomeDeadLettered, reason: wire.ReasonFailed, target: "orders.dlq", attempts: 1, ran: true, errIs: boom}},
		{name: "dropped after the last attempt", opts: []Option{WithMaxAttempts(1), WithDeadLetter(false)},
			handler: func(context.Context, *Envelope) error { return boom },
			want:    want{outcome: OutcomeDropped, reason: wire.ReasonFailed, attempts: 1, ran: true, errIs: boom}},
		{name: "poison", body: func(*testing.T) string { return "%%not json" },
			want: want{outcome: OutcomeDeadLettered, reason: wire.ReasonPoison, target: "orders.dlq", attempts: 1, errIs: ErrPoison}},
		{name: "version-gated", headers: map[string]string{wire.HeaderSchemaVersion: "2"},
			want: want{outcome: OutcomeDeadLettered, reason: wire.ReasonVersionGated, target: "orders.dlq", errIs: ErrUnsupportedSchemaVersion}},
		{name: "version-gated, dead-lettering off", opts: []Option{WithDeadLetter(false)}, headers: map[string]string{wire.HeaderSchemaVersion: "2"},
			want: want{outcome: OutcomeDropped, reason: wire.ReasonVersionGated, errIs: ErrUnsupportedSchemaVersion}},
		{name: "unknown URN retried", want: want{outcome: OutcomeRetried, reason: wire.ReasonUnknownURN, target: "orders", attempts: 1, errIs: ErrNoHandler}},
		{name: "unknown URN dead-lettered", opts: []Option{WithUnknownURNStrategy(StrategyDeadLetter)},
			want: want{outcome: OutcomeDeadLettered, reason: wire.ReasonUnknownURN, target: "orders.dlq", attempts: 1, errIs: ErrNoHandler}},
		{name: "unknown URN deleted", opts: []Option{WithUnknownURNStrategy(StrategyDelete)},
			want: want{outcome: OutcomeDeleted, reason: wire.ReasonUnknownURN, attempts: 1, errIs: ErrNoHandler}},
		{name: "unknown URN released", opts: []Option{WithUnknownURNStrategy(StrategyRelease)},
			want: want{outcome: OutcomeReleased, reason: wire.ReasonUnknownURN, target: "orders", attempts: 1, errIs: ErrNoHandler}},
		{name: "handed back after a failed retry write", fault: "retry",
			handler: func(context.Context, *Envelope) error { return boom },
			want:    want{outcome: OutcomeHandedBack, attempts: 1, ran: true, errIs: ErrSettle}},
		{name: "handed back after a failed acknowledge", fault: "Ack",
			handler: func(context.Context, *Envelope) error { return nil },
			want:    want{outcome: OutcomeHandedBack, attempts: 1, ran: true, errIs: ErrSettle}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := bqtest.NewFakeClock(epoch)
			mem := bqtest.NewInMemoryTransport(append([]bqtest.MemoryOption{bqtest.WithMemoryClock(clock)}, tc.mem...)...)
			log := &hookLog{}
			a := testApp(mem, append([]Option{WithHooks(log), WithClock(clock)}, tc.opts...)...)
			if tc.handler != nil {
				h := tc.handler
				a.Handle("urn:t:x", func(ctx context.Context, env *Envelope) error {
					clock.Advance(40 * time.Millisecond) // the handler's run time
					return h(ctx, env)
				})
			}
			body := envBody(t, "urn:t:x", 0)
			if tc.body != nil {
				body = tc.body(t)
			}
			if err := forward(mem, "orders", body, tc.headers); err != nil {
				t.Fatal(err)
			}
			if tc.fault != "" {
				mem.SetFault(func(op, _ string) error {
					if op == tc.fault {
						return errors.New("refused")
					}
					return nil
				})
			}
			msg, _ := mem.Pop(ctx, "orders", 0)
			a.deliver(ctx, msg)
			st, d := log.last(t)
			w := tc.want
			if st.Outcome != w.outcome || st.Reason != w.reason || st.Target != w.target || st.Delay != w.delay || st.Deliveries != w.attempts {
				t.Errorf("settlement = %v reason %q target %q delay %v attempts %d; want %v %q %q %v %d",
					st.Outcome, st.Reason, st.Target, st.Delay, st.Deliveries, w.outcome, w.reason, w.target, w.delay, w.attempts)
			}
			if st.HandlerRan != w.ran || (w.ran && st.HandlerDuration != 40*time.Millisecond) || (!w.ran && st.HandlerDuration != 0) {
				t.Errorf("handler ran %v for %v, want ran=%v for 40ms", st.HandlerRan, st.HandlerDuration, w.ran)
			}
			if handlerFailed := tc.handler != nil && tc.handler(ctx, nil) != nil; handlerFailed != (st.HandlerErr != nil) {
				t.Errorf("handler error = %v, want one exactly when the handler failed", st.HandlerErr)
			}
			if (w.errIs == nil) != (st.Err == nil) || (w.errIs != nil && !errors.Is(st.Err, w.errIs)) {
				t.Errorf("settlement error = %v, want one matching %v", st.Err, w.errIs)
			}
			if d.Message != msg || d.Queue != "orders" {
				t.Errorf("delivery = %+v", d)
			}
			if decoded := tc.body == nil && tc.headers == nil; decoded != (d.Envelope != nil) || (decoded && d.URN != "urn:t:x") {
				t.Errorf("delivery envelope %v urn %q, want decoded=%v", d.Envelope, d.URN, decoded)
			}
			if got := log.ctxSeen[len(log.ctxSeen)-1]; got != "delivery:orders" {
				t.Errorf("the settle hook saw context value %v, want the delivery hook's", got)
			}
		})
	}
}

func TestPublishHooksSeeEveryWriteAndMayAddHeaders(t *testing.T) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport()
	log := &hookLog{}
	a := testApp(mem, WithHooks(log), WithMaxAttempts(2))
	a.Handle("urn:t:x", func(context.Context, *Envelope) error { return errors.New("boom") })
	caller := map[string]string{"x-caller": "1"}
	if _, err := a.PublishWithHeaders(ctx, "urn:t:x", nil, caller, ToQueue("orders")); err != nil {
		t.Fatal(err)
	}
	if len(caller) != 1 {
		t.Errorf("the hook changed the caller's header map: %v", caller)
	}
	if n := drain(t, a, "orders"); n != 2 {
		t.Fatalf("handled %d deliveries, want 2", n)
	}
	want := []string{"publish orders false", "retry orders false", "dead_letter orders.dlq false"}
	if fmt.Sprint(log.published) != fmt.Sprint(want) {
		t.Errorf("published = %v, want %v", log.published, want)
	}
	d := mem.Messages("orders.dlq")[0]
	if d.Headers["x-hooked"] != "dead_letter" || d.Headers["x-caller"] != "1" {
		t.Errorf("dead letter headers = %v: want the hook's header and the caller's kept", d.Headers)
	}
}

func TestRedriveHooksOfTheApp(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:t:a", "urn:t:b")
	log := &hookLog{}
	a := testApp(mem, WithHooks(log))
	var progress int
	res, err := a.Redrive(context.Background(), "orders.dlq", redrive.WithSelector(redrive.SelectURN("urn:t:a")),
		redrive.WithPollTimeout(5*time.Millisecond), redrive.WithProgress(nil, func(redrive.Item) { progress++ }))
	if err != nil || res.Moved != 1 {
		t.Fatalf("redrive: %v %v", err, outcomes(res))
	}
	if len(log.redriven) != res.Examined || progress != res.Examined || log.redriven[0].Outcome != redrive.Moved {
		t.Errorf("hook saw %v, progress %d, examined %d", log.redriven, progress, res.Examined)
	}
}

type panicky struct{}

func (panicky) OnSettle(context.Context, *Delivery, *Settlement) { panic("hook bug") }

type staleTierOnly struct{}

func (staleTierOnly) OnStaleTier(context.Context, driver.ReinjectBacklog) {}

func TestHookOptionsAndPanics(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	if _, err := NewApp(mem, WithHooks(nil)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a nil hook: %v, want ErrInvalidOption", err)
	}
	if _, err := NewApp(mem, WithHooks(42)); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a hook of no kind: %v, want ErrInvalidOption", err)
	}
	if _, err := NewApp(mem, WithHooks(staleTierOnly{})); err != nil {
		t.Errorf("a driver.StaleTierHook alone: %v, want it accepted", err)
	}
	a := testApp(mem, WithHooks(panicky{}))
	a.Handle("urn:t:x", func(context.Context, *Envelope) error { return nil })
	if _, err := a.Publish(context.Background(), "urn:t:x", nil); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, a); n != 1 || mem.Acked(DefaultQueue) != 1 {
		t.Errorf("a panicking hook changed the settlement: handled %d acked %d", n, mem.Acked(DefaultQueue))
	}
}

func TestOutcomeNames(t *testing.T) {
	want := []string{"outcome(0)", "handled", "retried", "dead_lettered", "dropped", "released", "deleted", "handed_back", "outcome(8)"}
	for i, w := range want {
		if got := Outcome(i).String(); got != w {
			t.Errorf("Outcome(%d) = %q, want %q", i, got, w)
		}
	}
}
