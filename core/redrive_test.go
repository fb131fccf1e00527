package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// deadLetters fills orders.dlq through the App: one dead letter per urn,
// keyed key-<i>, failed at epoch + i minutes. It returns the bodies first
// published, in order.
func deadLetters(t *testing.T, mem *bqtest.InMemoryTransport, urns ...string) []string {
	t.Helper()
	clock := bqtest.NewFakeClock(epoch)
	a := testApp(mem, WithMaxAttempts(1), WithClock(clock))
	var published []string
	for i, urn := range urns {
		a.Handle(urn, func(context.Context, *wire.Envelope) error { return errors.New("boom " + urn) })
		body := envBody(t, urn, 0)
		published = append(published, body)
		mem.PublishKeyed(context.Background(), "orders", []byte(fmt.Sprintf("key-%d", i)), body, map[string]string{"traceparent": "tp"})
		drain(t, a, "orders")
		clock.Advance(time.Minute)
	}
	if mem.Len("orders.dlq") != len(urns) {
		t.Fatalf("set-up: DLQ holds %d, want %d", mem.Len("orders.dlq"), len(urns))
	}
	return published
}

func runRedrive(t *testing.T, tr driver.Transport, opts ...redrive.Option) (*redrive.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := redrive.Run(ctx, tr, "orders.dlq", append([]redrive.Option{redrive.WithPollTimeout(5 * time.Millisecond)}, opts...)...)
	if res == nil {
		t.Fatal("Redrive returned a nil result")
	}
	return res, err
}

func outcomes(res *redrive.Result) []string {
	var out []string
	for _, it := range res.Items {
		out = append(out, string(it.Outcome)+"/"+string(it.Disposition))
	}
	return out
}

func TestRedriveMovesDeadLettersBack(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	published := deadLetters(t, mem, "urn:a", "urn:b")
	res, err := runRedrive(t, mem)
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	if res.Examined != 2 || res.Moved != 2 || res.Kept != 0 || mem.Len("orders.dlq") != 0 || mem.Acked("orders.dlq") != 2 {
		t.Fatalf("result %+v, dlq len %d acked %d", res, mem.Len("orders.dlq"), mem.Acked("orders.dlq"))
	}
	back := mem.Messages("orders")
	if len(back) != 2 {
		t.Fatalf("orders holds %d", len(back))
	}
	for i, m := range back {
		env := mustDecode(t, m.Body)
		orig := mustDecode(t, published[i])
		if env.DeadLetter != nil || env.Attempts != 0 {
			t.Errorf("redriven %d still has dead_letter %+v / attempts %d", i, env.DeadLetter, env.Attempts)
		}
		if env.Meta != orig.Meta || env.TraceID != orig.TraceID || env.URN() != orig.URN() || string(env.Data()) != string(orig.Data()) {
			t.Errorf("redriven %d changed the envelope:\n got %s\nwant %s", i, m.Body, published[i])
		}
		if string(m.Key) != fmt.Sprintf("key-%d", i) {
			t.Errorf("redriven %d key = %q", i, m.Key)
		}
		if _, ok := m.Headers[wire.HeaderReplayBypass]; ok {
			t.Error("replay header stamped without the option")
		}
		if res.Items[i].Target != "orders" || res.Items[i].MessageID != orig.Meta.ID || res.Items[i].Reason != wire.ReasonFailed {
			t.Errorf("item %d = %+v", i, res.Items[i])
		}
	}
}

func TestRedriveTargetAndMetaQueueFallback(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a")
	res, err := runRedrive(t, mem, redrive.WithTarget("elsewhere"))
	if err != nil || res.Moved != 1 || mem.Len("elsewhere") != 1 {
		t.Fatalf("WithTarget: %v %+v", err, res)
	}

	// A dead letter without original_queue goes to meta.queue.
	mem2 := bqtest.NewInMemoryTransport()
	body, err := wire.AnnotateDeadLetter([]byte(envBody(t, "urn:a", 0, wire.WithQueue("from-meta"))), wire.DeadLetter{Reason: wire.ReasonFailed, Attempts: 3, Lang: wire.Lang})
	if err != nil {
		t.Fatal(err)
	}
	mem2.Publish(context.Background(), "orders.dlq", string(body))
	if res, err := runRedrive(t, mem2); err != nil || res.Moved != 1 || mem2.Len("from-meta") != 1 {
		t.Fatalf("meta.queue fallback: %v %+v queues %v", err, res, mem2.Queues())
	}

	// A target that is the DLQ itself is refused, and the message stays.
	mem3 := bqtest.NewInMemoryTransport()
	deadLetters(t, mem3, "urn:a")
	res, err = runRedrive(t, mem3, redrive.WithTarget("orders.dlq"))
	if err != nil || res.Moved != 0 || res.Items[0].Outcome != redrive.NoTarget || mem3.Len("orders.dlq") != 1 {
		t.Fatalf("target = DLQ: %v %v", err, outcomes(res))
	}
}

func TestRedriveDryRunChangesNothing(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b")
	mem.Publish(context.Background(), "orders.dlq", `{"raw":"garbage","dead_letter":{"reason":"poison"}}`)
	before := mem.Messages("orders.dlq")
	res, err := runRedrive(t, mem, redrive.WithDryRun())
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	want := []string{"would_move/rewound", "would_move/rewound", "undecodable/rewound"}
	if !slices.Equal(outcomes(res), want) || !res.DryRun || res.Moved != 2 || res.Kept != 1 {
		t.Errorf("outcomes %v, result %+v", outcomes(res), res)
	}
	after := mem.Messages("orders.dlq")
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a dry run changed the DLQ:\nbefore %v\nafter  %v", before, after)
	}
	if mem.Len("orders") != 0 || mem.InFlight("orders.dlq") != 0 || mem.Acked("orders.dlq") != 0 {
		t.Errorf("a dry run wrote or settled something")
	}
}

func TestRedriveSelectorKeepsTheOthersExactly(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b", "urn:a")
	mem.PublishKeyed(context.Background(), "orders.dlq", []byte("pk"), "not json at all", map[string]string{wire.HeaderJob: "urn:a"})
	before := mem.Messages("orders.dlq")
	res, err := runRedrive(t, mem, redrive.WithSelector(redrive.SelectURN("urn:a")))
	if err != nil {
		t.Fatalf("Redrive: %v", err)
	}
	want := []string{"moved/removed", "unselected/restored", "moved/removed", "undecodable/restored"}
	if !slices.Equal(outcomes(res), want) || res.Examined != 4 {
		t.Fatalf("outcomes = %v (examined %d), want %v", outcomes(res), res.Examined, want)
	}
	kept := mem.Messages("orders.dlq")
	if len(kept) != 2 || fmt.Sprint(kept[0]) != fmt.Sprint(before[1]) || fmt.Sprint(kept[1]) != fmt.Sprint(before[3]) {
		t.Errorf("kept messages changed:\n got %v\nwant %v and %v", kept, before[1], before[3])
	}
	if mem.Len("orders") != 2 || mem.InFlight("orders.dlq") != 0 {
		t.Errorf("orders=%d inflight=%d", mem.Len("orders"), mem.InFlight("orders.dlq"))
	}
	// A second run sees the kept ones once each and moves nothing.
	res, err = runRedrive(t, mem, redrive.WithSelector(redrive.SelectURN("urn:a")))
	if err != nil || res.Examined != 2 || res.Moved != 0 || mem.Len("orders.dlq") != 2 {
		t.Errorf("second run: %v %v", err, outcomes(res))
	}
}

func TestRedriveSelectors(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b", "urn:c") // failed at epoch, +1m, +2m
	cases := []struct {
		name string
		sel  func(*wire.Envelope) bool
		want int
	}{
		{"reason failed", redrive.SelectReason(wire.ReasonFailed), 3},
		{"reason poison", redrive.SelectReason(wire.ReasonPoison), 0},
		{"failed in [+1m, +2m)", redrive.SelectFailedBetween(epoch.Add(time.Minute), epoch.Add(2*time.Minute)), 1},
		{"failed from +1m", redrive.SelectFailedBetween(epoch.Add(time.Minute), time.Time{}), 2},
		{"urn b or c", redrive.SelectURN("urn:b", "urn:c"), 2},
	}
	for _, tc := range cases {
		res, err := runRedrive(t, mem, redrive.WithDryRun(), redrive.WithSelector(tc.sel))
		if err != nil || res.Moved != tc.want || res.Examined != 3 {
			t.Errorf("%s: would move %d of %d (%v), want %d", tc.name, res.Moved, res.Examined, err, tc.want)
		}
	}
	// Selectors combine: both must agree.
	res, _ := runRedrive(t, mem, redrive.WithDryRun(), redrive.WithSelector(redrive.SelectURN("urn:a", "urn:b")),
		redrive.WithSelector(redrive.SelectFailedBetween(epoch.Add(time.Minute), time.Time{})))
	if res.Moved != 1 {
		t.Errorf("combined selectors would move %d, want 1", res.Moved)
	}
}

func TestRedriveMax(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b", "urn:c")
	res, err := runRedrive(t, mem, redrive.WithMax(2))
	if err != nil || res.Moved != 2 || res.Examined != 2 || mem.Len("orders.dlq") != 1 || mem.Len("orders") != 2 {
		t.Fatalf("max 2: %v %+v dlq %d", err, res, mem.Len("orders.dlq"))
	}
	if env := mustDecode(t, mem.Messages("orders.dlq")[0].Body); env.URN() != "urn:c" {
		t.Errorf("the message left is %s, want the third", env.URN())
	}
}

func TestRedriveReplayBypassReachesTheHandler(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a")
	if _, err := runRedrive(t, only(mem), redrive.WithReplayBypass()); !errors.Is(err, driver.ErrInvalidOption) || mem.Len("orders.dlq") != 1 {
		t.Fatalf("replay on a transport without headers: %v", err)
	}
	res, err := runRedrive(t, mem, redrive.WithReplayBypass())
	if err != nil || res.Moved != 1 {
		t.Fatalf("Redrive: %v", err)
	}
	m := mem.Messages("orders")[0]
	if wire.IsBlank(m.Headers[wire.HeaderReplayBypass]) || string(m.Key) != "key-0" {
		t.Fatalf("redriven copy headers %v key %q", m.Headers, m.Key)
	}
	a := testApp(mem)
	charged, replay := 0, false
	a.Handle("urn:a", func(ctx context.Context, env *wire.Envelope) error {
		replay = IsReplay(ctx)
		return BypassExternalEffects(ctx, func() error { charged++; return nil })
	})
	drain(t, a, "orders")
	if !replay || charged != 0 {
		t.Errorf("replay=%v charged=%d, want true and 0", replay, charged)
	}
}

func TestRedriveFailedWriteKeepsTheMessage(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b")
	writes := 0
	mem.SetFault(func(op, q string) error {
		if q == "orders" && op != "Receive" {
			writes++
			if writes == 2 {
				return errors.New("target refused")
			}
		}
		return nil
	})
	res, err := runRedrive(t, mem)
	if !errors.Is(err, ErrSettle) {
		t.Fatalf("err = %v, want ErrSettle", err)
	}
	want := []string{"moved/removed", "failed/rewound"}
	if !slices.Equal(outcomes(res), want) {
		t.Errorf("outcomes = %v, want %v", outcomes(res), want)
	}
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 || mustDecode(t, dlq[0].Body).URN() != "urn:b" || mem.InFlight("orders.dlq") != 0 || mem.Len("orders") != 1 {
		t.Errorf("dlq %v, orders %d", dlq, mem.Len("orders"))
	}
	if res.Items[1].Err == nil {
		t.Error("the failed item carries no error")
	}
}

func TestRedriveOnAMinimalTransportLosesAndDuplicatesNothing(t *testing.T) {
	for _, dry := range []bool{false, true} {
		mem := bqtest.NewInMemoryTransport()
		deadLetters(t, mem, "urn:a", "urn:b", "urn:c")
		before := mem.Messages("orders.dlq")
		opts := []redrive.Option{redrive.WithSelector(redrive.SelectURN("urn:b"))}
		if dry {
			opts = append(opts, redrive.WithDryRun())
		}
		res, err := runRedrive(t, with(mem, func(f *driver.Features) { f.Headers, f.HandBack = false, driver.HandBackNone }), opts...)
		if err != nil || res.Examined != 3 {
			t.Fatalf("dry=%v: %v %v", dry, err, outcomes(res))
		}
		var bodies, want []string
		for _, m := range mem.Messages("orders.dlq") {
			bodies = append(bodies, m.Body)
		}
		for i, m := range before {
			if dry || i != 1 {
				want = append(want, m.Body)
			}
		}
		slices.Sort(bodies)
		slices.Sort(want)
		if !slices.Equal(bodies, want) || mem.InFlight("orders.dlq") != 0 {
			t.Errorf("dry=%v: DLQ bodies changed or duplicated: %d vs %d", dry, len(bodies), len(want))
		}
		if !dry && mem.Len("orders") != 1 {
			t.Errorf("moved %d", mem.Len("orders"))
		}
	}
}

func TestRedriveArguments(t *testing.T) {
	if _, err := redrive.Run(context.Background(), nil, "x"); !errors.Is(err, driver.ErrInvalidOption) {
		t.Errorf("nil transport: %v", err)
	}
	if _, err := redrive.Run(context.Background(), bqtest.NewInMemoryTransport(), " "); !errors.Is(err, driver.ErrInvalidOption) {
		t.Errorf("blank dlq: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := redrive.Run(ctx, bqtest.NewInMemoryTransport(), "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestRedriveDryRunHandsBackWhenCancelled(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b")
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	sel := func(*wire.Envelope) bool {
		if n++; n == 2 {
			cancel()
		}
		return true
	}
	res, err := redrive.Run(ctx, with(mem, func(f *driver.Features) { f.Headers, f.HandBack = false, driver.HandBackNone }), "orders.dlq", redrive.WithDryRun(), redrive.WithSelector(sel),
		redrive.WithPollTimeout(5*time.Millisecond))
	if !errors.Is(err, context.Canceled) || res.Examined != 2 {
		t.Fatalf("err %v examined %d", err, res.Examined)
	}
	if mem.Len("orders.dlq") != 2 || mem.InFlight("orders.dlq") != 0 {
		t.Errorf("after a cancelled dry run: dlq %d in flight %d, want 2 and 0", mem.Len("orders.dlq"), mem.InFlight("orders.dlq"))
	}
}

func TestRedriveWritesByFeatures(t *testing.T) {
	cases := []struct {
		name        string
		f           func(*driver.Features)
		sentinel    string // how the run hands back the copy it wrote back
		keyKept     bool
		headersKept bool
	}{
		{"every feature", func(*driver.Features) {}, ", HandBack orders.dlq", true, true},
		{"keys, no headers, no hand-back", func(f *driver.Features) { f.Headers, f.HandBack = false, driver.HandBackNone }, ", restore orders.dlq, Ack orders.dlq", true, false},
		{"headers, no keys", func(f *driver.Features) { f.Keys = false }, ", HandBack orders.dlq", false, true},
		{"nothing", func(f *driver.Features) { *f = driver.Features{} }, ", restore orders.dlq, Ack orders.dlq", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport()
			deadLetters(t, mem, "urn:a", "urn:b")
			var log opLog
			log.install(mem)
			res, err := runRedrive(t, with(mem, tc.f), redrive.WithSelector(redrive.SelectURN("urn:a")))
			if err != nil || res.Moved != 1 || res.Kept != 1 {
				t.Fatalf("%v %v", err, outcomes(res))
			}
			// The run stops at the copy it wrote back, handing it back once
			// more: by HandBack when it can, else by another write-back.
			want := "redrive orders, Ack orders.dlq, restore orders.dlq, Ack orders.dlq" + tc.sentinel
			if log.String() != want {
				t.Errorf("operations = %q, want %q", log.String(), want)
			}
			moved, kept := mem.Messages("orders")[0], mem.Messages("orders.dlq")[0]
			if tc.headersKept != (moved.Headers[wire.HeaderRedriveCount] == "1") || tc.headersKept != (moved.Headers["traceparent"] == "tp") {
				t.Errorf("moved copy headers %v: want bq-redrive-count=1 and traceparent exactly when headers are written", moved.Headers)
			}
			if (string(moved.Key) == "key-0") != tc.keyKept || (string(kept.Key) == "key-1") != tc.keyKept {
				t.Errorf("keys moved %q kept %q, kept=%v", moved.Key, kept.Key, tc.keyKept)
			}
			if tc.headersKept && kept.Headers["traceparent"] != "tp" {
				t.Errorf("kept message lost its out-of-band headers: %v", kept.Headers)
			}
			if mustDecode(t, kept.Body).URN() != "urn:b" || dlqEntry(t, kept.Body).Reason != wire.ReasonFailed {
				t.Errorf("kept message changed: %s", kept.Body)
			}

			mem2 := bqtest.NewInMemoryTransport()
			deadLetters(t, mem2, "urn:a")
			_, err = runRedrive(t, with(mem2, tc.f), redrive.WithReplayBypass())
			if tc.headersKept != (err == nil) {
				t.Errorf("replay bypass: err = %v, want valid=%v", err, tc.headersKept)
			}
			if tc.headersKept && mem2.Messages("orders")[0].Headers[wire.HeaderReplayBypass] == "" {
				t.Error("replay header missing")
			}
		})
	}
}

func TestRedriveGuardLeavesMessagesRedrivenTooOften(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a")
	// Three rounds: dead letter -> redrive -> fail again. The guard at 2
	// lets two redrives through and holds the third.
	a := testApp(mem, WithMaxAttempts(1))
	a.Handle("urn:a", func(context.Context, *wire.Envelope) error { return errors.New("still broken") })
	var outs []string
	for round := 1; round <= 3; round++ {
		var seen []redrive.Item
		res, err := runRedrive(t, mem, redrive.WithMaxRedrives(2), redrive.WithProgress(nil, func(it redrive.Item) { seen = append(seen, it) }))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(seen) != res.Examined || res.Examined == 0 {
			t.Fatalf("round %d: progress saw %d items, result examined %d", round, len(seen), res.Examined)
		}
		outs = append(outs, string(res.Items[0].Outcome))
		if res.Items[0].Outcome == redrive.Moved {
			moved := mem.Messages("orders")
			if got := moved[len(moved)-1].Headers[wire.HeaderRedriveCount]; got != fmt.Sprint(round) {
				t.Fatalf("round %d: moved copy has %s=%q", round, wire.HeaderRedriveCount, got)
			}
			drain(t, a, "orders")
		}
	}
	if want := []string{"moved", "moved", "guarded"}; !slices.Equal(outs, want) {
		t.Fatalf("outcomes by round %v, want %v", outs, want)
	}
	if mem.Len("orders.dlq") != 1 {
		t.Fatalf("the guarded dead letter must stay: DLQ holds %d", mem.Len("orders.dlq"))
	}
}

func TestRedriveMessageSelectorSeesHeaders(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	deadLetters(t, mem, "urn:a", "urn:b")
	var keys []string
	res, err := runRedrive(t, mem, redrive.WithMessageSelector(func(m *driver.ReceivedMessage, env *wire.Envelope) bool {
		keys = append(keys, m.Headers["traceparent"])
		return env.URN() == "urn:b"
	}))
	if err != nil || res.Moved != 1 || res.Kept != 1 {
		t.Fatalf("%v %v", err, outcomes(res))
	}
	if len(keys) == 0 || keys[0] != "tp" {
		t.Fatalf("selector saw headers %v", keys)
	}
}

// selfRedriver is a transport that runs its own redrive.
type selfRedriver struct {
	*bqtest.InMemoryTransport
	got  redrive.Plan
	dlq  string
	runs int
}

func (s *selfRedriver) Redrive(_ context.Context, dlq string, plan redrive.Plan) (*redrive.Result, error) {
	s.runs++
	s.dlq, s.got = dlq, plan
	res := &redrive.Result{DryRun: plan.DryRun}
	plan.Report(res, redrive.Item{Outcome: redrive.AlreadyMoved})
	return res, nil
}

func TestRedriveHandsTheRunToARedriver(t *testing.T) {
	s := &selfRedriver{InMemoryTransport: bqtest.NewInMemoryTransport()}
	var items int
	res, err := redrive.Run(context.Background(), s, "orders.dlq", redrive.WithTarget("elsewhere"), redrive.WithMax(7),
		redrive.WithDryRun(), redrive.WithCursor("c1"), redrive.WithMaxRedrives(4), redrive.WithProgress(nil, func(redrive.Item) { items++ }))
	if err != nil || s.runs != 1 || s.dlq != "orders.dlq" {
		t.Fatalf("err %v runs %d dlq %q", err, s.runs, s.dlq)
	}
	p := s.got
	if p.Target != "elsewhere" || p.Max != 7 || !p.DryRun || p.Cursor != "c1" || p.MaxRedrives != 4 || p.PollTimeout != redrive.DefaultPollTimeout {
		t.Fatalf("plan %+v", p)
	}
	if !res.DryRun || res.Recovered != 1 || res.Examined != 1 || items != 1 {
		t.Fatalf("result %+v, progress items %d", res, items)
	}
	if _, err := redrive.Run(context.Background(), s, " "); !errors.Is(err, driver.ErrInvalidOption) || s.runs != 1 {
		t.Fatalf("blank DLQ: %v (runs %d)", err, s.runs)
	}
}

func TestRedrivePlanMovedHeaders(t *testing.T) {
	p := redrive.NewPlan(redrive.WithReplayBypass())
	from := &driver.ReceivedMessage{Headers: map[string]string{"traceparent": "tp", wire.HeaderAttempts: "3", wire.HeaderRedriveCount: "2", wire.HeaderJob: "urn:x"}}
	h := p.MovedHeaders(from)
	want := map[string]string{"traceparent": "tp", wire.HeaderRedriveCount: "3", wire.HeaderReplayBypass: "true"}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Fatalf("moved headers %v, want %v", h, want)
	}
	if redrive.Count(map[string]string{wire.HeaderRedriveCount: "-1"}) != 0 || redrive.Count(map[string]string{wire.HeaderRedriveCount: " 5 "}) != 5 {
		t.Fatal("RedriveCount must read a non-negative integer, else 0")
	}
}

func TestRedriveResultCountsRecoveredItems(t *testing.T) {
	plan := redrive.NewPlan()
	res := &redrive.Result{}
	plan.Report(res, redrive.Item{Outcome: redrive.AlreadyMoved, Disposition: redrive.DispositionRemoved})
	plan.Report(res, redrive.Item{Outcome: redrive.AlreadyKept, Disposition: redrive.DispositionRestored})
	plan.Report(res, redrive.Item{Outcome: redrive.Moved, Disposition: redrive.DispositionRemoved})
	if res.Examined != 3 || res.Recovered != 1 || res.Kept != 1 || res.Moved != 1 {
		t.Errorf("result %+v; want 3 examined, 1 recovered, 1 kept, 1 moved", res)
	}
}

// TestRedriveReportsEveryProblem: the problems of the options and of the
// call come back together, and nothing is read.
func TestRedriveReportsEveryProblem(t *testing.T) {
	_, err := redrive.Run(context.Background(), nil, " ", redrive.WithMax(-1), redrive.WithPollTimeout(0), redrive.WithMaxRedrives(-2))
	for _, want := range []string{"max -1", "poll timeout 0s", "max redrives -2", "transport is nil", "dead-letter queue is blank"} {
		if !errors.Is(err, driver.ErrInvalidOption) || !strings.Contains(err.Error(), want) {
			t.Errorf("Run error %v does not report %q", err, want)
		}
	}
}
