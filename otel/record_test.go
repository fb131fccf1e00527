package otel

import (
	"context"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// kafkaHandle is a delivery handle that reports its record's position,
// key and group, as the Kafka binding's does.
type kafkaHandle struct{}

func (kafkaHandle) Partition() int32           { return 2 }
func (kafkaHandle) Offset() int64              { return 417 }
func (kafkaHandle) MessageKey() (string, bool) { return "order-7", true }
func (kafkaHandle) ConsumerGroup() string      { return "billing" }

// TestProcessSpanCarriesTheRecordTheHandleReports: partition, offset, key
// and group reach the process span, and the group the measurements of the
// delivery.
func TestProcessSpanCarriesTheRecordTheHandleReports(t *testing.T) {
	h := newHarness(t, WithSystem("kafka"))
	hooks := h.tel.Hooks()
	d := &babelqueue.Delivery{Message: &babelqueue.ReceivedMessage{Queue: "orders", Handle: kafkaHandle{}}, Queue: "orders", URN: testURN}
	ctx := hooks.OnDelivery(context.Background(), d)
	hooks.OnSettle(ctx, d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeDeadLettered, Reason: wire.ReasonFailed,
		Target: "orders.dlq", Attempts: 3, HandlerRan: true, HandlerDuration: time.Second})
	span := h.only(t, "process orders")
	wantAttrs(t, span, map[string]string{
		"messaging.system": "kafka", "messaging.operation.name": "process", "messaging.operation.type": "process",
		"messaging.destination.name": "orders", "messaging.destination.partition.id": "2", "messaging.kafka.offset": "417",
		"messaging.kafka.message.key": "order-7", "messaging.consumer.group.name": "billing", "error.type": "failed",
	})
	if n := h.count(t, MetricConsumedMessages, map[string]string{"messaging.consumer.group.name": "billing",
		"babelqueue.outcome": "dead_lettered", "error.type": "failed"}); n != 1 {
		t.Errorf("%s{group, dead_lettered} = %d, want 1", MetricConsumedMessages, n)
	}
	if n, _ := h.observations(t, MetricProcessDuration, map[string]string{"messaging.consumer.group.name": "billing", "error.type": "_OTHER"}); n != 1 {
		t.Errorf("%s{group} = %d observations, want 1", MetricProcessDuration, n)
	}
}

// TestHandleWithoutRecordInfoAddsNothing: a handle that reports nothing
// leaves the record attributes off.
func TestHandleWithoutRecordInfoAddsNothing(t *testing.T) {
	h := newHarness(t)
	hooks := h.tel.Hooks()
	d := &babelqueue.Delivery{Message: &babelqueue.ReceivedMessage{Queue: "orders", Handle: 42}, Queue: "orders"}
	hooks.OnSettle(hooks.OnDelivery(context.Background(), d), d, &babelqueue.Settlement{Outcome: babelqueue.OutcomeHandled})
	got := attrs(h.only(t, "process orders"))
	for _, k := range []string{"messaging.destination.partition.id", "messaging.kafka.offset", "messaging.kafka.message.key", "messaging.consumer.group.name", "error.type"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %q on a handle that reports nothing", k, v)
		}
	}
}
