package babelqueue

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// settlements records what the App reports to a SettleHook.
type settlements struct {
	mu  sync.Mutex
	all []Settlement
}

func (s *settlements) OnSettle(_ context.Context, _ *Delivery, st *Settlement) {
	s.mu.Lock()
	s.all = append(s.all, *st)
	s.mu.Unlock()
}

func (s *settlements) list() []Settlement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Settlement(nil), s.all...)
}

func decodeBounded(t *testing.T, body string) bqtest.BoundedLetter {
	t.Helper()
	return bqtest.DecodeBoundedLetter(t, []byte(body))
}

// TestOversizePoisonIsDeadLetteredBounded: a poison body whose wrapped dead
// letter is above the broker's limit no longer blocks its queue: a bounded
// dead letter is written, the original acknowledged, the message behind it
// handled, and the refusal reported (OnError, Settlement.Reason).
func TestOversizePoisonIsDeadLetteredBounded(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryMaxMessageBytes(1000))
	var rec recorder
	var st settlements
	a := testApp(mem, append(rec.options(), WithHooks(&st))...)
	handled := 0
	a.Handle("urn:x", func(context.Context, *Envelope) error { handled++; return nil })
	ctx := context.Background()
	poison := strings.Repeat("\xff", 900) // base64 of it is 1200 bytes
	if err := mem.PublishKeyed(ctx, "orders", []byte("pk"), poison, map[string]string{wire.HeaderJob: "urn:x", wire.HeaderMessageID: "id-1"}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Publish(ctx, "orders", envBody(t, "urn:x", 0)); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, a, "orders"); n != 2 {
		t.Fatalf("drained %d, want 2", n)
	}
	if handled != 1 || mem.Acked("orders") != 2 || mem.Len("orders") != 0 {
		t.Fatalf("handled=%d acked=%d left=%d: the message behind the oversize one must be handled", handled, mem.Acked("orders"), mem.Len("orders"))
	}
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 {
		t.Fatalf("DLQ holds %d, want 1 bounded dead letter", len(dlq))
	}
	if string(dlq[0].Key) != "pk" || dlq[0].Headers[wire.HeaderJob] != "urn:x" {
		t.Errorf("key %q headers %v: the key and the bq-job route must be kept", dlq[0].Key, dlq[0].Headers)
	}
	b := decodeBounded(t, dlq[0].Body)
	if b.Job != "urn:x" || b.Meta.ID != "id-1" || b.Data != nil {
		t.Errorf("job %q id %q data %s", b.Job, b.Meta.ID, b.Data)
	}
	o := b.Oversize
	if o.Reason != wire.ReasonPoison || o.Size != 900 || o.RefusedSize <= 1200 || o.Topic != "orders" ||
		o.Partition == nil || *o.Partition != 0 || o.Offset == nil || !strings.Contains(o.WriteError, "limit is 1000") {
		t.Errorf("oversize = %+v", o)
	}
	dl := b.DeadLetter
	if dl.Reason != wire.ReasonOversize || dl.Error == nil || !strings.Contains(*dl.Error, "poison") || dl.OriginalQueue != "orders" || dl.Attempts != 1 || dl.Lang != "go" {
		t.Errorf("dead_letter = %+v", dl)
	}
	if !anyIs(rec.errors(), ErrTooLarge) {
		t.Errorf("the oversize message was not reported through OnError: %v", rec.errors())
	}
	var found bool
	for _, s := range st.list() {
		if s.Reason == wire.ReasonOversize {
			found = true
			if s.Outcome != OutcomeDeadLettered || s.Target != "orders.dlq" || !errors.Is(s.Err, ErrTooLarge) || !errors.Is(s.Err, ErrPoison) {
				t.Errorf("settlement %+v", s)
			}
		}
	}
	if !found {
		t.Errorf("no settlement with reason oversize: %+v", st.list())
	}
}

// TestOversizeFailedDeadLetterKeepsIdentity: an envelope whose annotated
// dead letter is too large keeps its URN, ids, both errors and attempts.
func TestOversizeFailedDeadLetterKeepsIdentity(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryMaxMessageBytes(1500))
	var rec recorder
	a := testApp(mem, append(rec.options(), WithMaxAttempts(1))...)
	a.Handle("urn:x", func(context.Context, *Envelope) error { return errors.New("charge declined") })
	env, err := Make("urn:x", map[string]any{"pad": strings.Repeat("p", 1200)}, WithQueue("orders"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := env.Encode()
	if err := mem.Publish(context.Background(), "orders", string(body)); err != nil {
		t.Fatal(err)
	}
	drain(t, a, "orders")
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 || mem.Acked("orders") != 1 {
		t.Fatalf("dlq=%d acked=%d", len(dlq), mem.Acked("orders"))
	}
	b := decodeBounded(t, dlq[0].Body)
	if b.Job != "urn:x" || b.Meta.ID != env.Meta.ID || b.TraceID != env.TraceID {
		t.Errorf("identity lost: %s", dlq[0].Body)
	}
	if b.Oversize.Reason != wire.ReasonFailed || b.Oversize.Size != len(body) || !strings.Contains(b.Oversize.WriteError, "larger than the broker accepts") {
		t.Errorf("oversize = %+v", b.Oversize)
	}
	if b.DeadLetter.Error == nil || *b.DeadLetter.Error != "charge declined" || b.DeadLetter.Attempts != 1 {
		t.Errorf("dead_letter = %+v", b.DeadLetter)
	}
	if dlq[0].Headers[wire.HeaderMessageID] != env.Meta.ID || dlq[0].Headers[wire.HeaderJob] != "urn:x" {
		t.Errorf("headers %v", dlq[0].Headers)
	}
}

// TestOversizeRetryCopy: a retry copy refused as too large is replaced by a
// bounded dead letter, also when the binding settles retries itself (it
// leaves the original reserved on such a refusal); with dead-lettering off
// the original is dropped with an error.
func TestOversizeRetryCopy(t *testing.T) {
	for _, tc := range []struct {
		name         string
		settlesRetry bool
		deadLetter   bool
	}{
		{"app settles", false, true},
		{"binding settles", true, true},
		{"dead-lettering off", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryFeatures(driver.Features{Keys: true, Headers: true, SettlesRetry: tc.settlesRetry, HandBack: driver.HandBackRewind}))
			mem.SetFault(func(op, q string) error {
				if op == driver.IntentRetry.String() {
					return driver.ErrTooLarge
				}
				return nil
			})
			var rec recorder
			var st settlements
			a := testApp(mem, append(rec.options(), WithHooks(&st), WithMaxAttempts(3), WithDeadLetter(tc.deadLetter))...)
			a.Handle("urn:x", func(context.Context, *Envelope) error { return errors.New("boom") })
			if err := mem.Publish(context.Background(), "orders", envBody(t, "urn:x", 0)); err != nil {
				t.Fatal(err)
			}
			drain(t, a, "orders")
			if mem.Acked("orders") != 1 || mem.Len("orders") != 0 {
				t.Fatalf("acked=%d left=%d", mem.Acked("orders"), mem.Len("orders"))
			}
			wantDLQ, wantOutcome := 1, OutcomeDeadLettered
			if !tc.deadLetter {
				wantDLQ, wantOutcome = 0, OutcomeDropped
			}
			if n := mem.Len("orders.dlq"); n != wantDLQ {
				t.Fatalf("dlq=%d, want %d", n, wantDLQ)
			}
			if wantDLQ == 1 {
				b := decodeBounded(t, mem.Messages("orders.dlq")[0].Body)
				if b.Oversize.Reason != wire.ReasonFailed || b.DeadLetter.Attempts != 1 || b.DeadLetter.Reason != wire.ReasonOversize {
					t.Errorf("bounded dead letter %+v", b)
				}
			}
			s := st.list()
			if len(s) != 1 || s[0].Outcome != wantOutcome || s[0].Reason != wire.ReasonOversize {
				t.Errorf("settlements %+v", s)
			}
			if !anyIs(rec.errors(), ErrTooLarge) {
				t.Errorf("not reported: %v", rec.errors())
			}
		})
	}
}

// TestTransientDeadLetterFailureIsNotOversize: a refusal that is not about
// size hands the original back (it is retried), however large it is.
func TestTransientDeadLetterFailureIsNotOversize(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryMaxMessageBytes(1 << 20))
	broken := true
	mem.SetFault(func(op, q string) error {
		if q == "orders.dlq" && broken {
			return errors.New("leader not available")
		}
		return nil
	})
	var rec recorder
	a := testApp(mem, rec.options()...)
	poison := strings.Repeat("\xff", 900)
	mem.Publish(context.Background(), "orders", poison)
	n, err := a.Drain(context.Background(), "orders")
	if !errors.Is(err, ErrSettle) || n != 1 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if mem.Len("orders.dlq") != 0 || mem.Acked("orders") != 0 || mem.Len("orders") != 1 || anyIs(rec.errors(), ErrTooLarge) {
		t.Fatalf("a transient refusal was taken for oversize: dlq=%d acked=%d", mem.Len("orders.dlq"), mem.Acked("orders"))
	}
	broken = false
	drain(t, a, "orders")
	dlq := mem.Messages("orders.dlq")
	if len(dlq) != 1 || mem.Acked("orders") != 1 {
		t.Fatalf("after recovery: dlq=%d acked=%d", len(dlq), mem.Acked("orders"))
	}
	if !strings.Contains(dlq[0].Body, base64.StdEncoding.EncodeToString([]byte(poison))) {
		t.Errorf("the full poison dead letter was expected once the broker recovered")
	}
}

// TestBoundedDeadLetterRefusedIsHandedBack: when even the bounded dead
// letter is refused, nothing is acknowledged: the original is handed back.
func TestBoundedDeadLetterRefusedIsHandedBack(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryMaxMessageBytes(100))
	var rec recorder
	a := testApp(mem, rec.options()...)
	mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: strings.Repeat("\xff", 60)})
	n, err := a.Drain(context.Background(), "orders")
	if !errors.Is(err, ErrSettle) || n != 1 {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	if mem.Acked("orders") != 0 || mem.Len("orders") != 1 || mem.Len("orders.dlq") != 0 {
		t.Fatalf("acked=%d left=%d dlq=%d", mem.Acked("orders"), mem.Len("orders"), mem.Len("orders.dlq"))
	}
}

// TestOversizeVersionGated: a version-gated forward that is too large is
// bounded too.
func TestOversizeVersionGated(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: "orders", Body: envBody(t, "urn:x", 0), Headers: map[string]string{wire.HeaderSchemaVersion: "2"}})
	mem.SetFault(func(op, q string) error {
		if op == driver.IntentForward.String() {
			return driver.ErrTooLarge
		}
		return nil
	})
	var st settlements
	a := testApp(mem, WithHooks(&st))
	drain(t, a, "orders")
	if mem.Len("orders.dlq") != 1 || mem.Acked("orders") != 1 {
		t.Fatalf("dlq=%d acked=%d", mem.Len("orders.dlq"), mem.Acked("orders"))
	}
	b := decodeBounded(t, mem.Messages("orders.dlq")[0].Body)
	if b.Oversize.Reason != wire.ReasonVersionGated || b.DeadLetter.Reason != wire.ReasonOversize || b.Job != "" {
		t.Errorf("bounded dead letter %+v", b)
	}
	if s := st.list(); len(s) != 1 || s[0].Reason != wire.ReasonOversize || s[0].Outcome != OutcomeDeadLettered {
		t.Errorf("settlements %+v", s)
	}
}
