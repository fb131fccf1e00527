//go:build integration

package integration

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	apachepulsar "github.com/apache/pulsar-client-go/pulsar"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/babelqueue/babelqueue-go/brokertest"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/kafka"
	"github.com/babelqueue/babelqueue-go/pulsar"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// handled counts the deliveries a handler saw, by meta.id.
type handled struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (h *handled) handle(_ context.Context, env *babelqueue.Envelope) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[string]bool{}
	}
	h.ids[env.Meta.ID] = true
	return nil
}

func (h *handled) n() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// processSpans waits until n messages were handled and their process
// spans ended, and returns the spans by messaging.message.id.
func processSpans(t *testing.T, h *harness, rec *handled, queue string, n int) map[string]tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for (rec.n() < n || len(h.Ended("process "+queue)) < n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := map[string]tracetest.SpanStub{}
	for _, s := range h.Ended("process " + queue) {
		out[oteltest.Attrs(s)["messaging.message.id"]] = s
	}
	if len(out) != n {
		t.Fatalf("%d process spans of %s, want %d", len(out), queue, n)
	}
	return out
}

// TestKafkaProcessSpanNamesTheRecord: the process span of a Kafka delivery
// carries its partition, offset, key and consumer group, as read from the
// ReceivedMessage the binding filled.
func TestKafkaProcessSpanNamesTheRecord(t *testing.T) {
	queue := brokertest.Topic(t, "otel-rec")
	group := brokertest.Topic(t, "g")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr := kafkaTransport(t, kafka.WithGroupID(group))
	if err := tr.EnsureTopics(ctx, queue, 3, 1); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "kafka")
	app, err := babelqueue.NewApp(tr, babelqueue.WithHooks(h.tel.Hooks()), babelqueue.WithDefaultQueue(queue),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &handled{}
	app.Handle(testURN, rec.handle)
	keys := []string{"order-1", "order-1", "order-2"}
	ids := make([]string, len(keys))
	for i, k := range keys {
		if ids[i], err = app.Publish(ctx, testURN, map[string]any{"i": i}, babelqueue.WithKey([]byte(k))); err != nil {
			t.Fatal(err)
		}
	}
	consume(t, app, queue)
	spans := processSpans(t, h, rec, queue, len(keys))
	offsets := map[int32]int64{} // next offset per partition, in publish order
	for i, k := range keys {
		p := int32(kafka.PartitionForKey([]byte(k), 3))
		oteltest.WantAttrs(t, spans[ids[i]], map[string]string{
			"messaging.system": "kafka", "messaging.destination.name": queue,
			"messaging.destination.partition.id": strconv.Itoa(int(p)),
			"messaging.kafka.offset":             strconv.FormatInt(offsets[p], 10),
			"messaging.kafka.message.key":        k,
			"messaging.consumer.group.name":      group,
		})
		offsets[p]++
	}
}

// TestPulsarProcessSpanNamesPartitionAndSubscription: the process span of
// a Pulsar delivery from a partitioned topic carries the partition index it
// was read from and the subscription as the consumer group; no Kafka offset
// or key.
func TestPulsarProcessSpanNamesPartitionAndSubscription(t *testing.T) {
	queue := brokertest.Topic(t, "otel-rec")
	sub := brokertest.Topic(t, "sub")
	brokertest.PulsarPartitionedTopic(t, queue, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A second subscription, made before the publish, reads where each
	// message landed.
	raw, err := apachepulsar.NewClient(apachepulsar.ClientOptions{URL: brokertest.PulsarURL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	watch, err := raw.Subscribe(apachepulsar.ConsumerOptions{Topic: "persistent://public/default/" + queue, SubscriptionName: "watch",
		Type: apachepulsar.Shared, SubscriptionInitialPosition: apachepulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()

	h := newHarness(t, "pulsar")
	tr := pulsarTransport(t, pulsar.WithSubscription(sub), pulsar.WithSubscriptionType(apachepulsar.Shared))
	app, err := babelqueue.NewApp(tr, babelqueue.WithHooks(h.tel.Hooks()), babelqueue.WithDefaultQueue(queue),
		babelqueue.WithPollTimeout(200*time.Millisecond), babelqueue.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &handled{}
	app.Handle(testURN, rec.handle)
	const n = 6
	for i := range n {
		if _, err := app.Publish(ctx, testURN, map[string]any{"i": i}, babelqueue.WithKey([]byte("key-"+strconv.Itoa(i)))); err != nil {
			t.Fatal(err)
		}
	}
	landed := map[string]string{} // meta.id -> partition index
	for len(landed) < n {
		m, err := watch.Receive(ctx)
		if err != nil {
			t.Fatalf("watch: %v (read %d)", err, len(landed))
		}
		env, err := babelqueue.Decode(m.Payload())
		if err != nil {
			t.Fatal(err)
		}
		landed[env.Meta.ID] = strconv.Itoa(int(m.ID().PartitionIdx()))
		_ = watch.Ack(m)
	}
	consume(t, app, queue)
	spans := processSpans(t, h, rec, queue, n)
	for id, part := range landed {
		s, ok := spans[id]
		if !ok {
			t.Fatalf("no process span for %s", id)
		}
		oteltest.WantAttrs(t, s, map[string]string{"messaging.system": "pulsar", "messaging.destination.partition.id": part,
			"messaging.consumer.group.name": sub})
		for _, k := range []string{"messaging.kafka.offset", "messaging.kafka.message.key"} {
			if v, ok := oteltest.Attrs(s)[k]; ok {
				t.Errorf("%s = %q on a Pulsar delivery", k, v)
			}
		}
	}
}
