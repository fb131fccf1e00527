package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// publishDelayed is Send of a delayed IntentPublish with headers.
func publishDelayed(tr *Transport, ctx context.Context, queue, body string, delay time.Duration, headers map[string]string) error {
	_, err := tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Delay: delay, Headers: headers})
	return err
}

func TestSendDelayedWithHeadersMergesLikePublishWithHeaders(t *testing.T) {
	rg := newRig(t, WithRetryTiers(5*time.Second, 30*time.Second))
	ctx := context.Background()
	extra := map[string]string{
		"tracestate":        "s=1",
		"traceparent":       "00-a-b-01",
		"bq-job":            "urn:spoofed",
		"bq-delay":          "1",
		"bq-original-topic": "elsewhere",
		" ":                 "blank key",
		"blank":             "",
	}
	r, err := rg.tr.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "orders", Body: envelope(t, 0),
		Delay: 6 * time.Second, Headers: extra, Key: []byte("k-1")})
	if err != nil {
		t.Fatal(err)
	}
	if want := (driver.Receipt{Queue: "orders.retry.2", Delay: 30 * time.Second, Partition: -1}); r != want {
		t.Fatalf("receipt %+v, want %+v", r, want)
	}
	got := rg.log.records("orders.retry.2")
	if len(got) != 1 {
		t.Fatalf("tier 2 holds %d records, want 1", len(got))
	}
	if string(got[0].Key) != "k-1" {
		t.Fatalf("key %q, want k-1", got[0].Key)
	}
	want := append(contractHeaders("0"), h("bq-delay", "30000"), h("bq-original-topic", "orders"),
		h("traceparent", "00-a-b-01"), h("tracestate", "s=1"))
	if diff := cmp.Diff(want, got[0].Headers); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	if n := len(rg.log.records("orders.retry.1")); n != 0 {
		t.Fatalf("tier 1 holds %d records, want 0 (6s is covered by tier 2 only)", n)
	}

	if err := publishDelayed(rg.tr, ctx, "orders", "x", 31*time.Second, extra); !errors.Is(err, ErrDelayUnsupported) {
		t.Fatalf("delay beyond the last tier: %v", err)
	}
	if err := publishDelayed(rg.tr, ctx, " ", "x", time.Second, extra); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("blank queue: %v", err)
	}
	if err := publishDelayed(rg.tr, ctx, "orders", envelope(t, 0), 0, map[string]string{"x-a": "1"}); err != nil {
		t.Fatal(err)
	}
	now := rg.log.records("orders")
	if len(now) != 1 {
		t.Fatalf("zero delay wrote %d records to the work topic, want 1", len(now))
	}
	if diff := cmp.Diff(append(contractHeaders("0"), h("x-a", "1")), now[0].Headers); diff != "" {
		t.Fatalf("zero delay headers (-want +got):\n%s", diff)
	}
}

func TestReinjectorCarriesDelayedPublishHeaders(t *testing.T) {
	rg := newReinjectRig(t, 1, 5*time.Second)
	extra := map[string]string{"traceparent": "00-abc-def-01", "x-custom": "kept"}
	if err := publishDelayed(rg.tr, context.Background(), "orders", envelope(t, 0), 5*time.Second, extra); err != nil {
		t.Fatal(err)
	}
	rg.start([]int{0})
	rg.waitTimers(1)
	rg.clock.Advance(5 * time.Second)
	out := rg.waitRecords("orders", 1)[0]
	want := append(contractHeaders("0"), h("traceparent", "00-abc-def-01"), h("x-custom", "kept"))
	if diff := cmp.Diff(want, out.Headers); diff != "" {
		t.Fatalf("re-injected headers (-want +got):\n%s", diff)
	}
	if string(out.Value) != envelope(t, 0) {
		t.Fatalf("re-injected body %s", out.Value)
	}
	rg.waitCommitted("orders.retry.1", 0, 1)
}
