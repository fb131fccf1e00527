package pulsar

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

var _ babelqueue.DelayedHeaderPublisher = (*Transport)(nil)

func TestPublishDelayedWithHeadersSetsDeliverAfterAndProperties(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	extra := map[string]string{
		"traceparent": "00-a-b-01",
		"bq-job":      "urn:spoofed",
		" ":           "blank key",
		"blank":       " ",
	}
	if err := s.tr.PublishDelayedWithHeaders(ctx, "orders", envelope, 2*time.Second, extra); err != nil {
		t.Fatal(err)
	}
	if err := s.tr.PublishDelayedWithHeaders(ctx, "orders", envelope, -time.Second, map[string]string{"x-a": "1"}); err != nil {
		t.Fatal(err)
	}
	sent := s.fc.producer("orders").messages()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want 2", len(sent))
	}
	m := sent[0]
	if m.DeliverAfter != 2*time.Second {
		t.Errorf("DeliverAfter = %v, want 2s", m.DeliverAfter)
	}
	if got := m.Properties["traceparent"]; got != "00-a-b-01" {
		t.Errorf("traceparent = %q", got)
	}
	if got := m.Properties["bq-job"]; got != "urn:babel:orders:created" {
		t.Errorf("bq-job = %q: the contract property must win", got)
	}
	if _, ok := m.Properties[" "]; ok {
		t.Error("a blank key was written")
	}
	if _, ok := m.Properties["blank"]; ok {
		t.Error("a blank value was written")
	}
	if m.EventTime.IsZero() {
		t.Error("the event time of meta.created_at is missing")
	}
	if sent[1].DeliverAfter != 0 || sent[1].Properties["x-a"] != "1" {
		t.Errorf("negative delay: DeliverAfter %v, properties %v; want an immediate publish with x-a", sent[1].DeliverAfter, sent[1].Properties)
	}
}
