package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

// TestDeliveryReportsItsRecord: a delivery's ReceivedMessage tells its
// partition, offset, key and group, the one place telemetry reads them.
func TestDeliveryReportsItsRecord(t *testing.T) {
	tr := &Transport{cfg: config{groupID: "billing"}}
	rm := tr.newDelivery("orders", kafkago.Message{Partition: 3, Offset: 99, Key: []byte("order-7")}).rm
	if rm.Partition != 3 || rm.Offset != 99 || string(rm.Key) != "order-7" || rm.Group != "billing" || rm.Queue != "orders" {
		t.Errorf("got partition %d offset %d key %q group %q queue %q", rm.Partition, rm.Offset, rm.Key, rm.Group, rm.Queue)
	}
	// A record read by a Reader the transport was given has no group.
	rm = (&Transport{}).newDelivery("orders", kafkago.Message{Offset: 7}).rm
	if rm.Group != "" || rm.Offset != 7 || rm.Key != nil {
		t.Errorf("reader record: group %q offset %d key %v", rm.Group, rm.Offset, rm.Key)
	}
}
