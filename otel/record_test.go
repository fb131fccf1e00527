package otel

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"

	"github.com/babelqueue/babelqueue-go/otel/internal/oteltest"
)

// TestProcessSpanCarriesTheKafkaRecord: partition, offset, key and group of
// a Kafka delivery's ReceivedMessage reach the process span, and the group
// the measurements of the delivery.
func TestProcessSpanCarriesTheKafkaRecord(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	msg := &babelqueue.ReceivedMessage{Queue: "orders", Key: []byte("order-7"), Partition: 2, Offset: 417, Group: "billing"}
	d := &babelqueue.Delivery{Message: msg, Queue: "orders", URN: testURN}
	ctx := hooks.OnDelivery(context.Background(), d)
	hooks.OnSettle(ctx, d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeDeadLettered, Reason: wire.ReasonFailed,
		Target: "orders.dlq", Deliveries: 3, HandlerRan: true, HandlerDuration: time.Second})
	span := h.Only(t, "process orders")
	oteltest.WantAttrs(t, span, map[string]string{
		"messaging.system": "kafka", "messaging.operation.name": "process", "messaging.operation.type": "process",
		"messaging.destination.name": "orders", "messaging.destination.partition.id": "2", "messaging.kafka.offset": "417",
		"messaging.kafka.message.key": "order-7", "messaging.consumer.group.name": "billing", "error.type": "failed",
	})
	if n := h.Count(t, MetricConsumedMessages, map[string]string{"messaging.consumer.group.name": "billing",
		"babelqueue.outcome": "dead_lettered", "error.type": "failed"}); n != 1 {
		t.Errorf("%s{group, dead_lettered} = %d, want 1", MetricConsumedMessages, n)
	}
	if n, _ := h.Observations(t, MetricProcessDuration, map[string]string{"messaging.consumer.group.name": "billing", "error.type": "_OTHER"}); n != 1 {
		t.Errorf("%s{group} = %d observations, want 1", MetricProcessDuration, n)
	}
}

// TestProcessSpanCarriesThePulsarDelivery: a Pulsar delivery reports its
// partition and subscription; no Kafka offset or key, though it has a key.
func TestProcessSpanCarriesThePulsarDelivery(t *testing.T) {
	h := newHarness(t, WithSystem("pulsar"))
	hooks := h.tel.Hooks()
	msg := &babelqueue.ReceivedMessage{Queue: "orders", Key: []byte("order-7"), Partition: 1, Group: "workers"}
	d := &babelqueue.Delivery{Message: msg, Queue: "orders", URN: testURN}
	hooks.OnSettle(hooks.OnDelivery(context.Background(), d), d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeHandled, HandlerRan: true})
	span := h.Only(t, "process orders")
	oteltest.WantAttrs(t, span, map[string]string{
		"messaging.system": "pulsar", "messaging.destination.partition.id": "1", "messaging.consumer.group.name": "workers",
	})
	got := oteltest.Attrs(span)
	for _, k := range []string{"messaging.kafka.offset", "messaging.kafka.message.key"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q on a Pulsar delivery", k, v)
		}
	}
	if n := h.Count(t, MetricConsumedMessages, map[string]string{"messaging.consumer.group.name": "workers", "babelqueue.outcome": "handled"}); n != 1 {
		t.Errorf("%s{subscription} = %d, want 1", MetricConsumedMessages, n)
	}
}

// TestBinaryKafkaKeyIsNotReported: a key that is not valid UTF-8 is left
// off; offset and partition stay.
func TestBinaryKafkaKeyIsNotReported(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	d := &babelqueue.Delivery{Message: &babelqueue.ReceivedMessage{Queue: "orders", Key: []byte{0xff, 0xfe}, Offset: 5}, Queue: "orders"}
	hooks.OnSettle(hooks.OnDelivery(context.Background(), d), d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeHandled})
	got := oteltest.Attrs(h.Only(t, "process orders"))
	if _, ok := got["messaging.kafka.message.key"]; ok || got["messaging.kafka.offset"] != "5" || got["messaging.destination.partition.id"] != "0" {
		t.Errorf("attributes %v", got)
	}
	if _, ok := got["messaging.consumer.group.name"]; ok {
		t.Errorf("a delivery without a group reports one: %v", got)
	}
}

// TestGenericDeliveryAddsNothing: on a system without partitions (the
// default) a delivery without a group reports none of the record
// attributes.
func TestGenericDeliveryAddsNothing(t *testing.T) {
	h := newHarness(t)
	hooks := h.tel.Hooks()
	d := &babelqueue.Delivery{Message: &babelqueue.ReceivedMessage{Queue: "orders", Key: []byte("k"), Partition: 3, Offset: 9}, Queue: "orders"}
	hooks.OnSettle(hooks.OnDelivery(context.Background(), d), d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeHandled})
	got := oteltest.Attrs(h.Only(t, "process orders"))
	for _, k := range []string{"messaging.destination.partition.id", "messaging.kafka.offset", "messaging.kafka.message.key", "messaging.consumer.group.name", "error.type"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q on a generic delivery", k, v)
		}
	}
}
