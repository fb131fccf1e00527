package otel

import (
	"strconv"
	"unicode/utf8"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// recordAttrs returns the process span attributes of where a delivery was
// read, taken from its ReceivedMessage (the one place a binding states
// them), and its consumer group:
//
//   - messaging.consumer.group.name: Group (the Kafka consumer group, the
//     Pulsar subscription), when not empty;
//   - messaging.destination.partition.id: Partition, for the systems with
//     partitions ("kafka", "pulsar"; a Pulsar topic that is not partitioned
//     is its partition 0);
//   - messaging.kafka.offset and messaging.kafka.message.key (a key that is
//     valid UTF-8; binary keys are not reported): for "kafka" only. Pulsar
//     has no offset attribute in the conventions.
func recordAttrs(system string, m *babelqueue.ReceivedMessage) (attrs []attribute.KeyValue, group string) {
	if m == nil {
		return nil, ""
	}
	switch system {
	case "kafka":
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.FormatInt(int64(m.Partition), 10)),
			semconv.MessagingKafkaOffsetKey.Int64(m.Offset))
		if m.Key != nil && utf8.Valid(m.Key) {
			attrs = append(attrs, semconv.MessagingKafkaMessageKey(string(m.Key)))
		}
	case "pulsar":
		attrs = append(attrs, semconv.MessagingDestinationPartitionID(strconv.FormatInt(int64(m.Partition), 10)))
	}
	if group = m.Group; group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
	}
	return attrs, group
}
