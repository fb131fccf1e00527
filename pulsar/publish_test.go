package pulsar

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
)

const envelope = `{"job":"urn:babel:orders:created","trace_id":"t-1","data":{"order_id":1042},` +
	`"meta":{"id":"m-1","queue":"orders","lang":"php","schema_version":1,"created_at":1749132727000},"attempts":0}`

func TestPublishProjectsContractProperties(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	if err := s.tr.Publish(context.Background(), "orders", envelope); err != nil {
		t.Fatal(err)
	}
	sent := s.fc.producer("orders").messages()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(sent))
	}
	m := sent[0]
	want := map[string]string{
		"bq-job":            "urn:babel:orders:created",
		"bq-trace-id":       "t-1",
		"bq-message-id":     "m-1",
		"bq-schema-version": "1",
		"bq-source-lang":    "php",
		"bq-attempts":       "0",
	}
	if diff := cmp.Diff(want, m.Properties); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	if string(m.Payload) != envelope {
		t.Errorf("payload changed:\n%s", m.Payload)
	}
	if got := m.EventTime.UnixMilli(); got != 1749132727000 {
		t.Errorf("event time = %d, want created_at 1749132727000", got)
	}
	if m.DeliverAfter != 0 || m.Key != "" {
		t.Errorf("unexpected DeliverAfter %v or key %q", m.DeliverAfter, m.Key)
	}
}

func TestPublishWithHeadersContractWins(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	err := s.tr.PublishWithHeaders(context.Background(), "orders", envelope, map[string]string{
		"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"bq-job":      "urn:spoofed",
		"blank":       " \t",
		" ":           "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := s.fc.producer("orders").messages()[0]
	if got := m.Properties["bq-job"]; got != "urn:babel:orders:created" {
		t.Errorf("bq-job = %q, want the contract value", got)
	}
	if got := m.Properties["traceparent"]; got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent = %q", got)
	}
	if _, ok := m.Properties["blank"]; ok {
		t.Error("blank value was written")
	}
	if _, ok := m.Properties[" "]; ok {
		t.Error("blank key was written")
	}
}

func TestPublishNonEnvelopeHasNoProjection(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	if err := s.tr.Publish(context.Background(), "orders", "not json"); err != nil {
		t.Fatal(err)
	}
	m := s.fc.producer("orders").messages()[0]
	if len(m.Properties) != 0 || !m.EventTime.IsZero() {
		t.Errorf("properties %v, event time %v; want none", m.Properties, m.EventTime)
	}
}

func TestPublishDelayedUsesDeliverAfter(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	ctx := context.Background()
	if err := s.tr.PublishDelayed(ctx, "orders", envelope, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := s.tr.PublishDelayed(ctx, "orders", envelope, 0); err != nil {
		t.Fatal(err)
	}
	sent := s.fc.producer("orders").messages()
	if sent[0].DeliverAfter != 1500*time.Millisecond {
		t.Errorf("DeliverAfter = %v, want 1.5s", sent[0].DeliverAfter)
	}
	if sent[1].DeliverAfter != 0 {
		t.Errorf("zero delay: DeliverAfter = %v, want 0", sent[1].DeliverAfter)
	}
	if sent[0].Properties["bq-job"] != "urn:babel:orders:created" {
		t.Error("delayed publish lost the projection")
	}
}

func TestTopicPrefix(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithTopicPrefix("acme", "prod"))
	if err := s.tr.Publish(context.Background(), "orders", envelope); err != nil {
		t.Fatal(err)
	}
	if s.fc.producer("persistent://acme/prod/orders") == nil {
		t.Fatalf("no producer on the prefixed topic; have %v", s.fc.producerOpts)
	}
	if got := s.tr.Topic("non-persistent://x/y/z"); got != "non-persistent://x/y/z" {
		t.Errorf("full topic name rewritten to %q", got)
	}
}

func TestProducerOptionsDefaultsAndHook(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared), WithProducerOptions(func(o *pulsar.ProducerOptions) {
		o.Name = "custom"
	}))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := s.tr.Publish(ctx, "orders", envelope); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.fc.producerOpts) != 1 {
		t.Fatalf("created %d producers for one topic, want 1", len(s.fc.producerOpts))
	}
	o := s.fc.producerOpts[0]
	if o.BatchingMaxPublishDelay != DefaultBatchingMaxPublishDelay || !o.DisableBatching || o.Name != "custom" || o.Topic != "orders" {
		t.Errorf("producer options = %+v", o)
	}
}

// TestProducerBatchingDefaults checks that no producer batches unless the
// hook turns batching back on: a plain one, whose every write is a
// synchronous Send, and a deduplicating one, whose batches would mix keys.
func TestProducerBatchingDefaults(t *testing.T) {
	for name, c := range map[string]struct {
		opts  []Option
		batch bool
	}{
		"plain":            {nil, false},
		"hook re-enables":  {[]Option{WithProducerOptions(func(o *pulsar.ProducerOptions) { o.DisableBatching = false })}, true},
		"deduplicating":    {[]Option{WithDeduplication("orders-svc")}, false},
		"dedup hook turns": {[]Option{WithDeduplication("orders-svc"), WithProducerOptions(func(o *pulsar.ProducerOptions) { o.DisableBatching = false })}, true},
	} {
		t.Run(name, func(t *testing.T) {
			s := newFake(t, append([]Option{WithSubscriptionType(pulsar.Shared)}, c.opts...)...)
			o := s.tr.producerOptions("orders", s.tr.cfg.dedupName)
			if o.DisableBatching == c.batch || o.BatchingMaxPublishDelay != DefaultBatchingMaxPublishDelay || o.Topic != "orders" {
				t.Errorf("options %+v; want batching %v with delay %v", o, c.batch, DefaultBatchingMaxPublishDelay)
			}
			if s.tr.cfg.dedupName == "" {
				// What a publish creates is what producerOptions gives.
				if err := s.tr.Publish(context.Background(), "orders", envelope); err != nil {
					t.Fatal(err)
				}
				if len(s.fc.producerOpts) != 1 || s.fc.producerOpts[0].DisableBatching != o.DisableBatching {
					t.Errorf("created %+v", s.fc.producerOpts)
				}
			}
		})
	}
}

// TestPublishLeavesExtraHeadersAlone checks that the caller's map is
// neither kept nor changed by a publish.
func TestPublishLeavesExtraHeadersAlone(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.Shared))
	extra := map[string]string{"traceparent": "tp", "bq-job": "urn:spoofed", "blank": " "}
	if err := s.tr.PublishWithHeaders(context.Background(), "orders", envelope, extra); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"traceparent": "tp", "bq-job": "urn:spoofed", "blank": " "}
	if diff := cmp.Diff(want, extra); diff != "" {
		t.Errorf("extra headers changed (-before +after):\n%s", diff)
	}
	props := s.fc.producer("orders").messages()[0].Properties
	props["traceparent"] = "changed"
	if extra["traceparent"] != "tp" {
		t.Error("the published properties share the caller's map")
	}
}

// nopProducer and nopClient take a publish and do nothing, so that
// BenchmarkPublish measures the binding's own work per message.
type nopProducer struct{}

func (nopProducer) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return nil, nil
}
func (nopProducer) Close() {}

type nopClient struct{}

func (nopClient) CreateProducer(pulsar.ProducerOptions) (producer, error) { return nopProducer{}, nil }
func (nopClient) Subscribe(pulsar.ConsumerOptions) (consumer, error)      { return nil, nil }
func (nopClient) Close()                                                  {}

// BenchmarkPublish is the per-message cost of Publish and of
// PublishWithHeaders above the client's Send, from concurrent publishers.
func BenchmarkPublish(b *testing.B) {
	for _, bc := range []struct {
		name  string
		extra map[string]string
	}{
		{"plain", nil},
		{"traceparent", map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tr := newTransport(defaultConfig(), nopClient{}, true, nil, nil)
			defer tr.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := tr.PublishWithHeaders(ctx, "orders", envelope, bc.extra); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
