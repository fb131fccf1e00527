package otel

import (
	"strconv"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// A binding's delivery handle (babelqueue.ReceivedMessage.Handle) tells
// the hooks where its record came from by implementing any of these
// interfaces; the hooks set the matching semantic convention attribute on
// the process span and, for the consumer group, on the delivery's
// measurements. The Kafka binding implements all four; a handle that
// implements none is traced without them.
type (
	// DeliveryPartition reports messaging.destination.partition.id.
	DeliveryPartition interface{ Partition() int32 }
	// DeliveryOffset reports messaging.kafka.offset.
	DeliveryOffset interface{ Offset() int64 }
	// DeliveryKey reports messaging.kafka.message.key; ok is false for a
	// record without a key.
	DeliveryKey interface{ MessageKey() (key string, ok bool) }
	// DeliveryGroup reports messaging.consumer.group.name; "" for none.
	DeliveryGroup interface{ ConsumerGroup() string }
)

// recordAttrs returns the span attributes a delivery's handle reports,
// and its consumer group.
func recordAttrs(m *babelqueue.ReceivedMessage) (attrs []attribute.KeyValue, group string) {
	if m == nil || m.Handle == nil {
		return nil, ""
	}
	h := m.Handle
	if p, ok := h.(DeliveryPartition); ok {
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.FormatInt(int64(p.Partition()), 10)))
	}
	if o, ok := h.(DeliveryOffset); ok {
		attrs = append(attrs, semconv.MessagingKafkaOffsetKey.Int64(o.Offset()))
	}
	if k, ok := h.(DeliveryKey); ok {
		if key, ok := k.MessageKey(); ok {
			attrs = append(attrs, semconv.MessagingKafkaMessageKey(key))
		}
	}
	if g, ok := h.(DeliveryGroup); ok {
		if group = g.ConsumerGroup(); group != "" {
			attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
		}
	}
	return attrs, group
}
