package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// TestReinjectorHasAGroupOfItsOwn: a Reinjector built on the App's
// transport no longer joins the App's group (issue 36: "Rebalance In
// Progress" and tier topics in `bq lag -g orders-workers`).
func TestReinjectorHasAGroupOfItsOwn(t *testing.T) {
	tiers := WithRetryTiers(time.Second)
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithGroupID("orders-workers")}, "orders-workers.reinject"},
		{[]Option{WithGroupID("orders-workers"), WithReinjectGroupID("orders-reinject")}, "orders-reinject"},
		{[]Option{WithReinjectGroupID("bq-reinject")}, "bq-reinject"},
	} {
		tr, err := New(append([]Option{WithBrokers("127.0.0.1:1"), tiers}, c.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		r, err := tr.NewReinjector("orders")
		if err != nil {
			t.Fatalf("NewReinjector: %v", err)
		}
		if r.GroupID() != c.want || tr.ReinjectGroupID() != c.want {
			t.Errorf("group %q (transport says %q), want %q", r.GroupID(), tr.ReinjectGroupID(), c.want)
		}
		_ = tr.Close()
	}
	tr, err := New(WithBrokers("127.0.0.1:1"), tiers)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.NewReinjector("orders"); !errors.Is(err, ErrNoGroupID) {
		t.Errorf("NewReinjector without any group: %v, want ErrNoGroupID", err)
	}
	if _, err := New(WithBrokers("127.0.0.1:1"), WithReinjectGroupID(" "), WithStaleTierWarning(-1)); !errors.Is(err, babelqueue.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "re-inject group") || !strings.Contains(err.Error(), "stale tier") {
		t.Errorf("blank re-inject group and negative stale tier warning: %v", err)
	}
}

type staleHook struct {
	mu  sync.Mutex
	got []driver.ReinjectBacklog
}

func (h *staleHook) OnStaleTier(_ context.Context, tb driver.ReinjectBacklog) {
	h.mu.Lock()
	h.got = append(h.got, tb)
	h.mu.Unlock()
}

func (h *staleHook) calls() []driver.ReinjectBacklog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]driver.ReinjectBacklog(nil), h.got...)
}

// waitFor polls cond every 20ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestEmbeddedStaleTierWarnsUntilAReinjectorRuns: a consuming transport
// with tiers and no Reinjector logs a warning and calls the StaleTierHook
// once a tier record waited past its tier plus WithStaleTierWarning; once
// a Reinjector of the same transport (its own group) carries the record,
// the warning clears and the record is delivered.
func TestEmbeddedStaleTierWarnsUntilAReinjectorRuns(t *testing.T) {
	addrs := embBroker(t)
	const topic = "emb-stale"
	var logs bqtest.SyncBuffer
	hook := &staleHook{}
	tr := embTransport(t, addrs, WithGroupID("workers"), WithRetryTiers(time.Second, time.Hour),
		WithStaleTierWarning(200*time.Millisecond), WithReinjectHooks(hook),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))

	// A retry record of tier 1 written an hour ago that nobody carried.
	body := envelope(t, 1)
	embProduce(t, addrs, kafkago.Message{Topic: RetryTopic(topic, 1), Value: []byte(body), Time: time.Now().Add(-time.Hour),
		Headers: []kafkago.Header{h("bq-original-topic", topic), h("bq-delay", "1000")}})

	if m := embPop(t, tr, topic, time.Second); m != nil { // consuming starts the check
		t.Fatalf("unexpected delivery %s", m.Body)
	}
	if !waitFor(10*time.Second, func() bool { return len(hook.calls()) > 0 }) {
		t.Fatalf("no stale tier reported; logs:\n%s", logs.String())
	}
	tb := hook.calls()[0]
	if tb.Tier != RetryTopic(topic, 1) || tb.TierIndex != 1 || tb.Queue != topic || tb.Group != "workers.reinject" ||
		tb.Backlog != 1 || tb.OldestAge < 59*time.Minute || tb.OldestLag != tb.OldestAge-time.Second || tb.Err != nil {
		t.Errorf("stale tier %+v", tb)
	}
	for _, want := range []string{"level=WARN", "retry tier records wait past their tier", "tier=emb-stale.retry.1", "group=workers.reinject"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
	for _, c := range hook.calls() {
		if c.TierIndex != 1 {
			t.Errorf("tier %s reported: it holds nothing", c.Tier)
		}
	}
	if n := strings.Count(logs.String(), "wait past their tier"); n != 1 {
		t.Errorf("warned %d times, want once until it clears", n)
	}

	r, err := tr.NewReinjector(topic)
	if err != nil {
		t.Fatal(err)
	}
	bqtest.RunUntilCleanup(t, "Reinjector.Run", 10*time.Second, r.Run)
	back := embPop(t, tr, topic, 10*time.Second)
	if back == nil || back.Body != body {
		t.Fatalf("re-injected %v, want the tier record", back)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "retry tier is carried again") }) {
		t.Fatalf("the warning never cleared; logs:\n%s", logs.String())
	}
	n := len(hook.calls())
	time.Sleep(300 * time.Millisecond)
	if m := len(hook.calls()); m != n {
		t.Errorf("hook called %d more times after the tier was carried", m-n)
	}
}

// TestStaleTierCheckIsOffWithoutTiersOrWhenTurnedOff: nothing to watch,
// no goroutine.
func TestStaleTierCheckIsOffWithoutTiersOrWhenTurnedOff(t *testing.T) {
	for _, opts := range [][]Option{
		{WithGroupID("g")},
		{WithGroupID("g"), WithRetryTiers(time.Second), WithStaleTierWarning(0)},
	} {
		tr, err := New(append([]Option{WithBrokers("127.0.0.1:1")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if tr.tiers != nil {
			t.Errorf("%d options: a tier watch was built", len(opts))
		}
		_ = tr.Close()
	}
}
