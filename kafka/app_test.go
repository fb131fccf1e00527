package kafka

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// settleLog is a babelqueue.SettleHook that keeps the settlements.
type settleLog struct {
	mu  sync.Mutex
	all []babelqueue.Settlement
}

func (l *settleLog) OnSettle(_ context.Context, _ *babelqueue.Delivery, s *babelqueue.Settlement) {
	l.mu.Lock()
	l.all = append(l.all, *s)
	l.mu.Unlock()
}

// TestAppRetryThroughATierKeepsTheDeliveredRoute runs an App over the
// transport (fake writer and reader): a failed delivery whose bq-job
// header names another route than its body goes to the tier of its
// attempts with the delivered route, its out-of-band headers and its key,
// the original is committed after the write, and the App's settlement
// names the tier topic and delay the transport reported.
func TestAppRetryThroughATierKeepsTheDeliveredRoute(t *testing.T) {
	rg := newRig(t, WithRetryTiers(5*time.Second, 30*time.Second), WithMaxWaitTime(20*time.Millisecond))
	settled := &settleLog{}
	app, err := babelqueue.NewApp(rg.tr, babelqueue.WithDefaultQueue("orders"), babelqueue.WithMaxAttempts(5),
		babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithHooks(settled),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	handled := 0
	app.Handle("urn:delivered:route", func(context.Context, *babelqueue.Envelope) error {
		handled++
		return errors.New("try again")
	})
	body := envelope(t, 1)
	hs, _ := projection(body, t0)
	in := append(toKafkaHeaders(hs), h("bq-job", "urn:delivered:route"), h("x-tenant", "acme"), h("traceparent", "00-a-b-01"))
	rg.log.append("orders", 0, kafkago.Message{Key: []byte("k"), Value: []byte(body), Headers: in})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := app.Drain(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if handled != 1 {
		t.Fatalf("handler ran %d times", handled)
	}
	tier := rg.log.records("orders.retry.2")
	if len(tier) != 1 {
		t.Fatalf("tier 2 holds %d records", len(tier))
	}
	want := []kafkago.Header{
		h("bq-job", "urn:delivered:route"), h("bq-trace-id", "trace-1"), h("bq-message-id", "id-1"), h("bq-schema-version", "1"),
		h("bq-source-lang", "go"), h("bq-attempts", "2"), h("bq-delay", "30000"), h("bq-original-topic", "orders"),
		h("traceparent", "00-a-b-01"), h("x-tenant", "acme"),
	}
	if diff := cmp.Diff(want, tier[0].Headers); diff != "" {
		t.Fatalf("tier record headers (-want +got):\n%s", diff)
	}
	if string(tier[0].Key) != "k" || string(tier[0].Value) != envelope(t, 2) {
		t.Fatalf("tier record key %q value %s", tier[0].Key, tier[0].Value)
	}
	if c := rg.offsets.get("orders", 0); c != 1 {
		t.Fatalf("committed next offset %d, want 1", c)
	}
	settled.mu.Lock()
	defer settled.mu.Unlock()
	if len(settled.all) != 1 {
		t.Fatalf("settlements %+v", settled.all)
	}
	s := settled.all[0]
	if s.Outcome != babelqueue.OutcomeRetried || s.Target != "orders.retry.2" || s.Delay != 30*time.Second || s.Deliveries != 2 {
		t.Fatalf("settlement %+v", s)
	}
}
