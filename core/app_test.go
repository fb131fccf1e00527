package babelqueue

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/internal/testmsg"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// ---- helpers shared by the runtime tests ----

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testApp returns an App tuned for fast tests: short poll timeout, no
// failure backoff, silent logger. opts come last and win.
func testApp(t Transport, opts ...Option) *App {
	// The tests' short URNs ("urn:x") predate the URN rule.
	base := []Option{WithPollTimeout(5 * time.Millisecond), WithFailureBackoff(0), WithLogger(quietLogger()), WithLegacyURNs()}
	a, err := NewApp(t, append(base, opts...)...)
	if err != nil {
		panic(err) // a test's own options are valid
	}
	return a
}

// envBody returns the encoded envelope of urn with the given attempts
// (testmsg.Body).
func envBody(t *testing.T, urn string, attempts int, opts ...MakeOption) string {
	t.Helper()
	return testmsg.Body(t, urn, attempts, opts...)
}

// mustDecode decodes body or fails the test (testmsg.Decode).
func mustDecode(t *testing.T, body string) *Envelope {
	t.Helper()
	return testmsg.Decode(t, body)
}

func drain(t *testing.T, a *App, queues ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := a.Drain(ctx, queues...)
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return n
}

// recorder collects what the hooks report.
type recorder struct {
	mu       sync.Mutex
	errs     []error
	warnings []error
}

func (r *recorder) options() []Option {
	return []Option{
		WithOnError(func(err error) { r.mu.Lock(); r.errs = append(r.errs, err); r.mu.Unlock() }),
		WithOnWarning(func(err error) { r.mu.Lock(); r.warnings = append(r.warnings, err); r.mu.Unlock() }),
	}
}

func (r *recorder) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

func (r *recorder) warns() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.warnings...)
}

func anyIs(errs []error, target error) bool {
	for _, e := range errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

// ---- App.Publish ----

func TestPublishReturnsMetaIDAndWritesToDefaultQueue(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithDefaultQueue("orders"))
	id, err := a.Publish(context.Background(), "urn:babel:orders:created", map[string]any{"order_id": 1042})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	msgs := mem.Messages("orders")
	if len(msgs) != 1 {
		t.Fatalf("orders holds %d messages, want 1", len(msgs))
	}
	env := mustDecode(t, msgs[0].Body)
	if env.Meta.ID != id || id == "" {
		t.Errorf("Publish returned %q, meta.id is %q", id, env.Meta.ID)
	}
	if env.Meta.Queue != "orders" || env.URN() != "urn:babel:orders:created" || env.Attempts != 0 {
		t.Errorf("envelope = queue %q urn %q attempts %d", env.Meta.Queue, env.URN(), env.Attempts)
	}
	if got := msgs[0].Headers[wire.HeaderJob]; got != "urn:babel:orders:created" {
		t.Errorf("bq-job header = %q", got)
	}
}

func TestPublishToQueueAndEnvelopeOptions(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	id, err := a.Publish(context.Background(), "urn:t:x", nil, ToQueue("billing"),
		WithEnvelopeOptions(WithTraceID("trace-1"), WithQueue("ignored")))
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if mem.Len(DefaultQueue) != 0 || mem.Len("billing") != 1 {
		t.Fatalf("default=%d billing=%d, want 0 and 1", mem.Len(DefaultQueue), mem.Len("billing"))
	}
	env := mustDecode(t, mem.Messages("billing")[0].Body)
	if env.TraceID != "trace-1" || env.Meta.Queue != "billing" || env.Meta.ID != id {
		t.Errorf("trace %q queue %q id %q", env.TraceID, env.Meta.Queue, env.Meta.ID)
	}
}

func TestPublishWithHeaders(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem)
	_, err := a.PublishWithHeaders(context.Background(), "urn:t:x", nil,
		map[string]string{"traceparent": "00-abc-def-01", wire.HeaderJob: "urn:t:spoof", "blank": " "})
	if err != nil {
		t.Fatalf("PublishWithHeaders: %v", err)
	}
	h := mem.Messages(DefaultQueue)[0].Headers
	if h["traceparent"] != "00-abc-def-01" {
		t.Errorf("traceparent = %q", h["traceparent"])
	}
	if h[wire.HeaderJob] != "urn:t:x" {
		t.Errorf("bq-job = %q, the contract header must win", h[wire.HeaderJob])
	}
	if _, ok := h["blank"]; ok {
		t.Error("a blank header value was written")
	}

	// Without wire.HeaderPublisher, headers cannot be honoured: nothing written.
	b := testApp(only(mem))
	_, err = b.PublishWithHeaders(context.Background(), "urn:t:x", nil, map[string]string{"traceparent": "x"})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("err = %v, want errors.ErrUnsupported", err)
	}
	if mem.Len(DefaultQueue) != 1 {
		t.Errorf("a refused publish wrote something")
	}
	// An empty map is a plain publish.
	if _, err := b.PublishWithHeaders(context.Background(), "urn:t:x", nil, nil); err != nil {
		t.Errorf("PublishWithHeaders(nil headers) on a plain transport: %v", err)
	}
}

func TestPublishDelayed(t *testing.T) {
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock))
	a := testApp(mem)
	ctx := context.Background()
	if _, err := a.Publish(ctx, "urn:t:x", nil, WithDelay(time.Minute)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if m, _ := mem.Pop(ctx, DefaultQueue, 0); m != nil {
		t.Fatal("a delayed message was visible before its time")
	}
	clock.Advance(59 * time.Second)
	if m, _ := mem.Pop(ctx, DefaultQueue, 0); m != nil {
		t.Fatal("a delayed message was visible a second early")
	}
	clock.Advance(time.Second)
	if m, _ := mem.Pop(ctx, DefaultQueue, 0); m == nil {
		t.Fatal("the delayed message is not visible at its time")
	}

	for name, tr := range map[string]Transport{"no delayed publish": only(mem)} {
		_, err := testApp(tr).Publish(ctx, "urn:t:x", nil, WithDelay(time.Second))
		if !errors.Is(err, ErrDelayUnsupported) {
			t.Errorf("%s: err = %v, want ErrDelayUnsupported", name, err)
		}
	}
	if n := mem.Len(DefaultQueue); n != 0 {
		t.Errorf("a refused delayed publish left %d messages", n)
	}
}

func TestPublishDelayedWithHeaders(t *testing.T) {
	clock := bqtest.NewFakeClock(epoch)
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryClock(clock))
	var ops []string
	mem.SetFault(func(op, queue string) error { ops = append(ops, op); return nil })
	a := testApp(mem)
	ctx := context.Background()
	headers := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", wire.HeaderJob: "urn:t:spoofed", " ": "blank key", "empty": ""}
	if _, err := a.PublishWithHeaders(ctx, "urn:t:x", nil, headers, WithDelay(time.Minute)); err != nil {
		t.Fatalf("PublishWithHeaders with a delay: %v", err)
	}
	if len(ops) != 1 || ops[0] != "publish" {
		t.Errorf("transport calls = %v, want [publish]", ops)
	}
	clock.Advance(59 * time.Second)
	if m, _ := mem.Pop(ctx, DefaultQueue, 0); m != nil {
		t.Fatal("a delayed message with headers was visible before its time")
	}
	clock.Advance(time.Second)
	m, err := mem.Pop(ctx, DefaultQueue, 0)
	if err != nil || m == nil {
		t.Fatalf("the delayed message is not visible at its time: %v", err)
	}
	if got := m.Headers["traceparent"]; got != headers["traceparent"] {
		t.Errorf("traceparent = %q, want %q", got, headers["traceparent"])
	}
	if got := m.Headers[wire.HeaderJob]; got != "urn:t:x" {
		t.Errorf("bq-job = %q: the contract header must win a collision", got)
	}
	if _, ok := m.Headers[" "]; ok {
		t.Error("a blank header key was written")
	}
	if _, ok := m.Headers["empty"]; ok {
		t.Error("a blank header value was written")
	}
}

func TestInvalidOptionsSurfaceFromEveryEntryPoint(t *testing.T) {
	cases := map[string]Option{
		"max attempts 0":    WithMaxAttempts(0),
		"blank queue":       WithDefaultQueue(" "),
		"blank dlq":         WithDeadLetterQueue(""),
		"blank suffix":      WithDeadLetterSuffix("\t"),
		"zero poll timeout": WithPollTimeout(0),
		"bad strategy":      WithUnknownURNStrategy("retry"),
		"nil clock":         WithClock(nil),
		"zero settle":       WithSettleTimeout(0),
		"negative backoff":  WithFailureBackoff(-time.Second),
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := NewApp(bqtest.NewInMemoryTransport(), opt)
			if !errors.Is(err, ErrInvalidOption) || a != nil {
				t.Errorf("NewApp = %v, %v; want no App and ErrInvalidOption", a, err)
			}
		})
	}
	if _, err := NewApp(nil); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("nil transport: %v", err)
	}
	a, err := NewApp(bqtest.NewInMemoryTransport())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Drain(context.Background(), "a", " "); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("blank queue name: %v", err)
	}
}

// TestNewAppReportsEveryProblem: the problems of all options, and of
// options that contradict each other, come back together.
func TestNewAppReportsEveryProblem(t *testing.T) {
	_, err := NewApp(nil, WithMaxAttempts(0), nil, WithPollTimeout(0),
		WithDeadLetterQueue("orders.failed"), WithDeadLetterSuffix(".dead"))
	for _, want := range []string{"transport is nil", "max attempts 0", "poll timeout 0s", "both name the dead-letter queue"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewApp error %v does not report %q", err, want)
		}
	}
	if _, err := NewApp(bqtest.NewInMemoryTransport(), WithDeadLetter(false), WithDeadLetterQueue("x.dlq")); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a dead-letter queue with dead-lettering off: %v", err)
	}
	if _, err := NewApp(bqtest.NewInMemoryTransport(), WithDeadLetterSuffix(".dead"), WithDeadLetterQueue("")); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("a blank dead-letter queue: %v", err)
	}
}

func TestPublishRejectsBlankURN(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	if _, err := testApp(mem).Publish(context.Background(), " ", nil); err == nil {
		t.Fatal("Publish with a blank URN succeeded")
	}
	if len(mem.Queues()) != 0 && mem.Len(DefaultQueue) != 0 {
		t.Error("a rejected publish wrote something")
	}
}
