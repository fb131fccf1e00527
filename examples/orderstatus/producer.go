package orderstatus

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// Record is a record to produce.
type Record struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers []kafka.Header
}

// Producer writes records. Produce returns once the broker stored the record
// (acknowledged by all in-sync replicas), or with an error.
type Producer interface {
	Produce(ctx context.Context, r Record) error
}

// KafkaProducer is the Producer on a kafka-go Writer.
type KafkaProducer struct {
	w *kafka.Writer
}

var _ Producer = (*KafkaProducer)(nil)

// NewKafkaProducer returns a producer writing to the given brokers with
// acknowledgement by all in-sync replicas, placing a record on its topic by
// the murmur2 hash of its key as the Java client does (so an order keeps its
// partition whichever SDK produced it). It owns a kafka-go Writer: Close it.
func NewKafkaProducer(brokers []string) *KafkaProducer {
	return &KafkaProducer{w: &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond,
		MaxAttempts:  3,
	}}
}

// Produce implements Producer.
func (p *KafkaProducer) Produce(ctx context.Context, r Record) error {
	err := p.w.WriteMessages(ctx, kafka.Message{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers})
	if err != nil {
		return fmt.Errorf("producing to %s: %w", r.Topic, err)
	}
	return nil
}

// Close flushes and closes the writer.
func (p *KafkaProducer) Close() error {
	return p.w.Close()
}
