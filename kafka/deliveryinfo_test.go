package kafka

import (
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

// TestDeliveryReportsItsRecord: the handle of a delivery tells its
// partition, offset, text key and group; a binary or missing key is not
// reported.
func TestDeliveryReportsItsRecord(t *testing.T) {
	tr := &Transport{cfg: config{groupID: "billing"}}
	d := tr.newDelivery("orders", kafkago.Message{Partition: 3, Offset: 99, Key: []byte("order-7")})
	h := d.rm.Handle.(interface {
		Partition() int32
		Offset() int64
		MessageKey() (string, bool)
		ConsumerGroup() string
	})
	if key, ok := h.MessageKey(); h.Partition() != 3 || h.Offset() != 99 || key != "order-7" || !ok || h.ConsumerGroup() != "billing" {
		t.Errorf("got partition %d offset %d key %q/%v group %q", h.Partition(), h.Offset(), key, ok, h.ConsumerGroup())
	}
	for _, key := range [][]byte{nil, {0xff, 0xfe}} {
		d := tr.newDelivery("orders", kafkago.Message{Key: key})
		if k, ok := d.MessageKey(); ok {
			t.Errorf("key %v reported as %q", key, k)
		}
	}
}
