package pulsar

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestDeliveryStatesPartitionAndSubscription: a delivery's ReceivedMessage
// carries the partition index of its topic partition and the subscription
// as its Group, the one place telemetry reads them; Offset stays 0 (a
// Pulsar message has an ID, not an offset).
func TestDeliveryStatesPartitionAndSubscription(t *testing.T) {
	s := newFake(t, WithSubscription("workers"), WithSubscriptionType(pulsar.Shared))
	m := &fakeMessage{payload: []byte(bodyWithAttempts("0")), key: "order-7", id: pulsar.NewMessageID(3, 4, -1, 2)}
	msg := popOne(t, s, "orders", m)
	if msg.Partition != 2 || msg.Group != "workers" || string(msg.Key) != "order-7" || msg.Offset != 0 {
		t.Errorf("partition %d group %q key %q offset %d", msg.Partition, msg.Group, msg.Key, msg.Offset)
	}
	// A topic that is not partitioned (index -1) is its partition 0.
	msg = popOne(t, s, "orders", &fakeMessage{payload: []byte(bodyWithAttempts("0")), id: pulsar.NewMessageID(3, 5, -1, -1)})
	if msg.Partition != 0 || msg.Group != "workers" {
		t.Errorf("not partitioned: partition %d group %q", msg.Partition, msg.Group)
	}
}
