package babelqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// payError is a handler error of a named type, for dead_letter.exception.
type payError struct{ code int }

func (e *payError) Error() string { return "payment declined " + strconv.Itoa(e.code) }

// dlqEntry decodes the dead_letter block of a DLQ body.
func dlqEntry(t *testing.T, body string) wire.DeadLetter {
	t.Helper()
	dl, ok := wire.DeadLetterOf([]byte(body))
	if !ok || dl == nil {
		t.Fatalf("no dead_letter block in %s", body)
	}
	return *dl
}

func TestMaxAttemptsRetryThenDeadLetterOrDrop(t *testing.T) {
	cases := []struct {
		max        int
		deadLetter bool
		wantCalls  int
	}{
		{max: 1, deadLetter: true, wantCalls: 1},
		{max: 3, deadLetter: true, wantCalls: 3},
		{max: 1, deadLetter: false, wantCalls: 1},
		{max: 3, deadLetter: false, wantCalls: 3},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("max=%d,dlq=%v", tc.max, tc.deadLetter), func(t *testing.T) {
			clock := bqtest.NewFakeClock(epoch)
			mem := bqtest.NewInMemoryTransport()
			var rec recorder
			a := testApp(mem, append(rec.options(), WithMaxAttempts(tc.max), WithDeadLetter(tc.deadLetter), WithClock(clock))...)
			var calls []int
			a.Handle("urn:pay", func(ctx context.Context, env *Envelope) error {
				calls = append(calls, env.Attempts)
				return fmt.Errorf("charging: %w", &payError{code: 51})
			})
			body := envBody(t, "urn:pay", 0)
			if err := mem.PublishKeyed(context.Background(), "orders", []byte("k-1"), body, map[string]string{"traceparent": "tp-1"}); err != nil {
				t.Fatal(err)
			}
			if n := drain(t, a, "orders"); n != tc.wantCalls {
				t.Errorf("Drain handled %d, want %d", n, tc.wantCalls)
			}
			wantAttempts := make([]int, tc.wantCalls)
			for i := range wantAttempts {
				wantAttempts[i] = i
			}
			if fmt.Sprint(calls) != fmt.Sprint(wantAttempts) {
				t.Errorf("handler saw attempts %v, want %v", calls, wantAttempts)
			}
			if mem.Len("orders") != 0 || mem.InFlight("orders") != 0 {
				t.Errorf("orders still holds %d (+%d in flight)", mem.Len("orders"), mem.InFlight("orders"))
			}
			dlq := mem.Messages("orders.dlq")
			if !tc.deadLetter {
				if len(dlq) != 0 {
					t.Fatalf("dead-lettering off but the DLQ holds %d", len(dlq))
				}
				var pe *payError
				if w := rec.warns(); len(w) != 1 || !errors.As(w[0], &pe) || pe.code != 51 {
					t.Errorf("warnings = %v, want one drop warning wrapping the handler's *payError", w)
				}
				return
			}
			if len(dlq) != 1 {
				t.Fatalf("DLQ holds %d messages, want 1", len(dlq))
			}
			got := mustDecode(t, dlq[0].Body)
			dl := dlqEntry(t, dlq[0].Body)
			if got.Attempts != tc.max || dl.Attempts != tc.max {
				t.Errorf("attempts body=%d dead_letter=%d, want %d", got.Attempts, dl.Attempts, tc.max)
			}
			if dl.Reason != wire.ReasonFailed || dl.OriginalQueue != "orders" || dl.Lang != "go" {
				t.Errorf("dead_letter = %+v", dl)
			}
			if dl.Error == nil || *dl.Error != "charging: payment declined 51" {
				t.Errorf("dead_letter.error = %v", dl.Error)
			}
			if dl.Exception == nil || *dl.Exception != "*babelqueue.payError" {
				t.Errorf("dead_letter.exception = %v", dl.Exception)
			}
			if dl.FailedAt != epoch.UnixMilli() {
				t.Errorf("failed_at = %d, want the clock's %d", dl.FailedAt, epoch.UnixMilli())
			}
			if string(dlq[0].Key) != "k-1" {
				t.Errorf("DLQ key = %q, want k-1", dlq[0].Key)
			}
			if dlq[0].Headers["traceparent"] != "tp-1" {
				t.Errorf("DLQ headers = %v, want traceparent kept", dlq[0].Headers)
			}
			orig := mustDecode(t, body)
			if got.Meta != orig.Meta || got.TraceID != orig.TraceID || string(got.Data()) != string(orig.Data()) {
				t.Errorf("dead letter changed the envelope: %s", dlq[0].Body)
			}
		})
	}
}

func TestGenericRetryRepublishesWithCountedAttemptsKeyAndHeaders(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithMaxAttempts(5))
	fail := true
	a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
		if fail {
			fail = false
			return errors.New("boom")
		}
		return nil
	})
	ctx := context.Background()
	body := envBody(t, "urn:x", 2)
	mem.PublishKeyed(ctx, "orders", []byte("key-7"), body, map[string]string{
		"traceparent": "tp", "tracestate": "ts", "x-tenant": "acme", wire.HeaderReplayBypass: "yes"})
	msg, _ := mem.Pop(ctx, "orders", 0)
	out := a.deliver(ctx, msg)
	if out.err != nil {
		t.Fatalf("deliver: %v", out.err)
	}
	if mem.Acked("orders") != 1 {
		t.Errorf("original not acknowledged after the retry write")
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 {
		t.Fatalf("orders holds %d, want the retry copy", len(msgs))
	}
	r := msgs[0]
	if env := mustDecode(t, r.Body); env.Attempts != 3 {
		t.Errorf("retry copy attempts = %d, want 3", env.Attempts)
	}
	if r.Headers[wire.HeaderAttempts] != "3" || r.Headers["traceparent"] != "tp" || r.Headers["tracestate"] != "ts" ||
		r.Headers["x-tenant"] != "acme" || r.Headers[wire.HeaderReplayBypass] != "yes" {
		t.Errorf("retry headers = %v", r.Headers)
	}
	if string(r.Key) != "key-7" {
		t.Errorf("retry key = %q", r.Key)
	}
	if strings.Replace(r.Body, `"attempts":3`, `"attempts":2`, 1) != body {
		t.Errorf("retry changed more than attempts:\n got %s\nfrom %s", r.Body, body)
	}
	if n := drain(t, a, "orders"); n != 1 || mem.Len("orders") != 0 {
		t.Errorf("second delivery: handled %d, left %d", n, mem.Len("orders"))
	}
}

func TestTieredRetryIsDelayedOnTheClock(t *testing.T) {
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock), bqtest.WithMemoryRetryTiers(30*time.Second, 5*time.Second))
	a := testApp(mem)
	var calls atomic.Int32
	a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
		calls.Add(1)
		return errors.New("later")
	})
	mem.Publish(context.Background(), "orders", envBody(t, "urn:x", 0))
	if n := drain(t, a, "orders"); n != 1 {
		t.Fatalf("first pass handled %d", n)
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 || !msgs[0].DeliverAt.Equal(epoch.Add(5*time.Second)) {
		t.Fatalf("retry copy = %+v, want one due at +5s (tier 1)", msgs)
	}
	if n := drain(t, a, "orders"); n != 0 {
		t.Fatalf("retry delivered before its tier elapsed")
	}
	clock.Advance(5 * time.Second)
	if n := drain(t, a, "orders"); n != 1 {
		t.Fatalf("retry not delivered once its tier elapsed")
	}
	msgs = mem.Messages("orders")
	if len(msgs) != 1 || !msgs[0].DeliverAt.Equal(epoch.Add(35*time.Second)) {
		t.Fatalf("second retry = %+v, want tier 2 (+30s)", msgs)
	}
	clock.Advance(30 * time.Second)
	drain(t, a, "orders")
	if calls.Load() != 3 || mem.Len("orders.dlq") != 1 {
		t.Errorf("calls=%d dlq=%d, want 3 and 1", calls.Load(), mem.Len("orders.dlq"))
	}
}

func TestVersionGate(t *testing.T) {
	for _, version := range []string{"2", "x", "01", " 1", "1 "} {
		t.Run(strconv.Quote(version), func(t *testing.T) {
			for _, strategy := range []UnknownURNStrategy{StrategyFail, StrategyRelease} {
				mem := bqtest.NewInMemoryTransport()
				var rec recorder
				var hookVersion, hookQueue string
				a := testApp(mem, append(rec.options(), WithMaxAttempts(5), WithUnknownURNStrategy(strategy),
					WithOnSchemaVersionRejected(func(v, q string) { hookVersion, hookQueue = v, q; panic("hook panics") }),
					WithOnRoutingMismatch(func(string, string, *Envelope) { t.Error("mismatch hook called") }),
				)...)
				a.Handle("urn:x", func(context.Context, *Envelope) error { t.Error("handler called"); return nil })
				body := envBody(t, "urn:x", 1)
				headers := map[string]string{wire.HeaderSchemaVersion: version, wire.HeaderJob: "urn:other", wire.HeaderAttempts: "1", "traceparent": "tp"}
				mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: body, From: nil, Headers: headers})
				mem.SetFault(nil)
				if n := drain(t, a, "orders"); n != 1 {
					t.Fatalf("handled %d", n)
				}
				dlq := mem.Messages("orders.dlq")
				if len(dlq) != 1 {
					t.Fatalf("DLQ holds %d, want 1 (never retried)", len(dlq))
				}
				if dlq[0].Body != body {
					t.Errorf("DLQ body changed:\n got %s\nwant %s", dlq[0].Body, body)
				}
				if fmt.Sprint(dlq[0].Headers) != fmt.Sprint(headers) {
					t.Errorf("DLQ headers = %v, want exactly %v", dlq[0].Headers, headers)
				}
				if mem.Acked("orders") != 1 || mem.Len("orders") != 0 {
					t.Errorf("original not acknowledged")
				}
				if hookVersion != version || hookQueue != "orders" {
					t.Errorf("hook got (%q, %q)", hookVersion, hookQueue)
				}
				if !anyIs(rec.errors(), ErrUnsupportedSchemaVersion) {
					t.Errorf("rejection not reported: %v", rec.errors())
				}
			}
		})
	}
}

func TestVersionGateDeadLetterOffAcksAndWarns(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var rec recorder
	a := testApp(mem, append(rec.options(), WithDeadLetter(false))...)
	a.Handle("urn:x", func(context.Context, *Envelope) error { t.Error("handler called"); return nil })
	publishH(mem, "orders", "not even json", map[string]string{wire.HeaderSchemaVersion: "3"})
	// The projection of a non-JSON body has no bq-schema-version, so ours stays.
	drain(t, a, "orders")
	if mem.Acked("orders") != 1 || len(mem.Queues()) != 1 {
		t.Errorf("acked=%d queues=%v", mem.Acked("orders"), mem.Queues())
	}
	if !anyIs(rec.warns(), ErrUnsupportedSchemaVersion) {
		t.Errorf("no warning: %v", rec.warns())
	}
}

func TestBodySchemaVersionIsGatedToo(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var got string
	a := testApp(mem, WithOnSchemaVersionRejected(func(v, q string) { got = v }))
	body := strings.Replace(envBody(t, "urn:x", 0), `"schema_version":1`, `"schema_version":2`, 1)
	mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: body, From: nil, Headers: nil})
	drain(t, a, "orders")
	if dlq := mem.Messages("orders.dlq"); len(dlq) != 1 || dlq[0].Body != body {
		t.Fatalf("DLQ = %+v, want the body unchanged", dlq)
	}
	if got != "2" {
		t.Errorf("hook version = %q, want 2", got)
	}
}

func TestVersionGateFailedWriteIsNotCounted(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var rec recorder
	a := testApp(mem, rec.options()...)
	mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: envBody(t, "urn:x", 0), From: nil, Headers: map[string]string{wire.HeaderSchemaVersion: "2"}})
	mem.SetFault(func(op, q string) error {
		if q == "orders.dlq" {
			return errors.New("broker down")
		}
		return nil
	})
	n, err := a.Drain(context.Background(), "orders")
	if !errors.Is(err, ErrSettle) || n != 1 {
		t.Fatalf("Drain = %d, %v; want 1 and ErrSettle", n, err)
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 || msgs[0].Redeliveries != 0 || mem.Acked("orders") != 0 {
		t.Fatalf("message not handed back unchanged: %+v acked=%d", msgs, mem.Acked("orders"))
	}
	if !anyIs(rec.errors(), ErrSettle) {
		t.Errorf("failed write not reported: %v", rec.errors())
	}
	mem.SetFault(nil)
	drain(t, a, "orders")
	if mem.Len("orders.dlq") != 1 || mem.Acked("orders") != 1 {
		t.Errorf("after the broker recovered: dlq=%d acked=%d", mem.Len("orders.dlq"), mem.Acked("orders"))
	}
}

func TestPoisonDeadLetteredAtOnce(t *testing.T) {
	cases := []struct {
		name, body string
		wrapped    bool
		base64     bool
	}{
		{name: "not json", body: "hello", wrapped: true},
		{name: "array", body: `[1,2]`, wrapped: true},
		{name: "invalid utf8", body: "\xff\xfe{", wrapped: true, base64: true},
		{name: "object without trace_id", body: `{"job":"urn:x","data":{},"meta":{"schema_version":1},"attempts":0}`},
		{name: "object with bad attempts", body: `{"job":"urn:x","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport()
			var rec recorder
			a := testApp(mem, append(rec.options(), WithMaxAttempts(3))...)
			a.Handle("urn:x", func(context.Context, *Envelope) error { t.Error("handler called"); return nil })
			mem.PublishKeyed(context.Background(), "orders", []byte("pk"), tc.body, map[string]string{wire.HeaderJob: "urn:x", "traceparent": "tp"})
			if n := drain(t, a, "orders"); n != 1 {
				t.Fatalf("handled %d, want 1 (no retry)", n)
			}
			dlq := mem.Messages("orders.dlq")
			if len(dlq) != 1 {
				t.Fatalf("DLQ holds %d", len(dlq))
			}
			d := dlq[0]
			if d.Headers[wire.HeaderJob] != "urn:x" || d.Headers["traceparent"] != "tp" || string(d.Key) != "pk" {
				t.Errorf("headers %v key %q: bq-job, traceparent and key must be kept", d.Headers, d.Key)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(d.Body), &obj); err != nil {
				t.Fatalf("DLQ body is not JSON: %s", d.Body)
			}
			dl := dlqEntry(t, d.Body)
			if dl.Reason != wire.ReasonPoison || dl.OriginalQueue != "orders" || dl.Attempts != 1 || dl.Error == nil {
				t.Errorf("dead_letter = %+v", dl)
			}
			_, hasRaw := obj["raw"]
			if hasRaw != tc.wrapped {
				t.Errorf("wrapped = %v, want %v: %s", hasRaw, tc.wrapped, d.Body)
			}
			_, hasEnc := obj["raw_encoding"]
			if hasEnc != tc.base64 {
				t.Errorf("raw_encoding present = %v, want %v", hasEnc, tc.base64)
			}
			if !tc.wrapped && !strings.HasPrefix(d.Body, strings.TrimSuffix(tc.body, "}")) {
				t.Errorf("an object poison body lost its bytes: %s", d.Body)
			}
			if !anyIs(rec.errors(), ErrPoison) {
				t.Errorf("poison not reported: %v", rec.errors())
			}
		})
	}
}

func TestPoisonWithoutDeadLetterIsRetriedThenDropped(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var rec recorder
	a := testApp(mem, append(rec.options(), WithDeadLetter(false), WithMaxAttempts(3))...)
	publishH(mem, "orders", "%%garbage", map[string]string{wire.HeaderJob: "urn:x", "traceparent": "tp"})
	var seen []string
	mem.SetFault(func(op, q string) error {
		if op == "retry" {
			seen = append(seen, op)
		}
		return nil
	})
	// Watch every delivery's bq-attempts header and body.
	for i := 0; i < 3; i++ {
		msg, _ := mem.Pop(context.Background(), "orders", 0)
		if msg == nil {
			t.Fatalf("delivery %d missing", i+1)
		}
		if msg.Body != "%%garbage" {
			t.Errorf("delivery %d body = %q, want byte for byte", i+1, msg.Body)
		}
		want := ""
		if i > 0 {
			want = strconv.Itoa(i)
		}
		if msg.Headers[wire.HeaderAttempts] != want || msg.Headers[wire.HeaderJob] != "urn:x" || msg.Headers["traceparent"] != "tp" {
			t.Errorf("delivery %d headers = %v", i+1, msg.Headers)
		}
		a.deliver(context.Background(), msg)
	}
	if mem.Len("orders") != 0 || mem.Len("orders.dlq") != 0 || len(seen) != 2 {
		t.Errorf("left=%d dlq=%d republishes=%d, want 0, 0, 2", mem.Len("orders"), mem.Len("orders.dlq"), len(seen))
	}
	if len(rec.warns()) != 1 {
		t.Errorf("warnings = %v, want one drop", rec.warns())
	}
}

func TestRoutingFollowsTheHeader(t *testing.T) {
	cases := []struct {
		name, header string
		wantRoute    string
		wantHook     bool
	}{
		{name: "header differs", header: "urn:b", wantRoute: "urn:b", wantHook: true},
		{name: "header equal", header: "urn:a", wantRoute: "urn:a"},
		{name: "header blank", header: " \t", wantRoute: "urn:a"},
		{name: "header absent", wantRoute: "urn:a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport()
			var hook []string
			a := testApp(mem, WithOnRoutingMismatch(func(h, b string, env *Envelope) {
				hook = []string{h, b, env.URN()}
				panic("a panicking hook changes nothing")
			}))
			var routed, bodyURN string
			for _, urn := range []string{"urn:a", "urn:b"} {
				a.Handle(urn, func(ctx context.Context, env *Envelope) error {
					routed, bodyURN = urn, env.URN()
					return nil
				})
			}
			headers := map[string]string{}
			if tc.header != "" {
				headers[wire.HeaderJob] = tc.header
			}
			mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: envBody(t, "urn:a", 0), From: nil, Headers: headers})
			drain(t, a, "orders")
			if routed != tc.wantRoute || bodyURN != "urn:a" {
				t.Errorf("routed to %q with body URN %q, want %q and urn:a", routed, bodyURN, tc.wantRoute)
			}
			if (hook != nil) != tc.wantHook || (tc.wantHook && fmt.Sprint(hook) != "[urn:b urn:a urn:a]") {
				t.Errorf("mismatch hook = %v, want called: %v", hook, tc.wantHook)
			}
			if mem.Acked("orders") != 1 {
				t.Error("message not acknowledged")
			}
		})
	}
}

func TestUnknownURNStrategies(t *testing.T) {
	t.Run("fail", func(t *testing.T) {
		mem := bqtest.NewInMemoryTransport()
		a := testApp(mem, WithMaxAttempts(3))
		mem.Publish(context.Background(), "orders", envBody(t, "urn:nobody", 0))
		if n := drain(t, a, "orders"); n != 3 {
			t.Errorf("handled %d, want 3 deliveries", n)
		}
		dlq := mem.Messages("orders.dlq")
		if len(dlq) != 1 {
			t.Fatalf("DLQ holds %d", len(dlq))
		}
		dl := dlqEntry(t, dlq[0].Body)
		if dl.Reason != wire.ReasonUnknownURN || dl.Attempts != 3 || *dl.Exception != "*babelqueue.UnknownURNError" {
			t.Errorf("dead_letter = %+v exception %s", dl, *dl.Exception)
		}
	})
	t.Run("delete", func(t *testing.T) {
		mem := bqtest.NewInMemoryTransport()
		var rec recorder
		a := testApp(mem, append(rec.options(), WithUnknownURNStrategy(StrategyDelete))...)
		mem.Publish(context.Background(), "orders", envBody(t, "urn:nobody", 0))
		drain(t, a, "orders")
		if mem.Acked("orders") != 1 || mem.Len("orders") != 0 || mem.Len("orders.dlq") != 0 {
			t.Error("not deleted")
		}
		if !anyIs(rec.warns(), ErrNoHandler) {
			t.Errorf("warnings = %v", rec.warns())
		}
	})
	t.Run("release", func(t *testing.T) {
		mem := bqtest.NewInMemoryTransport()
		var rec recorder
		a := testApp(mem, append(rec.options(), WithUnknownURNStrategy(StrategyRelease), WithMaxAttempts(1))...)
		body := envBody(t, "urn:nobody", 1)
		mem.PublishKeyed(context.Background(), "orders", []byte("k"), body, map[string]string{"traceparent": "tp"})
		n := drain(t, a, "orders")
		if n != 0 {
			t.Errorf("Drain counted %d released messages, want 0", n)
		}
		msgs := mem.Messages("orders")
		if len(msgs) != 1 || msgs[0].Body != body || string(msgs[0].Key) != "k" || msgs[0].Headers["traceparent"] != "tp" {
			t.Fatalf("released copy = %+v, want the message unchanged (attempts not counted)", msgs)
		}
		if mem.Len("orders.dlq") != 0 || !anyIs(rec.warns(), ErrNoHandler) {
			t.Errorf("dlq=%d warnings=%v", mem.Len("orders.dlq"), rec.warns())
		}
		// A consumer that owns the URN takes it.
		b := testApp(mem)
		got := 0
		b.Handle("urn:nobody", func(context.Context, *Envelope) error { got++; return nil })
		drain(t, b, "orders")
		if got != 1 || mem.Len("orders") != 0 {
			t.Errorf("owner handled %d, left %d", got, mem.Len("orders"))
		}
	})
	t.Run("dead_letter", func(t *testing.T) {
		mem := bqtest.NewInMemoryTransport()
		a := testApp(mem, WithUnknownURNStrategy(StrategyDeadLetter), WithMaxAttempts(5))
		mem.Publish(context.Background(), "orders", envBody(t, "urn:nobody", 0))
		if n := drain(t, a, "orders"); n != 1 {
			t.Errorf("handled %d, want 1 (at once)", n)
		}
		dlq := mem.Messages("orders.dlq")
		if len(dlq) != 1 {
			t.Fatalf("DLQ holds %d", len(dlq))
		}
		if dl := dlqEntry(t, dlq[0].Body); dl.Reason != wire.ReasonUnknownURN || dl.Attempts != 1 {
			t.Errorf("dead_letter = %+v", dl)
		}
	})
	t.Run("dead_letter with dead-lettering off", func(t *testing.T) {
		mem := bqtest.NewInMemoryTransport()
		var rec recorder
		a := testApp(mem, append(rec.options(), WithUnknownURNStrategy(StrategyDeadLetter), WithDeadLetter(false))...)
		mem.Publish(context.Background(), "orders", envBody(t, "urn:nobody", 0))
		drain(t, a, "orders")
		if mem.Acked("orders") != 1 || mem.Len("orders.dlq") != 0 || len(rec.warns()) != 1 {
			t.Errorf("acked=%d dlq=%d warnings=%v", mem.Acked("orders"), mem.Len("orders.dlq"), rec.warns())
		}
	})
}

func TestFailedWritesNeverLoseTheMessage(t *testing.T) {
	failOn := func(queue string) func(op, q string) error {
		return func(op, q string) error {
			if q == queue && op != "Receive" && op != "Ack" && op != "HandBack" {
				return errors.New("write refused")
			}
			return nil
		}
	}
	cases := []struct {
		name       string
		wrap       func(*bqtest.InMemoryTransport) Transport
		attempts   int // body attempts: 2 with max 3 dead-letters, 0 retries
		failQueue  string
		wantLen    int // messages visible again in orders
		wantFlight int
		wantRedel  int
	}{
		{name: "dlq write, rewind", wrap: func(m *bqtest.InMemoryTransport) Transport { return m }, attempts: 2, failQueue: "orders.dlq", wantLen: 1},
		{name: "dlq write, nack", wrap: func(m *bqtest.InMemoryTransport) Transport {
			return with(m, func(f *driver.Features) { f.HandBack = driver.HandBackNack })
		}, attempts: 2, failQueue: "orders.dlq", wantLen: 1, wantRedel: 1},
		{name: "dlq write, neither", wrap: func(m *bqtest.InMemoryTransport) Transport {
			return with(m, func(f *driver.Features) { f.HandBack = driver.HandBackNone })
		}, attempts: 2, failQueue: "orders.dlq", wantFlight: 1},
		{name: "retry write, rewind", wrap: func(m *bqtest.InMemoryTransport) Transport { return m }, attempts: 0, failQueue: "orders", wantLen: 1},
		{name: "retrier fails, rewind", wrap: func(m *bqtest.InMemoryTransport) Transport { return m }, attempts: 0, failQueue: "orders", wantLen: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport()
			var rec recorder
			a := testApp(tc.wrap(mem), append(rec.options(), WithMaxAttempts(3))...)
			a.Handle("urn:x", func(context.Context, *Envelope) error { return errors.New("boom") })
			body := envBody(t, "urn:x", tc.attempts)
			mem.Publish(context.Background(), "orders", body)
			mem.SetFault(failOn(tc.failQueue))
			n, err := a.Drain(context.Background(), "orders")
			if n != 1 || !errors.Is(err, ErrSettle) {
				t.Fatalf("Drain = %d, %v; want 1, ErrSettle", n, err)
			}
			var derr *DeliveryError
			if !errors.As(err, &derr) || derr.Queue != "orders" || derr.MessageID == "" {
				t.Errorf("error %v is not a DeliveryError naming the message", err)
			}
			if mem.Acked("orders") != 0 {
				t.Fatal("the original was acknowledged although its write failed")
			}
			msgs := mem.Messages("orders")
			if len(msgs) != tc.wantLen || mem.InFlight("orders") != tc.wantFlight {
				t.Fatalf("visible=%d in flight=%d, want %d and %d", len(msgs), mem.InFlight("orders"), tc.wantLen, tc.wantFlight)
			}
			if tc.wantLen == 1 {
				if msgs[0].Body != body || msgs[0].Redeliveries != tc.wantRedel {
					t.Errorf("handed back %+v, want body unchanged and %d redeliveries", msgs[0], tc.wantRedel)
				}
			}
			if !anyIs(rec.errors(), ErrSettle) {
				t.Errorf("failure not reported to OnError: %v", rec.errors())
			}
			if mem.Len("orders.dlq") != 0 {
				t.Error("something reached the DLQ")
			}
		})
	}
}

func TestFailedWriteIsRetriedOnRedeliveryWithSameCount(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithMaxAttempts(2))
	var seen []int
	a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
		seen = append(seen, env.Attempts)
		return errors.New("boom")
	})
	mem.Publish(context.Background(), "orders", envBody(t, "urn:x", 1))
	failures := 2
	mem.SetFault(func(op, q string) error {
		if q == "orders.dlq" && failures > 0 {
			failures--
			return errors.New("refused")
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		a.Drain(context.Background(), "orders")
	}
	if fmt.Sprint(seen) != "[1 1 1]" {
		t.Errorf("attempts seen = %v, want [1 1 1]: a failed write is not counted", seen)
	}
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 || dlqEntry(t, dlq[0].Body).Attempts != 2 {
		t.Errorf("dlq = %+v", dlq)
	}
}

func TestAckFailureIsReported(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var rec recorder
	a := testApp(mem, rec.options()...)
	a.Handle("urn:x", func(context.Context, *Envelope) error { return nil })
	mem.Publish(context.Background(), "orders", envBody(t, "urn:x", 0))
	mem.SetFault(func(op, q string) error {
		if op == "Ack" {
			return errors.New("commit failed")
		}
		return nil
	})
	_, err := a.Drain(context.Background(), "orders")
	if !errors.Is(err, ErrSettle) || !anyIs(rec.errors(), ErrSettle) {
		t.Fatalf("err = %v, reported %v", err, rec.errors())
	}
	if mem.Len("orders") != 1 {
		t.Error("an unacknowledged message was not handed back for redelivery")
	}
}

func TestDeadLetterQueueNaming(t *testing.T) {
	cases := []struct {
		opt  Option
		want string
	}{
		{nil, "orders.dlq"},
		{WithDeadLetterSuffix("-dead"), "orders-dead"},
		{WithDeadLetterQueue("graveyard"), "graveyard"},
	}
	for _, tc := range cases {
		mem := bqtest.NewInMemoryTransport()
		a := testApp(mem, tc.opt, WithMaxAttempts(1))
		mem.Publish(context.Background(), "orders", envBody(t, "urn:nobody", 0))
		drain(t, a, "orders")
		if mem.Len(tc.want) != 1 {
			t.Errorf("want the dead letter in %s; queues %v", tc.want, mem.Queues())
		}
	}
}

func TestHandlerPanicIsAFailure(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	var rec recorder
	a := testApp(mem, append(rec.options(), WithMaxAttempts(1))...)
	sentinel := errors.New("inner")
	a.Handle("urn:x", func(context.Context, *Envelope) error { panic(sentinel) })
	mem.Publish(context.Background(), "orders", envBody(t, "urn:x", 0))
	drain(t, a, "orders")
	var pe *PanicError
	if errs := rec.errors(); len(errs) == 0 || !errors.As(errs[0], &pe) || !errors.Is(errs[0], sentinel) || len(pe.Stack) == 0 {
		t.Fatalf("errors = %v, want a PanicError wrapping the value", errs)
	}
	if dl := dlqEntry(t, mem.Messages("orders.dlq")[0].Body); *dl.Exception != "*babelqueue.PanicError" {
		t.Errorf("exception = %s", *dl.Exception)
	}
}

type valueErr struct{}

func (valueErr) Error() string { return "value" }

func TestExceptionName(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("x"), "*errors.errorString"},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", &payError{})), "*babelqueue.payError"},
		{fmt.Errorf("plain %v", "x"), "*errors.errorString"},
		{valueErr{}, "babelqueue.valueErr"},
		{&DeliveryError{Queue: "q", Err: valueErr{}}, "babelqueue.valueErr"},
		{errors.Join(errors.New("a"), errors.New("b")), "*errors.joinError"},
		{context.DeadlineExceeded, "context.deadlineExceededError"},
		{fmt.Errorf("a: %w", &UnknownURNError{URN: "u"}), "*babelqueue.UnknownURNError"},
	}
	for _, tc := range cases {
		if got := exceptionName(tc.err); got != tc.want {
			t.Errorf("exceptionName(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// opLog records the operations a bqtest.InMemoryTransport sees, in order.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) install(mem *bqtest.InMemoryTransport) {
	mem.SetFault(func(op, q string) error {
		if op != "Receive" {
			l.mu.Lock()
			l.ops = append(l.ops, op+" "+q)
			l.mu.Unlock()
		}
		return nil
	})
}

func (l *opLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.ops, ", ")
}

func TestDeadLetterWriteKeepsRouteKeyAndHeadersThenAcks(t *testing.T) {
	cases := []struct {
		name      string
		f         func(*driver.Features)
		wantKey   string
		wantTrace string
	}{
		{"every feature", func(*driver.Features) {}, "k", "tp"},
		{"no keys", func(f *driver.Features) { f.Keys = false }, "", "tp"},
		{"no headers", func(f *driver.Features) { f.Headers = false }, "k", ""},
		{"nothing", func(f *driver.Features) { *f = driver.Features{} }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := bqtest.NewInMemoryTransport()
			// A keyed message whose bq-job header routes it to another URN
			// than its body's.
			mem.PublishKeyed(ctx, "setup", []byte("k"), envBody(t, "urn:x", 0), nil)
			seed, _ := mem.Pop(ctx, "setup", 0)
			h := maps.Clone(seed.Headers)
			h[wire.HeaderJob], h["traceparent"] = "urn:routed", "tp"
			mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: seed.Body, From: seed, Headers: h})

			a := testApp(with(mem, tc.f), WithMaxAttempts(1))
			a.Handle("urn:routed", func(context.Context, *Envelope) error { return errors.New("boom") })
			msg, _ := mem.Pop(ctx, "orders", 0)
			var log opLog
			log.install(mem)
			if out := a.deliver(ctx, msg); out.err != nil {
				t.Fatal(out.err)
			}
			if want := "dead_letter orders.dlq, Ack orders"; log.String() != want {
				t.Errorf("operations = %q, want %q", log.String(), want)
			}
			d := mem.Messages("orders.dlq")[0]
			wantJob := "urn:routed" // the route the original was delivered on
			if tc.wantTrace == "" {
				wantJob = "urn:x" // without headers only the projection is written
			}
			if string(d.Key) != tc.wantKey || d.Headers["traceparent"] != tc.wantTrace || d.Headers[wire.HeaderJob] != wantJob {
				t.Errorf("dead letter key %q headers %v", d.Key, d.Headers)
			}
			if d.Headers[wire.HeaderAttempts] != "1" {
				t.Errorf("dead letter bq-attempts = %q, want the counted 1", d.Headers[wire.HeaderAttempts])
			}
		})
	}
}

func TestDeliveryErrorText(t *testing.T) {
	inner := errors.New("boom")
	cases := []struct {
		err  *DeliveryError
		want string
	}{
		{&DeliveryError{Queue: "q", Err: inner}, "babelqueue: queue q: boom"},
		{&DeliveryError{Queue: "q", URN: "urn:x", MessageID: "id-1", Err: inner}, "babelqueue: queue q, message id-1 (urn:x): boom"},
	}
	for _, tc := range cases {
		if tc.err.Error() != tc.want || !errors.Is(tc.err, inner) {
			t.Errorf("%q, want %q", tc.err.Error(), tc.want)
		}
	}
}

func TestHandleReplacesAndRemoves(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithUnknownURNStrategy(StrategyDelete))
	got := ""
	a.Handle("urn:x", func(context.Context, *Envelope) error { got = "first"; return nil })
	a.Handle("urn:x", func(context.Context, *Envelope) error { got = "second"; return nil })
	mem.Publish(context.Background(), "q", envBody(t, "urn:x", 0))
	drain(t, a, "q")
	if got != "second" {
		t.Errorf("handler = %q, want the replacement", got)
	}
	a.Handle("urn:x", nil)
	got = ""
	mem.Publish(context.Background(), "q", envBody(t, "urn:x", 0))
	drain(t, a, "q")
	if got != "" || mem.Acked("q") != 2 {
		t.Errorf("a removed handler ran (%q) or the message was not deleted", got)
	}
	if a.Transport() != mem {
		t.Error("Transport() is not the transport given")
	}
}

// blockingAck is a transport whose Ack waits for its context to end.
type blockingAck struct {
	*bqtest.InMemoryTransport
	seen chan any
}

func (b blockingAck) Ack(ctx context.Context, _ *ReceivedMessage) error {
	b.seen <- ctx.Value(ctxKey{})
	<-ctx.Done()
	return ctx.Err()
}

func TestAckIsBoundedBySettleTimeoutEveryTime(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	tr := blockingAck{mem, make(chan any, 3)}
	a, err := NewApp(tr, WithDefaultQueue("orders"), WithSettleTimeout(20*time.Millisecond), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	a.Handle("urn:x", func(context.Context, *Envelope) error { return nil })
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	for i := 0; i < 3; i++ {
		mem.Publish(ctx, "orders", envBody(t, "urn:x", 0))
		m, _ := mem.Pop(ctx, "orders", 0)
		out := a.deliver(ctx, m)
		if !errors.Is(out.err, ErrSettle) || !errors.Is(out.err, context.DeadlineExceeded) {
			t.Fatalf("delivery %d: err = %v, want the Ack's deadline as a settle failure", i, out.err)
		}
		if v := <-tr.seen; v != "v" {
			t.Errorf("delivery %d: Ack context value = %v, want the consume context's", i, v)
		}
	}
}

// A retried poison body that is a JSON object is republished as it was
// delivered, byte for byte; only bq-attempts carries the count (CONTRACT.md 5),
// and it wins over the body's own attempts, so the count advances to the
// drop.
func TestPoisonObjectRetryKeepsTheBodyOnTheWire(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithDeadLetter(false), WithMaxAttempts(3))
	const poison = `{"x":1,"attempts":0}` // no job: poison
	publishH(mem, "orders", poison, map[string]string{"traceparent": "tp"})
	for i := 1; i <= 2; i++ {
		msg, _ := mem.Pop(context.Background(), "orders", 0)
		a.deliver(context.Background(), msg)
		stored := mem.Messages("orders")
		if len(stored) != 1 {
			t.Fatalf("after delivery %d the queue holds %d, want the retry copy", i, len(stored))
		}
		if stored[0].Body != msg.Body || stored[0].Headers[wire.HeaderAttempts] != strconv.Itoa(i) {
			t.Errorf("retry copy %d: body %s bq-attempts %q; want the delivered bytes %s and %d", i, stored[0].Body, stored[0].Headers[wire.HeaderAttempts], msg.Body, i)
		}
	}
	msg, _ := mem.Pop(context.Background(), "orders", 0)
	a.deliver(context.Background(), msg)
	if mem.Len("orders") != 0 || mem.Acked("orders") != 3 {
		t.Errorf("the third delivery was not dropped: left %d acked %d", mem.Len("orders"), mem.Acked("orders"))
	}
}
