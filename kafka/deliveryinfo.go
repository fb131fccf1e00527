package kafka

import "unicode/utf8"

// A delivery's handle reports where its record came from, for telemetry
// (the otel module's DeliveryPartition, DeliveryOffset, DeliveryKey and
// DeliveryGroup interfaces, matched by method set so that neither module
// requires the other).

// Partition is the partition the record was read from.
func (d *delivery) Partition() int32 { return int32(d.msg.Partition) }

// Offset is the record's offset in its partition.
func (d *delivery) Offset() int64 { return d.msg.Offset }

// MessageKey is the record's key as text; ok is false for a record without
// a key, or with one that is not valid UTF-8 (binary keys are not
// reported).
func (d *delivery) MessageKey() (key string, ok bool) {
	if d.msg.Key == nil || !utf8.Valid(d.msg.Key) {
		return "", false
	}
	return string(d.msg.Key), true
}

// ConsumerGroup is the group the record was read in; "" when the
// transport has none (a record read by a Reader it was given).
func (d *delivery) ConsumerGroup() string { return d.group }
